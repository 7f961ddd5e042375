"""``mcp``: tool definitions as the Model Context Protocol lists them (``tools/list``).

Owns: the ``{name, description, inputSchema}`` envelope with the tool's ``title``, behaviour
``annotations`` (read-only, destructive, idempotent, open-world hints) and ``outputSchema``.
MCP clients call tools with ``{name, arguments}``, which the kernel reads as a registry call;
results and tool choice are the client's business, so this format has neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._base import Definition, ProviderFormat

if TYPE_CHECKING:
    from toolregistry.tool import Tool

__all__ = ["Mcp"]


class Mcp(ProviderFormat):
    """Model Context Protocol tool listings."""

    name = "mcp"

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        definition: dict[str, Any] = {"name": tool.name, "description": tool.description,
                                      "inputSchema": parameters}
        m = tool.metadata
        if m.title:
            definition["title"] = m.title
        hints = {
            "readOnlyHint": m.read_only_hint,
            "destructiveHint": m.destructive_hint,
            "idempotentHint": m.idempotent_hint,
            "openWorldHint": m.open_world_hint,
        }
        annotations: dict[str, Any] = {k: v for k, v in hints.items() if v is not None}
        if m.title:
            annotations["title"] = m.title
        if annotations:
            definition["annotations"] = annotations
        if tool.output_schema:
            definition["outputSchema"] = tool.output_schema
        return definition

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        return Definition(definition["name"], definition.get("description"),
                          definition.get("inputSchema"))
