"""Hook implementations of the codemode plugin.

``on_change`` keeps ``run_code``'s description in step with the registry: when tools come, go
or change, the listing of the tools programs may call is rebuilt (the signatures of unchanged
tools are cached, so this is a join). The plugin has no per-call hooks: the calls a program
makes are ordinary registry calls, and ``run_code`` itself is an ordinary async tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import hookimpl, log

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import ToolRegistry
    from toolregistry.events import ChangeEvent

PLUGIN_NAME = "codemode"
"""The entry-point name (here, not in ``_settings``: that module imports pydantic, which
loading the plugin must not)."""


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.codemode]``, validated when the configuration is loaded."""
    from ._settings import CodeModeSettings

    return CodeModeSettings


@hookimpl
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Refresh ``run_code``'s description after a change to the tools programs may see."""
    mode = registry.plugin_state(PLUGIN_NAME).get("mode")
    if mode is None or event.kind == "setting":
        return
    name = mode.settings.tool_name
    if event.names == (name,):
        return  # run_code itself changed (its own refresh among others)
    current = registry.get_tool(name)
    if current is None:
        return
    description = mode.description()
    if description != current.description:
        registry.update_tool(current.evolve(description=description))
        log.debug("codemode.refreshed", registry=registry.name, tools=len(mode.view().by_name))
