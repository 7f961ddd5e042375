"""structlog events for the whole package (``noun.verb`` names, key-value context).

When the application configured structlog, events go through its configuration; otherwise
they go to the standard library logger ``toolregistry`` (silent until logging is set up), so
a library never prints to stdout on its own -- stdout may be an MCP stdio channel.

structlog itself is imported only when an event is emitted: an application that configured it
has imported it already, and otherwise an event below the logger's level costs one level
check and no import.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

_stdlib = logging.getLogger("toolregistry")
# A library stays quiet until the application sets up logging (no "last resort" output).
_stdlib.addHandler(logging.NullHandler())
_fallback: Any = None
_configured: Any = None


def _structlog_configured() -> bool:
    module = sys.modules.get("structlog")
    return module is not None and bool(module.is_configured())


def _resolve() -> Any:
    global _fallback, _configured
    import structlog

    if structlog.is_configured():
        if _configured is None:
            _configured = structlog.get_logger("toolregistry")
        return _configured
    if _fallback is None:
        _fallback = structlog.wrap_logger(
            _stdlib,
            processors=[
                structlog.stdlib.filter_by_level,
                structlog.processors.add_log_level,
                structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
            ],
            wrapper_class=structlog.stdlib.BoundLogger,
        )
    return _fallback


_context: tuple[Callable[[], Mapping[str, Any]], ...] = ()


def add_log_context(provider: Callable[[], Mapping[str, Any]]) -> None:
    """From now on every event also carries what ``provider()`` returns (e.g. the current
    ``trace_id`` / ``span_id``; empty when there is none). Process-wide, idempotent; a
    provider that raises adds nothing."""
    global _context
    if provider not in _context:
        _context = (*_context, provider)


def _with_context(kw: dict[str, Any]) -> dict[str, Any]:
    for provider in _context:
        try:
            extra = provider()
        except Exception:
            continue
        for key, value in extra.items():
            kw.setdefault(key, value)
    return kw


def _enabled(level: int) -> bool:
    return _structlog_configured() or _stdlib.isEnabledFor(level)


class _Log:
    """A logger that resolves its backend per event, honouring late configuration."""

    def debug(self, event: str, **kw: Any) -> None:
        if _enabled(logging.DEBUG):
            _resolve().debug(event, **(_with_context(kw) if _context else kw))

    def info(self, event: str, **kw: Any) -> None:
        if _enabled(logging.INFO):
            _resolve().info(event, **(_with_context(kw) if _context else kw))

    def warning(self, event: str, **kw: Any) -> None:
        if _enabled(logging.WARNING):
            _resolve().warning(event, **(_with_context(kw) if _context else kw))

    def error(self, event: str, **kw: Any) -> None:
        if _enabled(logging.ERROR):
            _resolve().error(event, **(_with_context(kw) if _context else kw))

    def is_debug(self) -> bool:
        """True when debug events would be emitted (skip building costly context otherwise)."""
        return _enabled(logging.DEBUG)

    def is_info(self) -> bool:
        """True when info events would be emitted (an event on a hot path may skip its
        arguments otherwise)."""
        return _enabled(logging.INFO)


log = _Log()
