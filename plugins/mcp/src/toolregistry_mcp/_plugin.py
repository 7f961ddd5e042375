"""The ``mcp`` plugin's hook implementations (entry point ``toolregistry.plugins: mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.plugin import Command, SourceKind, hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolRegistry
    from toolregistry.plugin import Runner


# The loader, the client and the SDK are imported on first use, so that loading the plugin
# -- which every registry does -- stays cheap.
def _load(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    from ._loader import load

    return load(registry, server, **options)


async def _aload(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    from ._loader import aload

    return await aload(registry, server, **options)


@hookimpl
def loaders() -> list[SourceKind]:
    """``register_from_mcp`` / ``aregister_from_mcp`` and ``kind = "mcp"`` config sources
    (``server = ...``)."""
    return [SourceKind(name="mcp", load=_load, aload=_aload, target="server",
                       handles=("include", "exclude"))]


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.mcp]``."""
    from ._settings import MCPSettings

    return MCPSettings


@hookimpl
def cli_commands() -> list[Command]:
    """``toolregistry serve``."""
    from . import _cli

    return [Command(name="serve", help=_cli.HELP, run=_cli.run, arguments=_cli.arguments)]


@hookimpl
def dispatch(registry: ToolRegistry, tool: Tool) -> Runner | None:
    """An MCP tool whose session is on the plugin's background loop runs its calls straight
    on that loop (no worker thread in between; see ``_runner``)."""
    if tool.provenance.kind != "mcp":
        return None
    from ._runner import runner_for

    return runner_for(tool)
