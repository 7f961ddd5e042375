"""``openai-chat``: the OpenAI Chat Completions API (and the many APIs that copy it).

Owns: the ``{"type": "function", "function": {...}}`` envelope with strict mode; reading
``tool_calls`` items (``function: {name, arguments}``); the answer (the assistant message with
``tool_calls``, one ``role: tool`` message per call, images in a ``role: user`` message after
them because tool messages carry text only); ``tool_choice``.
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
        image_parts: list[dict[str, Any]] = []
        for call, result, _ in answers:
            text, images = result.text, result.images
            if images:
                note = f"[{len(images)} image(s) follow in the next user message]"
                text = f"{text}\n{note}" if text else note
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            if images:
                image_parts.append({"type": "text",
                                    "text": f"Images returned by {call.name} (call {call.id}):"})
                image_parts.extend(_image_part(img) for img in images)
        if image_parts:  # tool messages carry text only: images follow as a user message
            messages.append({"role": "user", "content": image_parts})
        return messages

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"type": "function", "function": {"name": tool}}
        return mode


def _image_part(img: Image) -> dict[str, Any]:
    part: dict[str, Any] = {"url": img.as_url()}
    if img.detail:
        part["detail"] = img.detail
    return {"type": "image_url", "image_url": part}
