"""Hook implementations of the inspector plugin: the execution log observes every call
(``call_observer``), the options table (``settings_model``) and the ``toolregistry inspect`` /
``toolregistry log`` commands (``cli_commands``). Light to import: the web stack loads only
when the UI is served."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import Command, hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolRegistry
    from toolregistry.events import ChangeEvent

    from ._log import _Observer


@hookimpl
def call_observer(registry: ToolRegistry, tool: Tool) -> _Observer | None:
    """The registry's execution log, while it records (``None`` before its first use with
    ``log = "on-use"``, and with ``log = false``): told of ends only until calls in flight are
    shown."""
    from ._log import recording_log

    found = recording_log(registry)
    return found.observer if found is not None else None


@hookimpl
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Count the registry's changes: an open inspector rebuilds its search index after one."""
    state = registry.plugin_state("inspector")
    state["changes"] = state.get("changes", 0) + 1


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.inspector]``."""
    from ._settings import InspectorSettings

    return InspectorSettings


@hookimpl
def cli_commands() -> list[Command]:
    """``toolregistry log`` (and ``toolregistry inspect``)."""
    from . import _cli

    return [Command(name="log", help=_cli.LOG_HELP, run=_cli.run_log,
                    arguments=_cli.log_arguments),
            Command(name="inspect", help=_cli.INSPECT_HELP, run=_cli.run_inspect,
                    arguments=_cli.inspect_arguments)]
