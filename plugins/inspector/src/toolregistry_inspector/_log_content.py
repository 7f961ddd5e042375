"""How a result's content is kept in the execution log: each part redacted to its shape, or
kept whole (texts cut, images and audio as ``data:`` URLs, resources with their URI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import value_shape as redact

if TYPE_CHECKING:
    from ._log import ArgumentMode

__all__ = ["MAX_IMAGE_CHARS", "cut", "shape_result"]


MAX_IMAGE_CHARS = 1 << 20
"""The longest ``data:`` URL of an image or audio clip the log keeps (``full`` mode); larger
ones keep only their media type and size."""


def _media_part(kind: str, media: Any, mode: ArgumentMode) -> dict[str, Any]:
    """An image or audio part: its media type and size, and in ``full`` mode its URL."""
    data = getattr(media, "data", None)
    part: dict[str, Any] = {"type": kind, "media_type": getattr(media, "media_type", None),
                            "bytes": None if data is None else len(data)}
    if mode == "full":
        url = getattr(media, "url", None)
        try:
            url = url if url is not None else media.as_url()
        except (OSError, AttributeError) as exc:
            part["error"] = f"{type(exc).__name__}: {exc}"
            return part
        if len(url) <= MAX_IMAGE_CHARS:
            part["url"] = url
    return part


def _resource_part(resource: Any, mode: ArgumentMode, limit: int) -> dict[str, Any]:
    uri, text = str(getattr(resource, "uri", "")), getattr(resource, "text", None)
    data = getattr(resource, "data", None)
    part: dict[str, Any] = {"type": "resource", "media_type": getattr(resource, "media_type", None),
                            "uri": uri if mode == "full" else redact(uri),
                            "bytes": None if data is None else len(data)}
    if text is not None:
        part["text"] = cut(text, limit) if mode == "full" else redact(text)
    return part


def shape_result(content: Any, mode: ArgumentMode, limit: int) -> list[dict[str, Any]] | None:
    """A result's content as the log keeps it: parts, redacted to their shape unless
    ``mode`` is ``"full"`` (texts cut at ``limit``)."""
    if content is None:
        return None
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            text = str(part.get("text", ""))
            out.append({"type": "text", "text": cut(text, limit) if mode == "full"
                        else redact(text)})
        elif kind in ("image", "audio"):
            out.append(_media_part(kind, part.get(kind), mode))
        elif kind == "resource":
            out.append(_resource_part(part.get("resource"), mode, limit))
        elif kind == "resource_link":
            link = part.get("resource_link")
            uri = str(getattr(link, "uri", ""))
            out.append({"type": "resource_link", "uri": uri if mode == "full" else redact(uri),
                        "mime_type": getattr(link, "mime_type", None)})
        else:
            out.append({"type": str(kind), "shape": redact(part)})
    return out


def cut(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} chars)"
