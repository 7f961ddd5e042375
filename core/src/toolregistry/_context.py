"""Context that crosses boundaries: operations other plugins observe, what travels with an
outgoing request (trace headers), what an incoming request brings, what log events carry.

These are the seams a tracing plugin (toolregistry-otel) plugs into without the plugins that
do the work knowing about it: the MCP and OpenAPI plugins announce their operations and ask
for the outgoing context; the MCP server continues an incoming one. With no plugin listening
each costs a tuple check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from ._log import add_log_context, log

if TYPE_CHECKING:
    from ._registry import ToolRegistry

__all__ = ["add_carrier", "add_log_context", "continuing", "operation", "outgoing_context"]

Injector = Callable[[MutableMapping[str, str]], None]
Continuer = Callable[[Mapping[str, str]], contextlib.AbstractContextManager[Any]]
_carriers: tuple[Injector, ...] = ()
_continuers: tuple[Continuer, ...] = ()
_failed: set[int] = set()


def add_carrier(injector: Injector, continuer: Continuer | None = None) -> None:
    """From now on, :func:`outgoing_context` asks ``injector`` to add its entries (e.g. W3C
    ``traceparent`` / ``tracestate`` of the current span) to what outgoing requests carry.

    ``continuer(carrier)``, when given, is the way back: a context manager in which what
    ``carrier`` holds is current. The kernel enters it in its worker processes (process
    isolation) around each call, so it must be a module-level function (it travels by
    reference).

    Process-wide and idempotent (the same function is added once). An injector reads what is
    current in the calling context; an exception is logged once and skipped.
    """
    global _carriers, _continuers
    if injector not in _carriers:
        _carriers = (*_carriers, injector)
    if continuer is not None and continuer not in _continuers:
        _continuers = (*_continuers, continuer)


def carried() -> tuple[dict[str, str], tuple[Continuer, ...]]:
    """What a call shipped to another process takes along from the current context: the
    :func:`outgoing_context` and the continuers that make it current there."""
    if not _continuers:
        return {}, ()
    return outgoing_context(), _continuers


def continued(carrier: Mapping[str, str], continuers: tuple[Continuer, ...]
              ) -> contextlib.ExitStack:
    """The continuers entered with ``carrier`` (in another process); one that fails is
    skipped (logged)."""
    stack = contextlib.ExitStack()
    if carrier:
        for continuer in continuers:
            try:
                stack.enter_context(continuer(carrier))
            except Exception as exc:
                log.warning("continuer.failed", error=f"{type(exc).__name__}: {exc}")
    return stack


def outgoing_context() -> dict[str, str]:
    """What a request to a remote service should carry from the current context: HTTP
    headers for an OpenAPI call, ``_meta`` entries for an MCP ``tools/call``. Empty when no
    plugin added a carrier."""
    out: dict[str, str] = {}
    for injector in _carriers:
        try:
            injector(out)
        except Exception as exc:
            if id(injector) not in _failed:
                _failed.add(id(injector))
                log.warning("carrier.failed", injector=getattr(injector, "__qualname__", "?"),
                            error=f"{type(exc).__name__}: {exc}")
    return out


@contextlib.contextmanager
def operation(registry: ToolRegistry, name: str,
              attributes: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Announce an operation of ``registry`` other than a call -- loading a source, a
    discovery query -- to the plugins observing it (the ``operation_observer`` hook)::

        with operation(registry, "openapi.fetch", {"url.full": url}) as attrs:
            document = fetch(url)
            attrs["http.response.body.size"] = len(document)

    The block gets the attributes to add to; observers hear of the end with them and with
    the exception that ended the block (which propagates unchanged).
    """
    attrs = dict(attributes or {})
    observers = registry._operation_observers()
    if not observers:
        yield attrs
        return
    hooks = registry._hooks
    tokens = hooks.operations_started(observers, name, attrs)
    try:
        yield attrs
    except BaseException as exc:
        hooks.operations_finished(observers, name, attrs, exc, tokens)
        raise
    hooks.operations_finished(observers, name, attrs, None, tokens)


@contextlib.contextmanager
def continuing(registry: ToolRegistry, carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Serve a request inside the context its caller sent (``carrier``: the request's
    ``_meta`` or headers): the plugins' ``incoming_context`` managers are entered around
    the block, so the calls made in it continue the caller's trace."""
    if not carrier or not registry._hooks.has_incoming_context:
        yield
        return
    with contextlib.ExitStack() as stack:
        for manager in registry._hooks.incoming_context(registry, carrier):
            try:
                stack.enter_context(manager)
            except Exception as exc:
                log.warning("incoming_context.failed", error=f"{type(exc).__name__}: {exc}")
        yield
