"""``langchain``: LangChain's tool calls and ``bind_tools(tool_choice=...)`` values.

Owns: reading ``{"type": "tool_call", name, args, id}`` (``AIMessage.tool_calls`` items) and the
``tool_choice`` vocabulary ``bind_tools`` takes. Schemas and tool messages for LangChain come
from the langchain plugin (``registry.to_langchain()``, ``to_tool_messages``), which builds
real LangChain objects, so this format emits neither.
"""

from __future__ import annotations

from typing import Any

from ._base import ChoiceMode, ProviderFormat, RawCall, field

__all__ = ["LangChain"]

_CHOICES = {"auto": "auto", "none": "none", "required": "any"}


class LangChain(ProviderFormat):
    """LangChain ``ToolCall`` dicts and ``bind_tools`` tool choice."""

    name = "langchain"
    call_shape = "a LangChain tool call"
    aliases = ("lc",)
    call_types = ("tool_call",)

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        if kind != "tool_call":
            return None
        return RawCall(field(obj, "name"), field(obj, "id"), field(obj, "args"))

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        return tool if mode == "tool" else _CHOICES[mode]
