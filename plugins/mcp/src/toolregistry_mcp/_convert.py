"""MCP results into toolregistry results, and registry results into MCP results."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from toolregistry import Audio, EmbeddedResource, Image, ResourceLink, ToolResult
from toolregistry.errors import ToolCallError

if TYPE_CHECKING:
    import mcp_types

__all__ = ["from_call_result", "to_call_result", "truncate"]

_IMAGE_PREFIX = "image/"


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _resource_part(resource: Any) -> str | Image | EmbeddedResource:
    uri = str(resource.uri)
    mime = resource.mime_type
    text = getattr(resource, "text", None)
    if text is not None:
        return EmbeddedResource.from_text(uri, text, mime)
    raw = _decode(getattr(resource, "blob", "") or "")
    if raw is None:
        return f"[binary resource {uri} ({mime}) with invalid base64 data not shown]"
    if mime and mime.startswith(_IMAGE_PREFIX):
        return Image.from_bytes(raw, mime)  # every provider that takes images takes these
    return EmbeddedResource.from_bytes(uri, raw, mime)


def _media_part(block: Any, cls: type[Image] | type[Audio], what: str) -> str | Image | Audio:
    raw = _decode(block.data)
    if raw is None:
        return f"[{what} ({block.mime_type}) with invalid base64 data not shown]"
    return cls(data=raw, mime_type=block.mime_type or None)


def from_call_result(result: mcp_types.CallToolResult, *, server: str, tool: str) -> Any:
    """What an MCP tool returned, as a toolregistry tool return value.

    ``isError`` raises :class:`~toolregistry.errors.ToolCallError` (kind ``remote``) with the
    server's text. Text, images, audio, embedded resources and resource links become a
    string, or a list of strings, :class:`~toolregistry.Image`, :class:`~toolregistry.Audio`,
    :class:`~toolregistry.EmbeddedResource` and :class:`~toolregistry.ResourceLink` for
    multimodal results (a blob resource of an image type is an ``Image``). With
    ``structuredContent`` the value is a :class:`~toolregistry.ToolResult` that carries it
    as ``structured_content``, its content being the blocks' (or, when the server sent none,
    the structured content as JSON text).
    """
    parts: list[Any] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind == "image":
            parts.append(_media_part(block, Image, "image"))
        elif kind == "audio":
            parts.append(_media_part(block, Audio, "audio"))
        elif kind == "resource":
            parts.append(_resource_part(block.resource))  # type: ignore[union-attr]
        elif kind == "resource_link":
            parts.append(ResourceLink(
                str(block.uri), block.name or "", block.description,  # type: ignore[union-attr]
                block.mime_type, block.title, block.size))  # type: ignore[union-attr]
        else:
            parts.append(json.dumps(block.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True), ensure_ascii=False))
    if result.is_error:
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        raise ToolCallError(
            f"MCP tool {tool!r} on {server} reported an error: {text or '(no message)'}",
            kind="remote",
        )
    structured = result.structured_content
    if not parts:
        value: Any = "" if structured is None else json.dumps(structured, ensure_ascii=False)
    elif all(isinstance(p, str) for p in parts):
        value = "\n".join(parts)
    else:
        value = parts
    if structured is None:
        return value
    from toolregistry.plugin import encode_content

    return ToolResult(None, "", encode_content(value), value=value,
                      structured_content=dict(structured))


def truncate(value: Any, limit: int) -> Any:
    """Cut the text of a result at ``limit`` characters, with a marker saying so."""
    if limit <= 0:
        return value
    if isinstance(value, ToolResult):  # with structured content: cut the text beside it
        from toolregistry.plugin import encode_content

        cut = truncate(value.value, limit)
        return ToolResult(None, "", encode_content(cut), value=cut,
                          structured_content=value.structured_content)
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


def _block(part: dict[str, Any]) -> Any:
    """One part of a registry result as an MCP content block."""
    import mcp_types as types

    kind = part.get("type")
    if kind in ("image", "audio"):
        media: Image | Audio = part[kind]
        data = media.base64()
        if data is None:  # a remote URL: MCP has no image- or audio-by-URL block
            return types.TextContent(type="text", text=f"[{kind}] {media.as_url()}")
        if kind == "image":
            return types.ImageContent(type="image", data=data, mime_type=media.media_type)
        return types.AudioContent(type="audio", data=data, mime_type=media.media_type)
    if kind == "resource":
        res: EmbeddedResource = part["resource"]
        contents: Any = (
            types.TextResourceContents(uri=res.uri, mime_type=res.mime_type, text=res.text)
            if res.text is not None else
            types.BlobResourceContents(uri=res.uri, mime_type=res.media_type, blob=res.base64()))
        return types.EmbeddedResource(type="resource", resource=contents)
    if kind == "resource_link":
        link: ResourceLink = part["resource_link"]
        return types.ResourceLink(type="resource_link", uri=link.uri, name=link.name,
                                  title=link.title, description=link.description,
                                  mime_type=link.mime_type, size=link.size)
    return types.TextContent(type="text", text=str(part.get("text", "")))


def to_call_result(result: ToolResult) -> mcp_types.CallToolResult:
    """A registry :class:`~toolregistry.ToolResult` as an MCP ``CallToolResult``: each part
    as its content block (text, image, audio, embedded resource, resource link), and the
    result's ``structured_content`` (or a dict the tool returned) as ``structuredContent``."""
    import mcp_types as types

    if isinstance(result.content, str):
        blocks: list[Any] = [types.TextContent(type="text", text=result.content)]
    else:
        blocks = [_block(part) for part in result.content]
    structured = None
    if not result.is_error:
        structured = result.structured_content
        if structured is None and isinstance(result.value, dict):
            structured = result.value
    return types.CallToolResult(content=blocks, structured_content=structured,
                                is_error=result.is_error)
