"""LangChain message content into the kernel's result content, and back.

LangChain tool messages carry a string or a list of content blocks in several dialects
(OpenAI ``image_url``, LangChain v1 standard ``image`` blocks with ``url`` / ``base64``,
Anthropic ``source`` objects). The kernel's content is a string or a list of
``{"type": "text"}`` / ``{"type": "image", "image": Image}`` parts.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from toolregistry.types import Image


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


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
    if not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return Image.from_bytes(raw, mime or "image/png")


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
    blocks: list[Any] = []
    for part in content:
        if part.get("type") == "image" and isinstance(part.get("image"), Image):
            image: Image = part["image"]
            b64 = image.base64()
            if b64 is not None:
                blocks.append({"type": "image", "base64": b64, "mime_type": image.media_type})
            else:
                blocks.append({"type": "image", "url": image.as_url()})
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        else:
            blocks.append({"type": "text", "text": _json_text(part)})
    return blocks
