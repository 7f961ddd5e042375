"""The ``mcp`` plugin's hook implementations (entry point ``toolregistry.plugins: mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.plugin import Command, SourceKind, hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolRegistry
    from toolregistry.plugin import Runner
    from toolregistry.types import PendingChange


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


def _has_sources(registry: ToolRegistry) -> bool:
    # Without a loaded server there is nothing to review, and the loader is not imported.
    return bool(registry.plugin_state("mcp").get("sources"))


@hookimpl
def pending_changes(registry: ToolRegistry) -> list[PendingChange] | None:
    """The MCP tools whose server changed them after they were accepted."""
    if not _has_sources(registry):
        return None
    from ._review import pending_changes as pending

    return pending(registry)


@hookimpl
def review_change(registry: ToolRegistry, tool: str, version: str, action: str) -> bool | None:
    """Accept (through ``refresh(accept_changes=)``) or keep a pending version of an MCP tool."""
    if not _has_sources(registry):
        return None
    from ._review import review_change as review

    return review(registry, tool, version, action)
