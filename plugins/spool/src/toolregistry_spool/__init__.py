"""toolregistry-spool: long tool outputs go to a private spool file; the model gets the head
and tail, a handle, and the ``read_tool_output`` tool to page through the rest.

Tools opt in with ``ToolMetadata(too_long_to_file=True)`` (or every tool through
``[tool.toolregistry.plugins.spool] all-tools = true``). See ``docs/spool.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._settings import DEFAULT_READER_NAME, SpoolSettings
    from ._spool import Spooler, spool_directory
    from ._store import HANDLE_PATTERN, SpoolError
    from ._tokens import estimate_tokens

# Loaded on first use, so that loading the plugin (every registry does) stays cheap.
_LAZY = {
    "DEFAULT_READER_NAME": "._settings",
    "SpoolSettings": "._settings",
    "spool_directory": "._spool",
    "HANDLE_PATTERN": "._store",
    "SpoolError": "._store",
    "estimate_tokens": "._tokens",
}


__getattr__ = lazy_exports(__name__, _LAZY)


def get_spooler(registry: ToolRegistry) -> Spooler:
    """The registry's spooler (created on first use)."""
    from ._spool import get_spooler as _get

    return _get(registry)

__all__ = [
    "DEFAULT_READER_NAME",
    "HANDLE_PATTERN",
    "SpoolError",
    "SpoolSettings",
    "configure",
    "estimate_tokens",
    "read_output",
    "reader_name",
    "set_token_counter",
    "spool_directory",
]


def configure(registry: ToolRegistry, **options: Any) -> SpoolSettings:
    """Override ``[tool.toolregistry.plugins.spool]`` options for ``registry`` (same names,
    underscores or dashes): ``configure(registry, threshold_tokens=8000, all_tools=True)``.

    ``directory`` can change only before the first output is spooled. Returns the settings
    now in force. With ``all_tools`` or ``reader`` turned on, the reader tool is registered
    at once when a tool already registered may spool.
    """
    spooler = get_spooler(registry)
    settings = spooler.configure(options)
    if settings.reader and any(spooler.opted_in(t) for t in registry.get_tools(True)):
        spooler.ensure_reader(registry)
    return settings


def set_token_counter(registry: ToolRegistry, counter: Callable[[str], int] | None) -> None:
    """Count tokens exactly with ``counter(text) -> int`` (e.g. a tiktoken encoder's
    ``lambda t: len(enc.encode(t))``) instead of the fast estimate; ``None`` restores it."""
    if counter is not None and not callable(counter):
        raise TypeError(f"set_token_counter needs a function(text) -> int, got {counter!r}")
    get_spooler(registry).counter = counter


def reader_name(registry: ToolRegistry) -> str | None:
    """The name the reader tool is registered under in ``registry`` (``None`` if it is not)."""
    spooler = get_spooler(registry)
    return spooler.reader_name if spooler.reader_present(registry) else None


def read_output(registry: ToolRegistry, handle: str, offset: int = 0, limit: int = 200,
                tail: int | None = None, grep: str | None = None) -> str:
    """What the reader tool would answer, for applications (same checks, same limits)."""
    return get_spooler(registry).read(handle, offset, limit, tail, grep)
