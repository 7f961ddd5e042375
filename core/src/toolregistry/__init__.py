"""toolregistry: a registry of tools for function-calling LLMs.

Importing the package is cheap: names are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "1.0.0.dev0"

__all__ = [
    "Audio",
    "ChangeEvent",
    "EmbeddedResource",
    "Image",
    "Injected",
    "Provenance",
    "ResourceLink",
    "RetryPolicy",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolMetadata",
    "ToolRegistry",
    "ToolResult",
    "ToolTag",
    "__version__",
    "hookimpl",
    "normalize_name",
    "render_tool_prompt",
]

_LAZY = {
    "ToolRegistry": "._registry",
    "Tool": ".tool",
    "ToolMetadata": ".tool",
    "ToolTag": ".tool",
    "Provenance": ".tool",
    "Injected": ".tool",
    "ToolCall": ".types",
    "ToolResult": ".types",
    "ToolContext": ".types",
    "Image": ".types",
    "Audio": ".types",
    "EmbeddedResource": ".types",
    "ResourceLink": ".types",
    "ChangeEvent": ".events",
    "RetryPolicy": "._execution",
    "hookimpl": ".hookspecs",
    "render_tool_prompt": ".prompt",
    "normalize_name": "._names",
}

if TYPE_CHECKING:
    from ._execution import RetryPolicy
    from ._names import normalize_name
    from ._registry import ToolRegistry
    from .events import ChangeEvent
    from .hookspecs import hookimpl
    from .prompt import render_tool_prompt
    from .tool import Injected, Provenance, Tool, ToolMetadata, ToolTag
    from .types import (
        Audio,
        EmbeddedResource,
        Image,
        ResourceLink,
        ToolCall,
        ToolContext,
        ToolResult,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        from ._moved import moved_export

        moved = moved_export(name)  # a name of toolregistry 0.19: say what replaces it
        if moved is not None:
            raise moved
        raise AttributeError(f"module 'toolregistry' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
