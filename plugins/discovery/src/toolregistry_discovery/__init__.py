"""toolregistry-discovery: find tools by exact name or by BM25F search (fused with dense
embeddings with the ``semantic`` extra), and reveal deferred tools on demand
(``registry.enable_tool_discovery()`` registers ``discover_tools``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from ._discovery import DISCOVER_TOOLS_NAME, ToolDiscoveryTool
    from ._embedders import WordLlamaEmbedder
    from ._index import DEFAULT_FIELD_WEIGHTS, BM25FIndex, Hit
    from ._multilingual import MultilingualEmbedder
    from ._semantic import SemanticOptions

# numpy and the index load on first use, so that loading the plugin stays cheap.
_LAZY = {
    "DISCOVER_TOOLS_NAME": "._discovery",
    "ToolDiscoveryTool": "._discovery",
    "DEFAULT_FIELD_WEIGHTS": "._index",
    "BM25FIndex": "._index",
    "Hit": "._index",
    "MultilingualEmbedder": "._multilingual",
    "SemanticOptions": "._semantic",
    "WordLlamaEmbedder": "._embedders",
}


__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "DEFAULT_FIELD_WEIGHTS",
    "DISCOVER_TOOLS_NAME",
    "BM25FIndex",
    "Hit",
    "MultilingualEmbedder",
    "SemanticOptions",
    "ToolDiscoveryTool",
    "WordLlamaEmbedder",
]
