"""The otel plugin's hook implementations (loaded for every registry: keep it light)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolRegistry

    from ._telemetry import BatchObserver, OperationObserver, Telemetry, ToolObserver

PLUGIN_NAME = "otel"
"""The entry-point name (here, not in ``_settings``: that module imports pydantic, which
loading the plugin must not)."""


def telemetry(registry: ToolRegistry) -> Telemetry:
    """The registry's :class:`Telemetry` (made on first use; the process-wide carrier and log
    context are installed then)."""
    state = registry.plugin_state(PLUGIN_NAME)
    found: Telemetry | None = state.get("telemetry")
    if found is None:
        from toolregistry.plugin import add_carrier, add_log_context

        from ._settings import OtelSettings
        from ._telemetry import Telemetry, continue_carrier, inject, log_ids

        add_carrier(inject, continue_carrier)
        add_log_context(log_ids)
        settings = registry.plugin_settings(PLUGIN_NAME, OtelSettings)
        if settings.exporter is not None:
            from ._setup import install_sdk

            install_sdk(settings, f"[tool.toolregistry.plugins.otel] "
                                  f"({registry.config.path or 'no file'})")
        found = state["telemetry"] = Telemetry(registry, settings)
    return found


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.otel]``, validated when the configuration is loaded."""
    from ._settings import OtelSettings

    return OtelSettings


@hookimpl
def call_observer(registry: ToolRegistry, tool: Tool) -> ToolObserver:
    """An ``execute_tool`` span and the call metrics for every call of ``tool`` (a stand-in
    for a call naming no registered tool gets the span only)."""
    return telemetry(registry).tool_observer(
        tool, registered=registry.get_tool(tool.name) is tool)


@hookimpl
def batch_observer(registry: ToolRegistry) -> BatchObserver | None:
    """A parent span per batch."""
    return telemetry(registry).batch_observer()


@hookimpl
def operation_observer(registry: ToolRegistry) -> OperationObserver | None:
    """Spans for loading sources and discovery queries."""
    return telemetry(registry).operation_observer()


@hookimpl
def incoming_context(registry: ToolRegistry, carrier: Mapping[str, str]
                     ) -> AbstractContextManager[Any]:
    """A served request continues its caller's trace."""
    return telemetry(registry).incoming(carrier)
