"""LangChain message content into the kernel's result content, and back.

LangChain tool messages carry a string or a list of content blocks in several dialects
(OpenAI ``image_url``, LangChain v1 standard ``image`` blocks with ``url`` / ``base64``,
Anthropic ``source`` objects, v1 ``audio``, ``file`` and ``text-plain`` blocks). The
kernel's content is a string or a list of ``{"type": "text"}``, ``{"type": "image", "image":
Image}``, ``audio``, ``resource`` and ``resource_link`` parts: each becomes its v1 block
(``audio``, ``file``, ``text-plain``), and a resource link the text that names it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from toolregistry.types import Audio, EmbeddedResource, Image


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _b64decode(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _image_from_block(block: Mapping[str, Any]) -> Image | None:
    kind = block.get("type")
    if kind == "image_url":
        ref = block.get("image_url")
        url = ref.get("url") if isinstance(ref, Mapping) else ref
        return Image.from_url(url) if isinstance(url, str) else None
    if kind != "image":
        return None
    mime = block.get("mime_type") or block.get("media_type")
    source = block.get("source")
    if isinstance(source, Mapping):  # Anthropic: {"type": "base64", "media_type", "data"}
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return Image.from_url(source["url"])
        data, mime = source.get("data"), source.get("media_type") or mime
    else:
        if isinstance(block.get("url"), str):
            return Image.from_url(block["url"], mime)
        data = block.get("base64") if "base64" in block else block.get("data")
    raw = _b64decode(data)
    return None if raw is None else Image.from_bytes(raw, mime or "image/png")


def _media_from_block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """An ``audio``, ``file`` or ``text-plain`` v1 block as a kernel part."""
    kind, mime = block.get("type"), block.get("mime_type")
    if kind == "audio":
        if isinstance(block.get("url"), str):
            return {"type": "audio", "audio": Audio.from_url(block["url"], mime)}
        raw = _b64decode(block.get("base64"))
        return None if raw is None else {"type": "audio", "audio": Audio.from_bytes(raw, mime)}
    extras = block.get("extras")
    uri = extras.get("uri") if isinstance(extras, Mapping) else None
    uri = uri if isinstance(uri, str) and uri else block.get("title") or block.get("url")
    if kind == "text-plain" and isinstance(block.get("text"), str):
        resource = EmbeddedResource.from_text(str(uri or "text"), block["text"], mime)
        return {"type": "resource", "resource": resource}
    if kind == "file":
        raw = _b64decode(block.get("base64"))
        if raw is not None:
            resource = EmbeddedResource.from_bytes(str(uri or "file"), raw, mime)
            return {"type": "resource", "resource": resource}
    return None


def from_langchain_content(content: Any) -> str | list[dict[str, Any]]:
    """A ``ToolMessage.content`` as kernel result content."""
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        return _json_text(content)
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif isinstance(block, Mapping) and (image := _image_from_block(block)) is not None:
            parts.append({"type": "image", "image": image})
        elif isinstance(block, Mapping) and (part := _media_from_block(block)) is not None:
            parts.append(part)
        else:
            # Blocks the kernel has no part for (json, file, ...) still reach the model as text.
            parts.append({"type": "text", "text": _json_text(block)})
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def to_langchain_content(content: str | list[dict[str, Any]]) -> str | list[Any]:
    """Kernel result content as ``ToolMessage.content`` (LangChain v1 standard blocks)."""
    if isinstance(content, str):
        return content
    from toolregistry.plugin import stand_in

    blocks: list[Any] = []
    for part in content:
        kind = part.get("type")
        media = part.get(kind) if kind in ("image", "audio") else None
        if isinstance(media, (Image, Audio)):
            b64 = media.base64()
            if b64 is not None:
                blocks.append({"type": kind, "base64": b64, "mime_type": media.media_type})
            else:
                blocks.append({"type": kind, "url": media.as_url()})
        elif kind == "resource" and isinstance(part.get("resource"), EmbeddedResource):
            blocks.append(_resource_block(part["resource"]))
        elif kind == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "resource_link":
            blocks.append({"type": "text", "text": stand_in(part, "langchain")})
        else:
            blocks.append({"type": "text", "text": _json_text(part)})
    return blocks


def _resource_block(resource: EmbeddedResource) -> dict[str, Any]:
    extras = {"uri": resource.uri}
    if resource.text is not None:
        return {"type": "text-plain", "text": resource.text, "mime_type": "text/plain",
                "title": resource.uri, "extras": extras}
    return {"type": "file", "base64": resource.base64(), "mime_type": resource.media_type,
            "extras": extras}
