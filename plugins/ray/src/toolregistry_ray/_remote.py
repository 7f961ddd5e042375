"""What runs inside a Ray worker: load a tool's function once, rebuild its ``ToolContext``,
enter what the caller's context carried (trace context, registered context variables), run
it (an async tool on a fresh event loop) and return its value.

Kept free of Ray and of the rest of the plugin so that a worker imports little.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any

# Functions already loaded in this worker, by the key the driver gave them (a worker serves
# many calls; loading, which may unpickle a whole closure, happens once per tool).
_LOADED: dict[str, Callable[..., Any]] = {}


class FunctionLoadError(Exception):
    """A tool's function could not be loaded in the worker (its module is missing there, or
    its pickled code does not unpickle)."""


# The worker's context variables for the keys the driver uses (see ``variable``).
_VARIABLES: dict[str, contextvars.ContextVar[Any]] = {}


def variable(key: str) -> contextvars.ContextVar[Any]:
    """The worker's context variable for ``key``: the module-level variable its import path
    ``module:attr`` names when that imports here, else a stand-in made once per key. A tool
    shipped by value refers to a carried variable through this too (the driver pickles the
    variable as this call), so the tool and the carried value always meet on one object."""
    found = _VARIABLES.get(key)
    if found is None:
        found = _VARIABLES.setdefault(key, _lookup(key))
    return found


def _lookup(key: str) -> contextvars.ContextVar[Any]:
    module, colon, attr = key.partition(":")
    if colon:
        try:
            found: Any = importlib.import_module(module)
            for part in attr.split("."):
                found = getattr(found, part)
        except Exception:
            found = None
        if isinstance(found, contextvars.ContextVar):
            return found
    return contextvars.ContextVar(key)


class Carried:
    """What crosses from the caller's context: ``carrier`` (what outgoing requests carry:
    W3C trace context with the otel plugin) and ``values`` of the context variables
    registered for carrying, by key."""

    __slots__ = ("carrier", "values")

    def __init__(self, carrier: Mapping[str, str], values: tuple[tuple[str, Any], ...]) -> None:
        self.carrier = dict(carrier)
        self.values = values

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.carrier, self.values)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.carrier, self.values = state

    def context(self) -> contextvars.Context:
        """A copy of the worker's context with the carried values set (the call runs in it,
        so nothing stays behind for the worker's next task)."""
        context = contextvars.copy_context()
        context.run(self._enter)
        return context

    def _enter(self) -> None:
        for key, value in self.values:
            variable(key).set(value)
        if self.carrier:
            try:
                from opentelemetry import context as otel_context
                from opentelemetry import propagate
            except ImportError:  # no OpenTelemetry in the worker: nothing to continue
                return
            otel_context.attach(propagate.extract(self.carrier))


class ContextSpec:
    """Stands in for the call's ``ToolContext`` on the way to the worker, which rebuilds one
    (same call id, name, arguments and application values; the time left before the deadline
    on the worker's own clock; no registry, no progress reporter)."""

    __slots__ = ("arguments", "call_id", "name", "remaining", "values")

    def __init__(self, name: str, call_id: str | None, arguments: Mapping[str, Any] | None,
                 values: Mapping[str, Any], remaining: float | None) -> None:
        self.name = name
        self.call_id = call_id
        self.arguments = dict(arguments or {})
        self.values = dict(values)
        self.remaining = remaining

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.name, self.call_id, self.arguments, self.values, self.remaining)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.name, self.call_id, self.arguments, self.values, self.remaining = state

    def build(self) -> Any:
        from toolregistry.types import ToolCall, ToolContext

        call = ToolCall(self.name, self.arguments, self.call_id)
        deadline = None if self.remaining is None else time.monotonic() + self.remaining
        return ToolContext(registry=None, call=call, values=self.values, deadline=deadline,
                           progress=None)


def _load(payload: bytes | tuple[str, str]) -> Callable[..., Any]:
    try:
        if isinstance(payload, tuple):
            module, qualname = payload
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            return obj  # type: ignore[no-any-return]
        from ray import cloudpickle

        return cloudpickle.loads(payload)  # type: ignore[no-any-return]
    except Exception as exc:
        where = f"{payload[0]}.{payload[1]}" if isinstance(payload, tuple) else "its pickled code"
        raise FunctionLoadError(f"{type(exc).__name__}: {exc} (loading {where})") from None


def run(key: str, payload: bytes | tuple[str, str], is_async: bool, args: tuple[Any, ...],
        kwargs: dict[str, Any], carried: Carried | None = None) -> Any:
    """The body of every tool task: ``fn(*args, **kwargs)`` for the tool ``key`` names, in
    the context ``carried`` rebuilds."""
    fn = _LOADED.get(key)
    if fn is None:
        fn = _LOADED[key] = _load(payload)
    if any(type(a) is ContextSpec for a in args):
        args = tuple(a.build() if type(a) is ContextSpec else a for a in args)
    for name, value in kwargs.items():
        if type(value) is ContextSpec:
            kwargs = {**kwargs, name: value.build()}
    if carried is not None:
        context = carried.context()
        if is_async:  # the loop's task copies the context current at asyncio.run
            return context.run(asyncio.run, fn(*args, **kwargs))
        return context.run(fn, *args, **kwargs)
    if is_async:
        return asyncio.run(fn(*args, **kwargs))
    return fn(*args, **kwargs)
