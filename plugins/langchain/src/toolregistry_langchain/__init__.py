"""toolregistry-langchain: LangChain tools in, registry tools out.

``registry.register_from_langchain(tools)`` registers ``@tool`` tools, ``StructuredTool``\\s,
``BaseTool`` subclasses and toolkits; ``registry.to_langchain()`` (or :func:`to_langchain`)
exports registry tools of any source as LangChain tools whose calls run through the registry;
:func:`from_tool_message` reads a registry result back from a ``ToolMessage``;
:func:`interrupt_for_approval` turns a call held for approval into a LangGraph interrupt.
langchain-core is imported on first use only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

__all__ = [
    "APPROVAL_INTERRUPT",
    "RegistryTool",
    "ainterrupt_for_approval",
    "from_tool_message",
    "interrupt_for_approval",
    "to_langchain",
    "to_tool_messages",
    "tools_from_langchain",
]

if TYPE_CHECKING:
    from ._approval import APPROVAL_INTERRUPT, ainterrupt_for_approval, interrupt_for_approval
    from ._artifact import from_tool_message
    from ._export import RegistryTool, to_langchain, to_tool_messages
    from ._import import tools_from_langchain


# Lazy: importing the package must not import langchain-core.
__getattr__ = lazy_exports(__name__, {
    "APPROVAL_INTERRUPT": "._approval",
    "RegistryTool": "._export",
    "ainterrupt_for_approval": "._approval",
    "interrupt_for_approval": "._approval",
    "from_tool_message": "._artifact",
    "to_langchain": "._export",
    "to_tool_messages": "._export",
    "tools_from_langchain": "._import",
})
