"""``anthropic``: the Anthropic Messages API.

Owns: the ``{name, description, input_schema}`` envelope; reading ``tool_use`` blocks; the
answer (an assistant message of ``tool_use`` blocks, then one user message of ``tool_result``
blocks with ``is_error`` for errors, images as ``image`` blocks and text resources and PDFs as
``document`` blocks inside the result, audio and other files as text saying they were left
out);
``tool_choice`` (``{"type": "auto" | "none" | "any" | "tool"}``); native deferral (the BM25
tool search tool, ``defer_loading: true`` on deferred tools) and the tool search's
``server_tool_use`` / ``tool_search_tool_result`` blocks, echoed in the assistant message;
``input_examples`` and ``allowed_callers`` from the tool's metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._base import Answer, ChoiceMode, Definition, ProviderFormat, RawCall, field
from ._parts import blocks_after_text, by_kind

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import EmbeddedResource, Image

__all__ = ["Anthropic"]

_CHOICE_TYPES = {"auto": "auto", "none": "none", "required": "any"}


class Anthropic(ProviderFormat):
    """Anthropic Messages."""

    name = "anthropic"
    call_shape = "an Anthropic tool_use block"
    aliases = ("claude",)
    call_types = ("tool_use",)
    passthrough_types = ("server_tool_use", "tool_search_tool_result")

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        out: dict[str, Any] = {"name": tool.name, "description": tool.description,
                               "input_schema": parameters}
        meta = tool.metadata
        if meta.input_examples:
            out["input_examples"] = [dict(e) for e in meta.input_examples]
        if meta.allowed_callers:
            out["allowed_callers"] = list(meta.allowed_callers)
        return out

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        return Definition(definition["name"], definition.get("description"),
                          definition.get("input_schema"))

    def search_tools(self) -> list[dict[str, Any]]:
        return [{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}]

    def revealed_by(self, obj: Any, kind: str) -> list[str]:
        if kind != "tool_search_tool_result":
            return []
        refs = field(field(obj, "content"), "tool_references")
        if not isinstance(refs, (list, tuple)):
            return []  # an error result loads nothing
        names = (field(ref, "tool_name") for ref in refs)
        return [n for n in names if isinstance(n, str)]

    def echo_passthrough(self, messages: list[dict[str, Any]], items: Sequence[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
        if not items:
            return messages
        if not messages:
            return [{"role": "assistant", "content": list(items)}]
        assistant, *rest = messages
        return [{**assistant, "content": [*items, *assistant["content"]]}, *rest]

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
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id,
                                     "content": blocks_after_text(
                                         result, "anthropic", _RENDER, "text")}
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return [assistant, {"role": "user", "content": blocks}]

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"type": "tool", "name": tool}
        return {"type": _CHOICE_TYPES[mode]}


def _document_block(resource: EmbeddedResource) -> dict[str, Any] | None:
    if resource.text is not None:
        source: dict[str, Any] = {"type": "text", "media_type": "text/plain",
                                  "data": resource.text}
    elif resource.media_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": resource.base64()}
    else:
        return None
    return {"type": "document", "source": source, "title": resource.uri}


def _image_block(img: Image) -> dict[str, Any]:
    if img.url is not None and not img.url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": img.url}}
    return {"type": "image",
            "source": {"type": "base64", "media_type": img.media_type, "data": img.base64()}}


_RENDER = by_kind(image=_image_block, resource=_document_block)
