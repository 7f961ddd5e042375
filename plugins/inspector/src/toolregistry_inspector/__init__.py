"""toolregistry-inspector: an execution log of the calls a registry runs, and a local web
UI over the registry.

``execution_log(registry)`` is the registry's log (a ring buffer of the last calls, optionally
written to an SQLite file that ``toolregistry log`` and ``query_log`` read), recording from
its first use unless configured to record from the start;
``[tool.toolregistry.plugins.inspector]`` configures it. ``serve(registry)`` (or
``toolregistry inspect``) opens the web UI on loopback; ``create_app(registry)`` is its ASGI
app. See ``docs/inspector.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._log import ExecutionLog, LogEntry, redact
    from ._reads import query_log, query_running
    from ._server import InspectorServer, serve
    from ._settings import InspectorSettings
    from ._web import create_app

_LAZY = {
    "ExecutionLog": "._log",
    "LogEntry": "._log",
    "query_log": "._reads",
    "query_running": "._reads",
    "redact": "._log",
    "InspectorSettings": "._settings",
    "InspectorServer": "._server",
    "serve": "._server",
    "create_app": "._web",
}

__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "ExecutionLog",
    "InspectorServer",
    "InspectorSettings",
    "LogEntry",
    "create_app",
    "execution_log",
    "query_log",
    "query_running",
    "redact",
    "serve",
]


def execution_log(registry: ToolRegistry) -> ExecutionLog:
    """The execution log of ``registry`` (made on first use from its configuration): asking
    for it starts it, and every call that ends from then on is logged.

    Raises ``ValueError`` when the configuration turned the log off (``log = false``).
    """
    from ._log import get_log

    found = get_log(registry)
    if found is None:
        raise ValueError(f"the execution log of registry {registry.name!r} is off "
                         "([tool.toolregistry.plugins.inspector] log = false)")
    return found
