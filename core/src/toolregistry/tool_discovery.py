"""``from toolregistry.tool_discovery import ToolDiscoveryTool`` (provided by toolregistry-discovery)."""

from __future__ import annotations

from typing import Any

from .errors import MissingPluginError

__all__ = ["ToolDiscoveryTool"]  # noqa: F822 - provided lazily by __getattr__


def __getattr__(name: str) -> Any:
    if name != "ToolDiscoveryTool":
        raise AttributeError(f"module 'toolregistry.tool_discovery' has no attribute {name!r}")
    from ._plugins import get_host

    host = get_host()
    if not host.is_loaded("discovery"):
        host.require("discovery", "tool_discovery")
    try:
        from toolregistry_discovery import ToolDiscoveryTool
    except ImportError as exc:
        raise MissingPluginError("ToolDiscoveryTool", "discovery",
                                 "toolregistry-discovery") from exc
    return ToolDiscoveryTool
