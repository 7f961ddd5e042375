"""toolregistry-stamp: an example third-party plugin (entry point ``stamp``).

- ``post_invoke`` stamps every result with the ``text`` of ``[tool.toolregistry.plugins.stamp]``
  and counts the stamps of each registry (:func:`stamps`);
- ``loaders`` provides the ``constants`` source kind (``register_from_constants``), whose own
  options the kernel validates with a model;
- ``cli_commands`` adds ``toolregistry stamp-text``.

The module only defines functions: the kernel imports it when it loads plugins, so it stays
cheap (pydantic models are imported on first use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry import Tool
from toolregistry.plugin import Command, SourceKind, hookimpl, log

if TYPE_CHECKING:
    import argparse

    from pydantic import BaseModel

    from toolregistry import ToolRegistry
    from toolregistry.plugin import CommandContext
    from toolregistry.types import ToolCall, ToolResult

__all__ = ["PLUGIN", "stamps"]

PLUGIN = "stamp"


def _options(registry: ToolRegistry) -> Any:
    from ._settings import Settings

    return registry.plugin_settings(PLUGIN, Settings)


def _state(registry: ToolRegistry) -> dict[str, Any]:
    """This plugin's state in ``registry``; the first use registers its closer."""
    state = registry.plugin_state(PLUGIN)
    if "stamps" not in state:
        state["stamps"] = 0
        registry.add_closer(lambda: log.info("stamp.closed", stamps=state["stamps"]))
    return state


def stamps(registry: ToolRegistry) -> int:
    """How many results this plugin stamped in ``registry``."""
    return int(registry.plugin_state(PLUGIN).get("stamps", 0))


@hookimpl
def settings_model() -> type[BaseModel]:
    from ._settings import Settings

    return Settings


@hookimpl
def post_invoke(registry: ToolRegistry, tool: Tool, call: ToolCall,
                result: ToolResult) -> ToolResult | None:
    result.metadata[PLUGIN] = _options(registry).text
    _state(registry)["stamps"] += 1
    return None


def _load_constants(registry: ToolRegistry, source: Mapping[str, Any], *,
                    description: str = "The constant {name}.", **options: Any) -> list[Tool]:
    """One tool per ``name: value`` of ``source``, returning ``value``."""
    if not isinstance(source, Mapping):
        raise TypeError(f"constants: the source must be a table of name = value, got "
                        f"{source!r}")
    tools = [Tool(name=name, description=description.replace("{name}", name),
                  callable=lambda value=value: value)
             for name, value in source.items()]
    return registry.register_tools(tools, **options)


@hookimpl
def loaders() -> list[SourceKind]:
    from ._settings import ConstantsOptions

    return [SourceKind(name="constants", load=_load_constants, options=ConstantsOptions)]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upper", action="store_true", help="print it in capitals")


def _run(context: CommandContext) -> int:
    text = _options(context.registry()).text
    print(text.upper() if context.args.upper else text)
    return 0


@hookimpl
def cli_commands() -> list[Command]:
    return [Command(name="stamp-text", help="print the stamp of the configured registry",
                    run=_run, arguments=_arguments)]
