"""toolregistry-langchain: LangChain tools in, registry tools out.

``registry.register_from_langchain(tools)`` registers ``@tool`` tools, ``StructuredTool``\\s,
``BaseTool`` subclasses and toolkits; ``registry.to_langchain()`` (or :func:`to_langchain`)
exports registry tools of any source as LangChain tools whose calls run through the registry.
langchain-core is imported on first use only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["RegistryTool", "to_langchain", "to_tool_messages", "tools_from_langchain"]

if TYPE_CHECKING:
    from ._export import RegistryTool, to_langchain, to_tool_messages
    from ._import import tools_from_langchain


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not import langchain-core.
    if name in ("RegistryTool", "to_langchain", "to_tool_messages"):
        from . import _export

        return getattr(_export, name)
    if name == "tools_from_langchain":
        from ._import import tools_from_langchain

        return tools_from_langchain
    raise AttributeError(f"module 'toolregistry_langchain' has no attribute {name!r}")
