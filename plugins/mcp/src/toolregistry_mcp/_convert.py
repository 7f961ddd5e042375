"""MCP results into toolregistry results, and registry results into MCP results."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from toolregistry import Image
from toolregistry.errors import ToolCallError

if TYPE_CHECKING:
    import mcp_types

    from toolregistry import ToolResult

__all__ = ["from_call_result", "to_call_result", "truncate"]

_IMAGE_PREFIX = "image/"


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _resource_part(resource: Any) -> str | Image:
    uri = str(resource.uri)
    mime = resource.mime_type or "application/octet-stream"
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri} ({mime})]\n{text}"
    blob = getattr(resource, "blob", "") or ""
    if mime.startswith(_IMAGE_PREFIX):
        raw = _decode(blob)
        if raw is not None:
            return Image.from_bytes(raw, mime)
    size = len(blob) * 3 // 4
    return f"[binary resource {uri} ({mime}, about {size} bytes) not shown]"


def from_call_result(result: mcp_types.CallToolResult, *, server: str, tool: str) -> Any:
    """What an MCP tool returned, as a toolregistry tool return value.

    ``isError`` raises :class:`~toolregistry.errors.ToolCallError` (kind ``remote``) with the
    server's text. Text, images, audio, embedded resources and resource links become a
    string, or a list of strings and :class:`~toolregistry.Image` for multimodal results;
    ``structuredContent`` is used (as JSON) when the server sent no content blocks.
    """
    parts: list[str | Image] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind == "image":
            raw = _decode(block.data)  # type: ignore[union-attr]
            mime = block.mime_type or "image/png"  # type: ignore[union-attr]
            if raw is None:
                parts.append(f"[image ({mime}) with invalid base64 data not shown]")
            else:
                parts.append(Image.from_bytes(raw, mime))
        elif kind == "audio":
            mime = block.mime_type or "audio/*"  # type: ignore[union-attr]
            size = len(block.data) * 3 // 4  # type: ignore[union-attr]
            # No provider accepts audio in a tool result yet; say it was there.
            parts.append(f"[audio ({mime}, about {size} bytes) not shown]")
        elif kind == "resource":
            parts.append(_resource_part(block.resource))  # type: ignore[union-attr]
        elif kind == "resource_link":
            name = getattr(block, "name", "") or ""
            desc = getattr(block, "description", None)
            line = f"[resource link {block.uri}" + (f" {name!r}" if name else "")  # type: ignore[union-attr]
            parts.append(line + (f": {desc}]" if desc else "]"))
        else:
            parts.append(json.dumps(block.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True), ensure_ascii=False))
    if result.is_error:
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        raise ToolCallError(
            f"MCP tool {tool!r} on {server} reported an error: {text or '(no message)'}",
            kind="remote",
        )
    if not parts:
        if result.structured_content is not None:
            return json.dumps(result.structured_content, ensure_ascii=False)
        return ""
    if all(isinstance(p, str) for p in parts):
        return "\n".join(parts)  # type: ignore[arg-type]
    return parts


def truncate(value: Any, limit: int) -> Any:
    """Cut the text of a result at ``limit`` characters, with a marker saying so."""
    if limit <= 0:
        return value
    if isinstance(value, str):
        return _cut(value, limit)
    if isinstance(value, list):
        out: list[Any] = []
        budget = limit
        for part in value:
            if isinstance(part, str):
                out.append(_cut(part, max(budget, 0)) if len(part) > budget else part)
                budget -= len(part)
            else:
                out.append(part)
        return out
    return value


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n\n[truncated by toolregistry-mcp: the result had {len(text):,} characters and "
        f"only the first {limit:,} are shown. Raise max-result-chars in "
        "[tool.toolregistry.plugins.mcp], or install toolregistry-spool to keep long results "
        "in a file]"
    )


def to_call_result(result: ToolResult) -> mcp_types.CallToolResult:
    """A registry :class:`~toolregistry.ToolResult` as an MCP ``CallToolResult``."""
    import mcp_types as types

    blocks: list[Any] = []
    if isinstance(result.content, str):
        blocks.append(types.TextContent(type="text", text=result.content))
    else:
        for part in result.content:
            if part.get("type") == "image":
                image: Image = part["image"]
                data = image.base64()
                if data is None:  # a remote URL: MCP has no image-by-URL block
                    blocks.append(types.TextContent(type="text", text=f"[image] {image.as_url()}"))
                else:
                    blocks.append(types.ImageContent(type="image", data=data,
                                                     mime_type=image.media_type))
            else:
                blocks.append(types.TextContent(type="text", text=str(part.get("text", ""))))
    structured = None
    if not result.is_error and isinstance(result.value, dict):
        structured = result.value
    return types.CallToolResult(content=blocks, structured_content=structured,
                                is_error=result.is_error)
