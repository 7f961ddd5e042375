"""toolregistry-codemode: programmatic tool calling. The model writes a short Python program
that calls the registry's tools; it runs in the pydantic-monty sandbox and the model gets back
only what the program prints and returns.

``enable_code_mode(registry)`` registers the ``run_code`` tool (options as in
``[tool.toolregistry.plugins.codemode]``). See ``docs/codemode.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._codemode import MODULES, CodeMode
    from ._paused import HeldCall, PausedRun
    from ._result import CallRecord, CodeError, CodeRun
    from ._settings import CodeModeSettings
    from ._stubs import render_type

__all__ = [
    "MODULES",
    "CallRecord",
    "CodeError",
    "CodeMode",
    "CodeModeSettings",
    "CodeRun",
    "HeldCall",
    "PausedRun",
    "disable_code_mode",
    "enable_code_mode",
    "get_code_mode",
    "render_type",
]

# Loaded on first use, so that loading the plugin (every registry does) stays cheap.
_LAZY = {
    "MODULES": "._codemode",
    "CodeMode": "._codemode",
    "CallRecord": "._result",
    "CodeError": "._result",
    "CodeRun": "._result",
    "HeldCall": "._paused",
    "PausedRun": "._paused",
    "CodeModeSettings": "._settings",
    "render_type": "._stubs",
}

__getattr__ = lazy_exports(__name__, _LAZY)


def enable_code_mode(registry: ToolRegistry, **options: Any) -> CodeMode:
    """Register ``run_code`` on ``registry`` and return its :class:`CodeMode`.

    ``options`` override ``[tool.toolregistry.plugins.codemode]`` (same names, underscores or
    dashes): ``enable_code_mode(registry, include=["weather_*"], wall_time=10)``. Calling it
    again applies new options. The sandbox's workers start on the first program (or
    ``await mode.sandbox.pool()``) and stop with ``registry.close()``.
    """
    from toolregistry.errors import ConfigError, ToolNameCollisionError

    from ._codemode import CodeMode
    from ._settings import PLUGIN_NAME, CodeModeSettings

    base = registry.plugin_settings(PLUGIN_NAME, CodeModeSettings)
    if options:
        merged = {**base.model_dump(), **{k.replace("-", "_"): v for k, v in options.items()}}
        try:
            settings = CodeModeSettings.model_validate(merged)
        except ValueError as exc:
            raise ConfigError(f"enable_code_mode: {exc}") from None
    else:
        settings = base
    state = registry.plugin_state(PLUGIN_NAME)
    old: CodeMode | None = state.get("mode")
    existing = registry.get_tool(settings.tool_name)
    if existing is not None and existing.provenance.plugin != PLUGIN_NAME:
        raise ToolNameCollisionError(
            f"cannot enable code mode on registry {registry.name!r}: a tool named "
            f"{settings.tool_name!r} is already registered ({existing.provenance.kind}); pass "
            "tool_name=... to use another name")
    if old is not None and old.settings.tool_name != settings.tool_name:
        registry.unregister(old.settings.tool_name)
    mode = CodeMode(registry, settings)
    state["mode"] = mode
    registry.register(mode.tool(), replace=True)
    registry.add_closer(mode.sandbox.aclose)
    return mode


def disable_code_mode(registry: ToolRegistry) -> None:
    """Unregister ``run_code`` (its sandbox workers stop with the registry)."""
    from ._settings import PLUGIN_NAME

    mode = registry.plugin_state(PLUGIN_NAME).pop("mode", None)
    if mode is not None and mode.settings.tool_name in registry:
        registry.unregister(mode.settings.tool_name)


def get_code_mode(registry: ToolRegistry) -> CodeMode | None:
    """The registry's :class:`CodeMode`, or ``None`` when code mode is off."""
    from ._settings import PLUGIN_NAME

    found: CodeMode | None = registry.plugin_state(PLUGIN_NAME).get("mode")
    return found
