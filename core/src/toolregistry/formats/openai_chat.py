"""``openai-chat``: the OpenAI Chat Completions API (and the many APIs that copy it).

Owns: the ``{"type": "function", "function": {...}}`` envelope with strict mode; reading
``tool_calls`` items (``function: {name, arguments}``); the answer (the assistant message with
``tool_calls``, one ``role: tool`` message per call, images, wav / mp3 audio (``input_audio``)
and files (``file``) in a ``role: user`` message after them because tool messages carry text
only; other audio as text saying it was left out); ``tool_choice``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._base import (
    Answer,
    ChoiceMode,
    Definition,
    ProviderFormat,
    RawCall,
    args_json,
    field,
)
from ._openai import to_strict
from ._parts import split_parts

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import Image

__all__ = ["OpenAIChat"]


class OpenAIChat(ProviderFormat):
    """OpenAI Chat Completions."""

    name = "openai-chat"
    call_shape = "an OpenAI chat tool call"
    aliases = ("openai", "chat", "openai-chatcompletion")
    supports_strict = True

    def rewrites_schema(self, strict: bool) -> bool:
        return strict

    def dialect(self, parameters: dict[str, Any], *, strict: bool, lost: list[str]
                ) -> dict[str, Any]:
        return to_strict(parameters, lost) if strict else parameters

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        fn: dict[str, Any] = {"name": tool.name, "description": tool.description,
                              "parameters": parameters}
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        fn = definition["function"]
        return Definition(fn["name"], fn.get("description"), fn.get("parameters"))

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        # The chat shape is told by its ``function`` object, whatever ``type`` says.
        fn = field(obj, "function")
        if fn is None or isinstance(fn, (str, bytes)):
            return None
        return RawCall(field(fn, "name"), field(obj, "id"), field(fn, "arguments"))

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        if not answers:
            return []
        messages: list[dict[str, Any]] = [{
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": args_json(c)}}
                for c, _, _ in answers
            ],
        }]
        user_parts: list[dict[str, Any]] = []
        for call, result, _ in answers:
            if isinstance(result.content, str):
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": result.content})
                continue
            texts, media = split_parts(result, "openai-chat", _media_part)
            text = "\n".join(texts)
            if media:
                note = f"[{_count(media)} follow in the next user message]"
                text = f"{text}\n{note}" if text else note
                user_parts.append({"type": "text",
                                   "text": f"Returned by {call.name} (call {call.id}):"})
                user_parts.extend(media)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if user_parts:  # tool messages carry text only: media follow as a user message
            messages.append({"role": "user", "content": user_parts})
        return messages

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"type": "function", "function": {"name": tool}}
        return mode


_NOUNS = {"image_url": "image(s)", "input_audio": "audio clip(s)", "file": "file(s)"}


def _count(media: list[dict[str, Any]]) -> str:
    kinds = [m["type"] for m in media]
    return ", ".join(f"{kinds.count(k)} {noun}" for k, noun in _NOUNS.items() if k in kinds)


def _media_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """The user-message part for a media part the chat API takes, else ``None``."""
    kind = part.get("type")
    if kind == "image":
        return _image_part(part["image"])
    if kind == "audio":
        audio = part["audio"]
        data = audio.base64() if audio.format in ("wav", "mp3") else None
        if data is None:
            return None
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio.format}}
    if kind == "resource" and part["resource"].data is not None:
        resource = part["resource"]
        return {"type": "file", "file": {
            "file_data": f"data:{resource.media_type};base64,{resource.base64()}",
            "filename": resource.filename}}
    return None


def _image_part(img: Image) -> dict[str, Any]:
    part: dict[str, Any] = {"url": img.as_url()}
    if img.detail:
        part["detail"] = img.detail
    return {"type": "image_url", "image_url": part}
