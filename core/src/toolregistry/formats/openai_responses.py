"""``openai-responses``: the OpenAI Responses API.

Owns: the flat ``{"type": "function", name, description, parameters, strict}`` envelope with
strict mode; reading ``function_call`` items (``call_id`` is the id the output answers, the
item ``id`` is kept as ``extra["item_id"]``); the answer (``function_call`` items echoed, then
``function_call_output`` items, images as ``input_image`` and files as ``input_file`` parts of
the output, audio as text saying it was left out); ``tool_choice``;
native deferral (the hosted ``tool_search`` tool, ``defer_loading: true`` on deferred tools,
deferred tools of a namespace grouped in a ``namespace`` tool under their registry names) and
the ``tool_search_call`` / ``tool_search_output`` items, echoed before the calls.
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
    has_field,
)
from ._openai import to_strict
from ._parts import blocks_after_text, by_kind

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import EmbeddedResource, Image

__all__ = ["OpenAIResponses"]


class OpenAIResponses(ProviderFormat):
    """OpenAI Responses."""

    name = "openai-responses"
    call_shape = "an OpenAI responses function_call item"
    aliases = ("responses",)
    supports_strict = True
    call_types = ("function_call",)
    passthrough_types = ("tool_search_call", "tool_search_output")

    def rewrites_schema(self, strict: bool) -> bool:
        return strict

    def dialect(self, parameters: dict[str, Any], *, strict: bool, lost: list[str]
                ) -> dict[str, Any]:
        return to_strict(parameters, lost) if strict else parameters

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        return {"type": "function", "name": tool.name, "description": tool.description,
                "parameters": parameters, "strict": strict}

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        # the hosted tool search has no name of its own: it goes by its type
        name = definition["name"] if "name" in definition else definition["type"]
        return Definition(name, definition.get("description"), definition.get("parameters"))

    def search_tools(self) -> list[dict[str, Any]]:
        return [{"type": "tool_search"}]

    def deferred_definitions(self, deferred: Sequence[tuple[Tool, dict[str, Any]]]
                             ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        for tool, definition in deferred:
            marked = {**definition, "defer_loading": True}
            namespace = tool.namespace
            if not namespace:
                out.append(marked)
                continue
            group = groups.get(namespace)
            if group is None:  # the namespace sits where its first tool would
                group = groups[namespace] = []
                out.append({"type": "namespace", "name": namespace,
                            "description": f"Tools of the {namespace} namespace.",
                            "tools": group})
            group.append(marked)
        return out

    def revealed_by(self, obj: Any, kind: str) -> list[str]:
        if kind != "tool_search_output":
            return []
        names: list[str] = []
        for loaded in field(obj, "tools") or ():
            inner = field(loaded, "tools") if field(loaded, "type") == "namespace" else None
            for item in inner if isinstance(inner, (list, tuple)) else (loaded,):
                name = field(item, "name")
                if isinstance(name, str):
                    names.append(name)
        return names

    def echo_passthrough(self, messages: list[dict[str, Any]], items: Sequence[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
        return [*items, *messages]

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        # Typed items, or the same data without ``type`` (``call_id`` + ``name``): either way
        # never taken for a registry call, although it has a name and arguments too.
        if kind != "function_call" and not (
                kind is None and has_field(obj, "call_id") and has_field(obj, "name")):
            return None
        item_id = field(obj, "id")
        return RawCall(field(obj, "name"), field(obj, "call_id") or item_id,
                       field(obj, "arguments"),
                       {"item_id": item_id} if item_id is not None else None)

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [
            {"type": "function_call", "call_id": c.id, "name": c.name,
             "arguments": args_json(c)}
            for c, _, _ in answers
        ]
        for call, result, _ in answers:
            items.append({"type": "function_call_output", "call_id": call.id,
                          "output": blocks_after_text(result, "openai-responses",
                                                       _RENDER, "input_text")})
        return items

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode == "tool":
            return {"type": "function", "name": tool}
        return mode


def _image_item(img: Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": img.as_url(), "detail": img.detail or "auto"}


def _file_item(resource: EmbeddedResource) -> dict[str, Any] | None:
    if resource.data is None:
        return None  # a text resource is text
    return {"type": "input_file", "filename": resource.filename,
            "file_data": f"data:{resource.media_type};base64,{resource.base64()}"}


_RENDER = by_kind(image=_image_item, resource=_file_item)
