"""The ``discover_tools`` tool itself (loaded when discovery is first enabled, with the
kernel's Tool model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry import Tool, ToolMetadata, ToolTag
from toolregistry.tool import SEARCH_TOOL_TAG, Provenance
from toolregistry.types import ToolContext

from ._plugin import DISCOVER_TOOLS_DESCRIPTION, DISCOVER_TOOLS_NAME, MAX_TOP_K, PLUGIN_NAME

if TYPE_CHECKING:
    from ._discovery import ToolDiscoveryTool

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "A tool name, or the capability you need in a few words.",
        },
        "top_k": {
            "type": "integer",
            "description": f"How many tools to return (1-{MAX_TOP_K}).",
            "default": 5,
            "minimum": 1,
            "maximum": MAX_TOP_K,
        },
    },
    "required": ["query"],
}


def _format_of(ctx: ToolContext | None) -> str:
    fmt = ctx.call.format if ctx is not None else "registry"
    return "openai-chat" if fmt in ("registry", "", None) else fmt


def make_discover_tool(discoverer: ToolDiscoveryTool) -> Tool:
    """The ``discover_tools`` tool a model calls; schemas come back in the caller's format."""

    def discover_tools(query: str, top_k: int = 5, ctx: ToolContext | None = None
                       ) -> list[dict[str, Any]]:
        k = max(1, min(int(top_k), MAX_TOP_K))
        found = discoverer.discover(query, top_k=k, api_format=_format_of(ctx))
        # The model now has these definitions: later get_schemas(include_deferred=False)
        # appends them, and calls to them count as discovered.
        discoverer.registry.reveal_tools(
            r["name"] for r in found if r["deferred"] and "schema" in r)
        return found

    return Tool(
        name=DISCOVER_TOOLS_NAME,
        description=DISCOVER_TOOLS_DESCRIPTION,
        parameters=_PARAMETERS,
        callable=discover_tools,
        metadata=ToolMetadata(
            tags={ToolTag.READ_ONLY, ToolTag.IDEMPOTENT},
            custom_tags={SEARCH_TOOL_TAG},
            read_only_hint=True,
            idempotent_hint=True,
            open_world_hint=False,
        ),
        provenance=Provenance("plugin", "toolregistry_discovery", DISCOVER_TOOLS_NAME,
                              plugin=PLUGIN_NAME),
        context_param="ctx",
    )
