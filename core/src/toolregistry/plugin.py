"""What plugin authors import: the hook marker, the typed objects hooks return, structured
events, the kernel helpers.

``from toolregistry.plugin import hookimpl, SourceKind, Command, log, import_target, ...``;
for a provider format, ``ProviderFormat`` and what crosses it (``RawCall``, ``Answer``,
``Definition``, ``ChoiceMode``, the ``field`` / ``has_field`` readers), loaded on first use,
and the protocols of the objects some hooks return (``CallObserver``, ``BatchObserver``,
``Runner``, ``OperationObserver``; ``UNOBSERVED``, what a call observer returns to sit a call
out), ``port_number`` (an argparse type for a command's ``--port``), ``start_call`` (a call
made on one thread, awaited on a loop), ``gc_paused`` (the
cyclic collector paused around work on many tools, as the kernel does; ``GC_PAUSE_MIN``
tools at least), and the context seams
(``operation``, ``outgoing_context`` / ``add_carrier``, ``continuing``, ``add_log_context``);
``value_shape`` (a value as its type and size, for logs that keep no values);
the values they exchange are in :mod:`toolregistry.types`; the store seam (``store_url``,
``StoreURL``, ``parse_store_url``, ``open_store``, ``Store``, ``masked_url``: a shared database for state that
workers and hosts share), loaded on first use.
Plugins use this module (and the public Tool model) rather than the kernel's private modules.
It is light to import: loading a plugin must stay cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._calling import calling_loop
from ._context import add_carrier, add_log_context, continuing, operation, outgoing_context
from ._extensions import (
    AsyncLoader,
    Command,
    CommandContext,
    Exporter,
    Loader,
    SourceKind,
    port_number,
)
from ._gc import PAUSE_MIN as GC_PAUSE_MIN
from ._gc import paused as gc_paused
from ._log import log
from ._names import normalize_name
from ._redaction import value_shape
from .hookspecs import (
    UNOBSERVED,
    BatchObserver,
    CallObserver,
    OperationObserver,
    Runner,
    hookimpl,
)

if TYPE_CHECKING:
    from ._execution._async import StartedCall
    from ._registry import ToolRegistry
    from ._store import Store, StoreURL, masked_url, open_store, parse_store_url, store_url
    from .formats import (
        Answer,
        ChoiceMode,
        Definition,
        ProviderFormat,
        RawCall,
        field,
        has_field,
    )

__all__ = [
    "GC_PAUSE_MIN",
    "UNOBSERVED",
    "Answer",
    "AsyncLoader",
    "BatchObserver",
    "CallObserver",
    "ChoiceMode",
    "Command",
    "CommandContext",
    "Definition",
    "Exporter",
    "Loader",
    "OperationObserver",
    "ProviderFormat",
    "RawCall",
    "Runner",
    "SourceKind",
    "Store",
    "StoreURL",
    "add_carrier",
    "add_log_context",
    "calling_loop",
    "continuing",
    "field",
    "gc_paused",
    "has_field",
    "hookimpl",
    "import_target",
    "lazy_exports",
    "log",
    "masked_url",
    "normalize_name",
    "open_store",
    "operation",
    "outgoing_context",
    "parse_store_url",
    "port_number",
    "start_call",
    "store_url",
    "value_shape",
]


def start_call(registry: ToolRegistry, name: str,
               arguments: Mapping[str, Any] | str | None = None, *,
               context: Mapping[str, Any] | None = None, timeout: float | None = None,
               call_id: str | None = None) -> StartedCall:
    """``registry.ainvoke(name, arguments, ...)``, made now on this thread (which need not run
    an event loop) and awaited later on a loop: ``await start_call(...)`` is the call's
    :class:`~toolregistry.ToolResult`, through the same pipeline. The call is prepared here
    (lookup, hooks, validation, authorization), and a sync tool starts on the worker pool at
    once, so a caller that learns of calls on one thread and answers them on another loop's
    (a sandbox's I/O thread) saves the loop's wake-up when the tool ends first. Await the
    result once, or call its ``cancel()`` when it will not be awaited."""
    return registry._get_executor().start(name, arguments, context=context, timeout=timeout,
                                          call_id=call_id)


def import_target(target: str, where: str) -> Any:
    """Resolve ``pkg.mod:attr.sub`` (or a plain module path); errors name ``where``."""
    from ._sources import import_target as resolve

    return resolve(target, where)


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``exports[name]`` (a module path
    relative to the package) on first use, so that importing the package stays cheap::

        __getattr__ = lazy_exports(__name__, {"Client": "._client"})
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__


_FORMAT_NAMES = ("Answer", "ChoiceMode", "Definition", "ProviderFormat", "RawCall", "field",
                 "has_field")
_STORE_NAMES = ("Store", "StoreURL", "masked_url", "open_store", "parse_store_url",
                "store_url")
__getattr__ = lazy_exports(__name__, {**dict.fromkeys(_FORMAT_NAMES, "toolregistry.formats"),
                                      **dict.fromkeys(_STORE_NAMES, "toolregistry._store")})
