"""The think plugin's hook implementations."""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ToolCallError
from toolregistry.plugin import hookimpl, log

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolCall, ToolRegistry

REASON_FIELD = "toolcall_reason"
DEFAULT_DESCRIPTION = "Why you chose this tool and what you expect from it."
_STATE_KEY = "settings"


class NativeReasonWarning(UserWarning):
    """A tool declares its own ``toolcall_reason`` parameter; the registry leaves it alone."""


def _settings(registry: ToolRegistry) -> Any:
    state = registry.plugin_state("think")
    settings = state.get(_STATE_KEY)
    if settings is None:
        from ._settings import ThinkSettings  # pydantic: loaded on first use, not with the plugin

        settings = state[_STATE_KEY] = registry.plugin_settings("think", ThinkSettings)
    return settings


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.think]``, validated when the configuration is loaded."""
    from ._settings import ThinkSettings

    return ThinkSettings


def reason_property(description: str = DEFAULT_DESCRIPTION) -> dict[str, Any]:
    """The injected property, exactly as documented."""
    return {"type": "string", "description": description}


def _declares_own(tool: Tool) -> bool:
    props = tool.parameters.get("properties")
    return isinstance(props, dict) and REASON_FIELD in props


@hookimpl
def register(registry: ToolRegistry, tool: Tool) -> None:
    if _declares_own(tool):
        msg = (f"tool {tool.name!r} declares its own {REASON_FIELD!r} parameter; for this tool "
               "the registry neither injects nor strips it (rename the parameter, e.g. "
               "'reason', to get rationale augmentation)")
        log.warning("think.native_parameter", tool=tool.name, source=tool.provenance.kind)
        warnings.warn(msg, NativeReasonWarning, stacklevel=2)


def _on_for(registry: ToolRegistry, tool: Tool) -> bool:
    own = tool.metadata.think_augment
    return own is True or (own is None and registry.think_augment)


def _asked(registry: ToolRegistry) -> set[str]:
    """Names of the tools whose schema went out with ``toolcall_reason``: a schema handed out
    stays in use after think is turned off (an exported LangChain tool, a model's earlier
    turn), so their reason is still accepted and stripped."""
    asked: set[str] = registry.plugin_state("think").setdefault("asked", set())
    return asked


@hookimpl
def call_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str]:
    """Stripping concerns a tool only while think is on for it, or once its schema asked for a
    reason (and the tool does not declare its own ``toolcall_reason``): other tools' calls
    never reach this plugin."""
    if _declares_own(tool):
        return ()
    return ("pre_invoke",) if _on_for(registry, tool) or tool.name in _asked(registry) else ()


@hookimpl
def schema_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str]:
    """Injection concerns a tool only while think is on for it: every other tool's schema goes
    out without the private copy a transform needs."""
    return ("schema_transform",) if _on_for(registry, tool) else ()


@hookimpl
def schema_transform(registry: ToolRegistry, tool: Tool, schema: dict[str, Any],
                     api_format: str) -> None:
    if not _on_for(registry, tool):
        return
    props = schema.get("properties")
    if props is None:
        if schema.get("type", "object") != "object":
            return
        props = schema["properties"] = {}
    if isinstance(props, dict) and REASON_FIELD not in props:  # a native one stays untouched
        props[REASON_FIELD] = _property(registry)
        _asked(registry).add(tool.name)
        if _settings(registry).required:
            required = schema.get("required")
            schema["required"] = [*(required if isinstance(required, list) else ()),
                                  REASON_FIELD]


def _property(registry: ToolRegistry) -> dict[str, Any]:
    # The description is looked up once per registry; each schema gets its own copy because
    # the kernel's strict-mode pass edits properties in place.
    state = registry.plugin_state("think")
    prop = state.get("property")
    if prop is None:
        prop = state["property"] = reason_property(_settings(registry).description)
    return dict(prop)


@hookimpl
def pre_invoke(registry: ToolRegistry, tool: Tool, call: ToolCall) -> None:
    args = call.arguments
    if _declares_own(tool):
        return
    reason = args.pop(REASON_FIELD, None) if args else None
    if reason is None or reason == "":
        if _settings(registry).required:
            raise ToolCallError(f"{REASON_FIELD} is required: say why you chose {tool.name!r} "
                                "and what you expect from it", kind="invalid_arguments")
        return
    call.reason = reason if isinstance(reason, str) else str(reason)
    log.info("call.reason", tool=tool.name, call_id=call.id, reason=call.reason)
