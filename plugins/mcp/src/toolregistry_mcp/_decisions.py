"""Review decisions that outlive the process: when the registry has a store (the ``store``
option), accepting a tool's change or keeping its accepted version is recorded there with the
accepted definition, so that after a restart the accepted version is what is registered and a
kept change is still kept, whatever the server serves now. Without a store, decisions last as
long as the process."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry.plugin import log

if TYPE_CHECKING:
    import mcp_types

    from toolregistry import ToolRegistry
    from toolregistry.plugin import Store

    from ._source import MCPSource, _Registered

__all__ = ["Decision", "registered_version", "restore", "save", "served_again"]

_TABLE = "mcp_reviews"
_SCHEMA = ("mcp-reviews", 1, (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (registry TEXT NOT NULL, server TEXT NOT NULL, "
    "tool TEXT NOT NULL, accepted_hash TEXT NOT NULL, accepted TEXT NOT NULL, kept TEXT, "
    "PRIMARY KEY (registry, server, tool))",
))
_STATE_KEY = "review_store"
_lock = threading.Lock()


@frozen
class Decision:
    """What was decided for one tool of one server: the accepted definition (as the server
    sent it) and its version, and a newer version kept out (``None``: none)."""

    accepted: mcp_types.Tool
    accepted_hash: str
    kept: str | None


def _store(registry: ToolRegistry) -> tuple[Store, dict[str, dict[str, Decision]]] | None:
    """The registry's store (opened once, closed with the registry) and the decisions read
    from it per server; ``None`` without a store."""
    state = registry.plugin_state("mcp")
    with _lock:
        if _STATE_KEY not in state:
            url = registry.store_url()
            opened = None
            if url is not None:
                from ._storage import open_for

                opened = open_for(registry, url, _SCHEMA)
            state[_STATE_KEY] = None if opened is None else (opened, {})
        found: tuple[Store, dict[str, dict[str, Decision]]] | None = state[_STATE_KEY]
        return found


def _decisions(registry: ToolRegistry, server: str) -> dict[str, Decision]:
    """The recorded decisions of ``server``'s tools (by the server's own tool names)."""
    found = _store(registry)
    if found is None:
        return {}
    import mcp_types

    store, cache = found
    if server in cache:
        return cache[server]
    with store.transaction() as tx:
        rows = list(tx.execute(f"SELECT tool, accepted_hash, accepted, kept FROM {_TABLE} "
                               "WHERE registry = ? AND server = ?", (registry.name, server)))
    out: dict[str, Decision] = {}
    for tool, accepted_hash, accepted, kept in rows:
        try:
            definition = mcp_types.Tool.model_validate(json.loads(accepted))
        except ValueError as exc:
            log.warning("mcp.review_unreadable", server=server, tool=tool, error=str(exc))
            continue
        out[tool] = Decision(definition, accepted_hash, kept)
    cache[server] = out
    return out


def restore(registry: ToolRegistry, server: str, tool: str) -> Decision | None:
    """The decision recorded for ``server``'s ``tool`` before this process, if any."""
    return _decisions(registry, server).get(tool)


def save(registry: ToolRegistry, server: str, tool: str, accepted: mcp_types.Tool | None,
         accepted_hash: str, kept: str | None) -> None:
    """Record a review of ``server``'s ``tool`` (no-op without a store; ``accepted``:
    ``None`` when the accepted definition is not known, then nothing is recorded)."""
    found = _store(registry)
    if found is None or accepted is None:
        return
    store, cache = found
    data: dict[str, Any] = accepted.model_dump(mode="json", by_alias=True, exclude_none=True)
    with store.transaction(lock=_TABLE) as tx:
        tx.execute(f"INSERT INTO {_TABLE} (registry, server, tool, accepted_hash, accepted, "
                   "kept) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (registry, server, tool) DO "
                   "UPDATE SET accepted_hash = excluded.accepted_hash, "
                   "accepted = excluded.accepted, kept = excluded.kept",
                   (registry.name, server, tool, accepted_hash,
                    json.dumps(data, ensure_ascii=False), kept))
    cache.setdefault(server, {})[tool] = Decision(accepted, accepted_hash, kept)


def registered_version(registry: ToolRegistry, server: str,
                       tool: mcp_types.Tool) -> mcp_types.Tool:
    """The version of ``tool`` to register: the one accepted before this process when the
    server now serves another, else ``tool``."""
    from ._source import _fingerprint

    decided = restore(registry, server, tool.name)
    if decided is None or decided.accepted_hash == _fingerprint(tool):
        return tool
    return decided.accepted


def served_again(source: MCPSource, entry: _Registered, served: mcp_types.Tool,
                 report: dict[str, list[str]]) -> None:
    """A tool registered at its accepted version (:func:`registered_version`) whose server
    serves ``served``: that one is pending review again, kept out if it was before."""
    registry = source.registry
    if registry is None:
        return
    decided = restore(registry, source.client.display, served.name)
    entry.kept = None if decided is None else decided.kept
    source._review(registry, source.screener(), entry, served, None, report)
