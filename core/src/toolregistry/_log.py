"""structlog events for the whole package (``noun.verb`` names, key-value context).

When the application configured structlog, events go through its configuration; otherwise
they go to the standard library logger ``toolregistry`` (silent until logging is set up), so
a library never prints to stdout on its own -- stdout may be an MCP stdio channel.

structlog itself is imported only when an event is emitted: an application that configured it
has imported it already, and otherwise an event below the logger's level costs one level
check and no import. The standard library's ``logging`` is imported only once something else
imported it: until then nobody can have configured it, and an event has nowhere to go.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

# logging's level numbers, fixed by the standard library.
_DEBUG, _INFO, _WARNING, _ERROR = 10, 20, 30, 40

_stdlib: Any = None
_fallback: Any = None
_configured: Any = None


def _structlog_configured() -> bool:
    module = sys.modules.get("structlog")
    return module is not None and bool(module.is_configured())


def _stdlib_logger() -> Any:
    global _stdlib
    if _stdlib is None:
        import logging

        logger = logging.getLogger("toolregistry")
        # A library stays quiet until the application sets up logging (no "last resort"
        # output).
        logger.addHandler(logging.NullHandler())
        _stdlib = logger
    return _stdlib


def _resolve() -> Any:
    global _fallback, _configured
    import structlog

    if structlog.is_configured():
        if _configured is None:
            _configured = structlog.get_logger("toolregistry")
        return _configured
    if _fallback is None:
        _fallback = structlog.wrap_logger(
            _stdlib_logger(),
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
    if _structlog_configured():
        return True
    logger = _stdlib
    if logger is None:
        if "logging" not in sys.modules:
            return False
        logger = _stdlib_logger()
    return bool(logger.isEnabledFor(level))


class _Log:
    """A logger that resolves its backend per event, honouring late configuration."""

    def debug(self, event: str, **kw: Any) -> None:
        if _enabled(_DEBUG):
            _resolve().debug(event, **(_with_context(kw) if _context else kw))

    def info(self, event: str, **kw: Any) -> None:
        if _enabled(_INFO):
            _resolve().info(event, **(_with_context(kw) if _context else kw))

    def warning(self, event: str, **kw: Any) -> None:
        if _enabled(_WARNING):
            _resolve().warning(event, **(_with_context(kw) if _context else kw))

    def error(self, event: str, **kw: Any) -> None:
        if _enabled(_ERROR):
            _resolve().error(event, **(_with_context(kw) if _context else kw))

    def is_debug(self) -> bool:
        """True when debug events would be emitted (skip building costly context otherwise)."""
        return _enabled(_DEBUG)

    def is_info(self) -> bool:
        """True when info events would be emitted (an event on a hot path may skip its
        arguments otherwise)."""
        return _enabled(_INFO)


log = _Log()
