"""Tool return values into what goes back to the model."""

from __future__ import annotations

from typing import Any

from .types import Image, ToolResult

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def to_json_text(value: Any) -> str:
    """JSON text of ``value`` with non-ASCII kept readable (``ensure_ascii=False``).

    dicts, lists, pydantic models, dataclasses, datetimes (ISO 8601), decimals (as strings, no
    precision lost), enums (their values), sets, UUIDs and paths are supported; anything else
    falls back to ``str()``.
    """
    import pydantic_core

    return pydantic_core.to_json(value, fallback=str, serialize_unknown=True).decode("utf-8")


def _image_of_bytes(data: bytes) -> Image | None:
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return Image.from_bytes(data, mime)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Image.from_bytes(data, "image/webp")
    return None


def _part(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, Image):
        return [{"type": "image", "image": value}]
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Image) for v in value):
        return [{"type": "image", "image": v} for v in value]
    if isinstance(value, dict) and value.get("type") in ("text", "image") and len(value) <= 3:
        return [dict(value)]
    return [{"type": "text", "text": encode_content(value)}]  # type: ignore[dict-item]


def _has_image(value: Any) -> bool:
    if isinstance(value, Image):
        return True
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, Image) or (isinstance(v, (list, tuple)) and
                                            any(isinstance(x, Image) for x in v)) for v in value)
    return False


def encode_content(value: Any) -> str | list[dict[str, Any]]:
    """``str`` passes through; images (alone, in tuples or lists, mixed with text) become
    multimodal parts; ``None`` is ``"null"``; everything else is JSON text."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, (bytes, bytearray)):
        image = _image_of_bytes(bytes(value))
        if image is not None:
            return [{"type": "image", "image": image}]
        return bytes(value).decode("utf-8", "replace")
    if _has_image(value):
        if isinstance(value, Image):
            return [{"type": "image", "image": value}]
        parts: list[dict[str, Any]] = []
        for item in value:
            parts.extend(_part(item))
        return parts
    return to_json_text(value)


def make_result(call_id: str | None, name: str, value: Any, *, reason: str | None,
                duration: float) -> ToolResult:
    """A success result for ``value`` (a ready :class:`ToolResult` is completed, not wrapped)."""
    if isinstance(value, ToolResult):
        if value.call_id is None:
            value.call_id = call_id
        if not value.name:
            value.name = name
        if value.reason is None:
            value.reason = reason
        value.duration = duration
        return value
    return ToolResult(call_id=call_id, name=name, content=encode_content(value), value=value,
                      reason=reason, duration=duration)


def error_result(call_id: str | None, name: str, kind: str, message: str, *,
                 reason: str | None = None, duration: float = 0.0) -> ToolResult:
    """An error result whose content tells the model what was wrong."""
    return ToolResult(call_id=call_id, name=name, content=f"Error: {message}", is_error=True,
                      error_kind=kind, reason=reason, duration=duration)  # type: ignore[arg-type]
