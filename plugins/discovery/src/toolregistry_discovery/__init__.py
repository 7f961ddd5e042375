"""toolregistry-discovery: find tools by exact name or by BM25F search, and reveal deferred
tools on demand (``registry.enable_tool_discovery()`` registers ``discover_tools``)."""

from __future__ import annotations

from ._discovery import DISCOVER_TOOLS_NAME, ToolDiscoveryTool
from ._index import DEFAULT_FIELD_WEIGHTS, BM25FIndex, Hit

__all__ = [
    "DEFAULT_FIELD_WEIGHTS",
    "DISCOVER_TOOLS_NAME",
    "BM25FIndex",
    "Hit",
    "ToolDiscoveryTool",
]
