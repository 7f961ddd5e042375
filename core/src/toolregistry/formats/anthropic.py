"""``anthropic``: the Anthropic Messages API.

Owns: the ``{name, description, input_schema}`` envelope; reading ``tool_use`` blocks; the
answer (an assistant message of ``tool_use`` blocks, then one user message of ``tool_result``
blocks with ``is_error`` for errors and images as ``image`` blocks inside the result);
``tool_choice`` (``{"type": "auto" | "none" | "any" | "tool"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._base import Answer, ChoiceMode, Definition, ProviderFormat, RawCall, field

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import Image

__all__ = ["Anthropic"]

_CHOICE_TYPES = {"auto": "auto", "none": "none", "required": "any"}


class Anthropic(ProviderFormat):
    """Anthropic Messages."""

    name = "anthropic"
    call_shape = "an Anthropic tool_use block"
    aliases = ("claude",)
    call_types = ("tool_use",)

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        return {"name": tool.name, "description": tool.description, "input_schema": parameters}

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        return Definition(definition["name"], definition.get("description"),
                          definition.get("input_schema"))

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        if kind != "tool_use":
            return None
        return RawCall(field(obj, "name"), field(obj, "id"), field(obj, "input"))

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        if not answers:
            return []
        assistant = {"role": "assistant", "content": [
            {"type": "tool_use", "id": c.id, "name": c.name,
             "input": c.arguments if c.arguments is not None else {}}
            for c, _, _ in answers
        ]}
        blocks = []
        for call, result, _ in answers:
            text, images = result.text, result.images
            content: Any = text
            if images:
                content = ([{"type": "text", "text": text}] if text else []) + [
                    _image_block(img) for img in images]
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id,
                                     "content": content}
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return [assistant, {"role": "user", "content": blocks}]

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"type": "tool", "name": tool}
        return {"type": _CHOICE_TYPES[mode]}


def _image_block(img: Image) -> dict[str, Any]:
    if img.url is not None and not img.url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": img.url}}
    return {"type": "image",
            "source": {"type": "base64", "media_type": img.media_type, "data": img.base64()}}
