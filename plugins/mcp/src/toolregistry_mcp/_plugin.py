"""The ``mcp`` plugin's hook implementations (entry point ``toolregistry.plugins: mcp``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import Loader, hookimpl

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry


# The loader, the client and the SDK are imported on first use, so that loading the plugin
# -- which every registry does -- stays cheap.
def _load(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    from ._loader import load

    return load(registry, server, **options)


async def _aload(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    from ._loader import aload

    return await aload(registry, server, **options)


def _serve(registry: ToolRegistry, **options: Any) -> Any:
    from ._serve import serve

    return serve(registry, **options)


@hookimpl
def loaders() -> Mapping[str, Loader]:
    """``register_from_mcp`` / ``aregister_from_mcp`` and ``kind = "mcp"`` config sources;
    ``mcp:serve`` is what ``toolregistry serve`` calls."""
    return {"mcp": _load, "mcp:async": _aload, "mcp:serve": _serve}
