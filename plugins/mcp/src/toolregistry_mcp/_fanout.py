"""A served registry's part in its store's change fan-out: with a ``store`` configured, a served
registry shares its tool-list changes with every other worker and host on that store
(``ToolRegistry.share_changes``) and, when another one's list changed, lists its own MCP
servers again (their tools may have changed for it too: a server behind every worker that
changed its list, a reviewed change accepted elsewhere). Its clients are told by the server
(:func:`toolregistry_mcp.build_server`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import log

if TYPE_CHECKING:
    from toolregistry import ToolRegistry
    from toolregistry.plugin import RemoteChange, SharedChanges

__all__ = ["share"]

_APPLIED_BY_THE_KERNEL = ("disable", "enable")


def share(registry: ToolRegistry) -> SharedChanges | None:
    """Share ``registry``'s changes on its store (``None``: it has none); a store that cannot
    be reached is a :class:`~toolregistry.errors.ConfigError` naming it, password masked."""
    if registry.store_url() is None:
        return None
    first = registry.shared_changes is None
    shared = registry.share_changes()
    if first:
        shared.on_remote(lambda change: _relist(registry, change))
    return shared


def _relist(registry: ToolRegistry, change: RemoteChange) -> None:
    if change.kind in _APPLIED_BY_THE_KERNEL or registry.closed:
        return
    from ._loader import refresh, sources

    if not sources(registry):
        return
    try:
        report = refresh(registry)
    except Exception as exc:  # a server gone: its tools answer errors until it is back
        log.warning("mcp.relist_failed", origin=change.origin,
                    error=f"{type(exc).__name__}: {exc}")
        return
    log.debug("mcp.relisted", origin=change.origin,
              **{k: v for k, v in report.items() if v})
