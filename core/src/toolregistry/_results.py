"""Tool return values into what goes back to the model.

Rules (see docs/execution.md):

* ``str`` passes through unchanged; ``None`` is ``"null"``; ``bool``, ``int`` and ``float`` are
  their JSON text.
* dicts, lists, tuples, sets, pydantic models, dataclasses, datetimes (ISO 8601), dates, times,
  decimals (as JSON strings, no precision lost), enums (their values), UUIDs and paths become
  JSON text with non-ASCII characters kept (``ensure_ascii=False``); anything else falls back
  to ``str()`` inside the JSON.
* an :class:`~toolregistry.Image`, :class:`~toolregistry.Audio`,
  :class:`~toolregistry.EmbeddedResource` or :class:`~toolregistry.ResourceLink`, image bytes
  (PNG, JPEG, GIF, WebP by their magic numbers), audio bytes (WAV, MP3, FLAC, Ogg), and tuples
  or lists that contain such values anywhere in their first two levels (``("text", Image)``,
  ``("note", [img1, img2])``, ``[img1, Audio]``) become multimodal content: a list of
  ``{"type": "text", "text": ...}``, ``{"type": "image", "image": Image}``, ``{"type":
  "audio", "audio": Audio}``, ``{"type": "resource", "resource": EmbeddedResource}`` and
  ``{"type": "resource_link", "resource_link": ResourceLink}`` parts in order. Other items
  inside such a tuple become JSON text parts; ready parts (``{"type": "audio", "audio":
  Audio}``) count as such values and are kept.
* other bytes are decoded as UTF-8 (invalid sequences replaced).
* for a tool that declares an output schema, a result that is a JSON object (a dict, a
  pydantic model, a dataclass) is also kept as ``structured_content``.
* a ready :class:`~toolregistry.ToolResult` is completed (call id, name, duration), not wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._content import PART_KINDS, Audio, part_of, part_value, sniff_audio
from .types import Image, ToolResult

__all__ = ["encode_content", "error_result", "make_result", "to_json_text"]

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_to_json: Callable[..., bytes] | None = None  # pydantic_core's, imported by the first result


def to_json_text(value: Any) -> str:
    """JSON text of ``value`` with non-ASCII kept readable (``ensure_ascii=False``)."""
    to_json = _to_json or _load_to_json()
    return to_json(value, fallback=str, serialize_unknown=True).decode("utf-8")


def _load_to_json() -> Callable[..., bytes]:
    global _to_json
    from pydantic_core import to_json

    _to_json = to_json
    return to_json


def _image_of_bytes(data: bytes) -> Image | None:
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return Image.from_bytes(data, mime)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Image.from_bytes(data, "image/webp")
    return None


def _media_of_bytes(data: bytes) -> dict[str, Any] | None:
    image = _image_of_bytes(data)
    if image is not None:
        return {"type": "image", "image": image}
    mime = sniff_audio(data)
    return None if mime is None else {"type": "audio", "audio": Audio.from_bytes(data, mime)}


def _has_media(value: Any, depth: int = 0) -> bool:
    if type(value) in PART_KINDS or part_value(value) is not None:
        return True
    if depth < 2 and isinstance(value, (list, tuple)):
        return any(_has_media(v, depth + 1) for v in value)
    return False


def _is_part(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("type") == "text":
        return isinstance(value.get("text"), str)
    return part_value(value) is not None


def _parts(value: Any, out: list[dict[str, Any]], depth: int = 0) -> None:
    part = part_of(value)
    if part is not None:
        out.append(part)
    elif isinstance(value, str):
        out.append({"type": "text", "text": value})
    elif _is_part(value):
        out.append(dict(value))
    elif depth < 2 and isinstance(value, (list, tuple)) and _has_media(value):
        for item in value:
            _parts(item, out, depth + 1)
    else:
        text = encode_content(value)
        out.append({"type": "text", "text": text if isinstance(text, str) else str(text)})


def encode_content(value: Any) -> str | list[dict[str, Any]]:
    """What the model sees for a tool's return value (see the module docstring)."""
    cls = type(value)
    if cls is str:
        return value  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if cls is bool:
        return "true" if value else "false"
    if cls is int:
        return str(value)
    if isinstance(value, str):  # str subclasses (StrEnum members are JSON-encoded below)
        if not hasattr(value, "value"):
            return str(value)
    elif isinstance(value, (bytes, bytearray)):
        media = _media_of_bytes(bytes(value))
        if media is not None:
            return [media]
        return bytes(value).decode("utf-8", "replace")
    elif cls in PART_KINDS:
        return [part_of(value)]  # type: ignore[list-item]
    elif isinstance(value, (list, tuple)) and _has_media(value):
        parts: list[dict[str, Any]] = []
        for item in value:
            _parts(item, parts, 1)
        return parts
    return to_json_text(value)


def make_result(call_id: str | None, name: str, value: Any, *, reason: str | None,
                duration: float, structured: bool = False) -> ToolResult:
    """A success result for ``value`` (a ready :class:`ToolResult` is completed, not wrapped);
    ``structured``: the tool declares an output schema, so a JSON object result is also kept
    as ``structured_content``."""
    if isinstance(value, ToolResult):
        if value.call_id is None:
            value.call_id = call_id
        if not value.name:
            value.name = name
        if value.reason is None:
            value.reason = reason
        value.duration = duration
        return value
    content = encode_content(value)
    result = ToolResult(call_id, name, content, False, None, value, reason, duration)
    if structured and isinstance(content, str) and content[:1] == "{" and not isinstance(
            value, str):
        import json

        result.structured_content = json.loads(content)
    return result


def error_result(call_id: str | None, name: str, kind: str, message: str, *,
                 reason: str | None = None, duration: float = 0.0,
                 redacted: str | None = None) -> ToolResult:
    """An error result whose content tells the model what was wrong (``redacted``: the same
    message without the argument values it quotes, for logs and traces)."""
    return ToolResult(call_id=call_id, name=name, content=f"Error: {message}", is_error=True,
                      error_kind=kind, reason=reason, duration=duration,  # type: ignore[arg-type]
                      redacted_text=None if redacted is None else f"Error: {redacted}")
