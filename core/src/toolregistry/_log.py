"""structlog events for the whole package (``noun.verb`` names, key-value context).

When the application configured structlog, events go through its configuration; otherwise
they go to the standard library logger ``toolregistry`` (silent until logging is set up), so
a library never prints to stdout on its own -- stdout may be an MCP stdio channel.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

_fallback: Any = None
_configured: Any = None


def _resolve() -> Any:
    global _fallback, _configured
    if structlog.is_configured():
        if _configured is None:
            _configured = structlog.get_logger("toolregistry")
        return _configured
    if _fallback is None:
        _fallback = structlog.wrap_logger(
            logging.getLogger("toolregistry"),
            processors=[
                structlog.stdlib.filter_by_level,
                structlog.processors.add_log_level,
                structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
            ],
            wrapper_class=structlog.stdlib.BoundLogger,
        )
    return _fallback


_stdlib = logging.getLogger("toolregistry")


class _Log:
    """A logger that resolves its backend per event (cheap), honouring late configuration.

    Without a structlog configuration, events below the standard logger's level cost one
    level check (calls on hot paths log at info and debug).
    """

    def debug(self, event: str, **kw: Any) -> None:
        if structlog.is_configured() or _stdlib.isEnabledFor(logging.DEBUG):
            _resolve().debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        if structlog.is_configured() or _stdlib.isEnabledFor(logging.INFO):
            _resolve().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        _resolve().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        _resolve().error(event, **kw)

    def is_debug(self) -> bool:
        """True when debug events would be emitted (skip building costly context otherwise)."""
        return structlog.is_configured() or _stdlib.isEnabledFor(logging.DEBUG)


log = _Log()
