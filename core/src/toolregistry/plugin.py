"""What plugin authors import: the hook marker, the typed objects hooks return, structured
events, the kernel helpers.

``from toolregistry.plugin import hookimpl, SourceKind, Command, log, import_target, ...``;
for a provider format, ``ProviderFormat`` and what crosses it (``RawCall``, ``Answer``,
``Definition``, ``ChoiceMode``, the ``field`` / ``has_field`` readers), loaded on first use,
and the protocols of the objects some hooks return (``CallObserver``, ``BatchObserver``,
``Runner``, ``OperationObserver``, ``ApprovalQueue`` / ``ApprovalRecord``; ``UNOBSERVED``,
what a call observer returns to sit a call out; ``approval_id_of``, the approval id an item of
a ``resume`` names), ``port_number`` (an argparse type for a command's ``--port``),
``start_call`` (a call made on one thread, awaited on a loop), ``refresh_call_plans`` (the
call plans compiled again: a call observer changed what it needs), ``output_limits`` (the
output-size limits a source should respect for a tool), ``ConfigPath`` (the pydantic type of a
settings option holding a path: relative to the configuration file's folder), and the context
seams
(``operation``, ``outgoing_context`` / ``add_carrier``, ``continuing``, ``add_log_context``);
``value_shape`` (a value as its type and size, for logs that keep no values);
``encode_content`` (a tool's return value as result content: text or parts) and
``stand_in`` (the text that takes the place of a part a provider cannot carry), for formats;
``listen_to_progress`` (a call observer hears the progress its call reports);
the values they exchange are in :mod:`toolregistry.types`; the store seam (``store_url``,
``StoreURL``, ``parse_store_url``, ``open_store``, ``Store``, ``masked_url``,
``sqlite_write_ahead``: a shared database for state that
workers and hosts share; ``SharedChanges`` / ``RemoteChange``: the tool-list changes of
every registry on it, ``registry.share_changes()``), loaded on first use.
Plugins use this module (and the public Tool model) rather than the kernel's private modules.
It is light to import: loading a plugin must stay cheap.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._extensions import (
    AsyncLoader,
    Command,
    CommandContext,
    Exporter,
    Loader,
    SourceKind,
    port_number,
)
from ._log import add_log_context, log
from ._names import normalize_name
from .hookspecs import (
    UNOBSERVED,
    ApprovalQueue,
    ApprovalRecord,
    BatchObserver,
    CallObserver,
    OperationObserver,
    Runner,
    hookimpl,
)

if TYPE_CHECKING:
    from ._calling import calling_loop
    from ._config_path import ConfigPath
    from ._context import add_carrier, continuing, operation, outgoing_context
    from ._execution._async import StartedCall
    from ._fanout import RemoteChange, SharedChanges
    from ._redaction import value_shape
    from ._registry import ToolRegistry
    from ._source_options import SourceOptions
    from ._store import (
        Store,
        StoreURL,
        masked_url,
        open_store,
        parse_store_url,
        sqlite_write_ahead,
        store_url,
    )
    from .formats import (
        Answer,
        ChoiceMode,
        Definition,
        ProviderFormat,
        RawCall,
        field,
        has_field,
    )
    from .formats._parts import stand_in
    from .tool import Tool
    from .types import OutputLimits, approval_id_of, listen_to_progress

__all__ = [
    "UNOBSERVED",
    "Answer",
    "ApprovalQueue",
    "ApprovalRecord",
    "AsyncLoader",
    "BatchObserver",
    "CallObserver",
    "ChoiceMode",
    "Command",
    "CommandContext",
    "ConfigPath",
    "Definition",
    "Exporter",
    "Loader",
    "OperationObserver",
    "ProviderFormat",
    "RawCall",
    "RemoteChange",
    "Runner",
    "SharedChanges",
    "SourceKind",
    "Store",
    "StoreURL",
    "add_carrier",
    "add_log_context",
    "approval_id_of",
    "calling_loop",
    "continuing",
    "encode_content",
    "field",
    "has_field",
    "hookimpl",
    "import_target",
    "lazy_exports",
    "listen_to_progress",
    "log",
    "masked_url",
    "normalize_name",
    "open_store",
    "operation",
    "outgoing_context",
    "output_limits",
    "parse_store_url",
    "port_number",
    "refresh_call_plans",
    "source_options",
    "sqlite_write_ahead",
    "stand_in",
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


def refresh_call_plans(registry: ToolRegistry) -> None:
    """Have ``registry``'s call plans compiled again, each at its tool's next call (the
    per-tool hooks, call observers among them, asked again): for a call observer that now
    needs ``call_started`` after being told of ends only, or the other way. Calls under way
    finish with the plan they started with."""
    registry._forget_plans((), {})


def source_options() -> SourceOptions | None:
    """While a source kind's loader runs: the common source options the kernel applies to
    the tools it registers (``defer``, ``tags``, ``include`` / ``exclude`` the kind does not
    implement itself), or ``None``. A loader that registers more of the source's tools later
    (a server's changed tool list) applies them too: ``options.apply(tools)``."""
    from ._source_options import current

    return current()


def output_limits(registry: ToolRegistry, tool: Tool) -> OutputLimits | None:
    """The output-size limits a source should respect for ``tool``'s results, as the
    installed plugins answer the ``output_limits`` hook (``None``: nobody has an opinion; the
    source applies its own). A source that cuts long results asks this rather than
    looking for the plugin that would keep them whole."""
    return registry.plugins.hooks.output_limits(registry, tool)


def encode_content(value: Any) -> str | list[dict[str, Any]]:
    """A tool's return value as the content of its result, as the kernel encodes it (a
    string, or text, image, audio, resource and resource link parts; docs/execution.md): for
    a source that builds a :class:`~toolregistry.ToolResult` itself."""
    from ._results import encode_content as encode

    return encode(value)


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


GC_PAUSE_MIN = 256
"""Deprecated with :func:`gc_paused`."""


@contextlib.contextmanager
def gc_paused(tools: int) -> Iterator[None]:
    """Deprecated, does nothing: the kernel no longer switches the host's garbage collector
    off, and neither should a plugin (a library leaves the interpreter as it found it).
    Remove the ``with`` block."""
    warnings.warn("toolregistry.plugin.gc_paused is deprecated and does nothing: the "
                  "collector is left as the application set it; remove the with block",
                  DeprecationWarning, stacklevel=3)
    yield


_FORMAT_NAMES = ("Answer", "ChoiceMode", "Definition", "ProviderFormat", "RawCall", "field",
                 "has_field")
_STORE_NAMES = ("Store", "StoreURL", "masked_url", "open_store", "parse_store_url",
                "sqlite_write_ahead", "store_url")
_CONTEXT_NAMES = ("add_carrier", "continuing", "operation", "outgoing_context")
__getattr__ = lazy_exports(__name__, {**dict.fromkeys(_FORMAT_NAMES, "toolregistry.formats"),
                                      **dict.fromkeys(_STORE_NAMES, "toolregistry._store"),
                                      **dict.fromkeys(_CONTEXT_NAMES, "toolregistry._context"),
                                      "calling_loop": "toolregistry._calling",
                                      "value_shape": "toolregistry._redaction",
                                      "ConfigPath": "toolregistry._config_path",
                                      "approval_id_of": "toolregistry.types",
                                      "listen_to_progress": "toolregistry.types",
                                      "stand_in": "toolregistry.formats._parts",
                                      "RemoteChange": "toolregistry._fanout",
                                      "SharedChanges": "toolregistry._fanout"})
