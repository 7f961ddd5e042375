"""Hook implementations: the ``discover_tools`` tool, its live index, name suggestions.

``registry.enable_tool_discovery()`` sets the ``tool_discovery`` setting; the ``on_change``
event it fires registers ``discover_tools`` and builds the index once. Every later change
event updates only the tools it names, so registering N tools one by one costs O(N).
State lives in ``registry.plugin_state("discovery")`` and goes away with the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from toolregistry.errors import ToolNameCollisionError
from toolregistry.plugin import hookimpl, log

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import ToolRegistry
    from toolregistry.events import ChangeEvent

    from ._discovery import ToolDiscoveryTool
    from ._semantic import SemanticOptions

# The index (and numpy) load when discovery is first used, not when the plugin loads.
DISCOVER_TOOLS_NAME = "discover_tools"

PLUGIN_NAME = "discovery"
MAX_TOP_K = 50

DISCOVER_TOOLS_DESCRIPTION = (
    "Find tools you can use that are not in your tool list yet, or look up one tool's full "
    "definition. Pass a tool name for its exact schema, or a short description of the "
    "capability you need (any language) for the best matching tools. Results for tools "
    "you have not seen include their schema, so you can call them right away."
)
"""Constant on purpose: deferred tools are announced in the system prompt
(``registry.get_deferred_summaries()``), never by growing this description."""

_STATE_KEY = "discoverer"
_SUGGEST_KEY = "suggest_index"


def _state(registry: ToolRegistry) -> dict[str, Any]:
    return registry.plugin_state(PLUGIN_NAME)


def get_discoverer(registry: ToolRegistry) -> ToolDiscoveryTool | None:
    """The live discoverer behind ``registry``'s ``discover_tools``, if discovery is on."""
    found: ToolDiscoveryTool | None = _state(registry).get(_STATE_KEY)
    return found


def _semantic_options(registry: ToolRegistry, asked: Any) -> SemanticOptions | bool | None:
    """What ``enable_tool_discovery(semantic=...)`` asked for (``True``: as configured),
    else the configuration's ``semantic``; neither said: on where it can run (the
    ``semantic`` extra installed, or an embedder configured), ``None`` for the discoverer's
    own default when no semantic option is set."""
    from ._settings import DiscoverySettings

    if asked is not None and not isinstance(asked, bool):
        from ._semantic import SemanticOptions  # numpy: only when semantic search is asked

        if isinstance(asked, SemanticOptions):
            return _on_store(registry, asked)
        raise TypeError(f"enable_tool_discovery(semantic=...) takes True, False or a "
                        f"SemanticOptions, got {asked!r}")
    settings = registry.plugin_settings(PLUGIN_NAME, DiscoverySettings)
    if asked is False or (asked is None and settings.semantic is False):
        return False
    if asked is None and settings.semantic is None:
        from ._settings import semantic_available

        if settings.semantic_is_default():
            return None  # opened with the index, at the first search
        if not semantic_available(settings.embedder):
            return False
    from ._semantic import SemanticOptions

    options = settings.semantic_options()
    assert isinstance(options, SemanticOptions)
    return _on_store(registry, options)


def _on_store(registry: ToolRegistry, options: SemanticOptions) -> SemanticOptions:
    """The default cache (``True``) on the registry's store when one is configured, so that
    workers and hosts share the vectors; a cache file named explicitly stays that file."""
    if options.cache is not True:
        return options
    url = registry.store_url()
    return options if url is None else attrs.evolve(options, cache=url)


def _enable(registry: ToolRegistry, field_weights: Mapping[str, float] | None,
            semantic: Any = None) -> None:
    existing = registry.get_tool(DISCOVER_TOOLS_NAME)
    if existing is not None and existing.provenance.plugin != PLUGIN_NAME:
        raise ToolNameCollisionError(
            f"cannot enable tool discovery on registry {registry.name!r}: a tool named "
            f"{DISCOVER_TOOLS_NAME!r} is already registered ({existing.provenance.kind}"
            f"{': ' + existing.provenance.detail if existing.provenance.detail else ''}); "
            "unregister or rename it first"
        )
    from ._discovery import ToolDiscoveryTool
    from ._tool import make_discover_tool

    discoverer = ToolDiscoveryTool(registry, field_weights=field_weights,
                                   semantic=_semantic_options(registry, semantic))
    previous = _state(registry).get(_STATE_KEY)
    if previous is not None:
        previous.close()
    if discoverer.hybrid:
        registry.add_closer(discoverer.close)  # the embedding cache's connection
    _state(registry)[_STATE_KEY] = discoverer
    registry.register(make_discover_tool(discoverer), replace=True)
    # The index is built by the first search (its size is logged then, ``discovery.indexed``).
    log.info("discovery.enabled", registry=registry.name, tools=len(registry) - 1)


def _disable(registry: ToolRegistry) -> None:
    state = _state(registry)
    discoverer = state.pop(_STATE_KEY, None)
    had = discoverer is not None
    if had:
        discoverer.close()
    tool = registry.get_tool(DISCOVER_TOOLS_NAME)
    if tool is not None and tool.provenance.plugin == PLUGIN_NAME:
        registry.unregister(DISCOVER_TOOLS_NAME)
    if had:
        log.info("discovery.disabled", registry=registry.name)


@hookimpl
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Turn ``discover_tools`` on and off, and keep its index in step with the registry."""
    details = event.details
    if event.kind == "setting":
        if details.get("setting") != "tool_discovery":
            return
        if details.get("value"):
            _enable(registry, details.get("field_weights"), details.get("semantic"))
        else:
            _disable(registry)
        return
    state = registry.plugin_state(PLUGIN_NAME) if registry.get_setting("tool_discovery") else None
    discoverer: ToolDiscoveryTool | None = state.get(_STATE_KEY) if state else None
    if discoverer is None:
        return
    renamed = details.get("renamed")
    if isinstance(renamed, Mapping):
        discoverer.forget(str(old) for old in renamed)
    if event.kind == "unregister":
        discoverer.forget(event.names)
    elif event.names:
        # register, enable, disable, metadata, namespace, rename: re-read just these tools.
        discoverer.refresh(event.names)


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.discovery]``, validated when the configuration is loaded."""
    from ._settings import DiscoverySettings

    return DiscoverySettings


@hookimpl
def suggest_tools(registry: ToolRegistry, name: str, limit: int) -> list[str] | None:
    """Close names for an unknown tool: spelling first, then what the name's words match."""
    if len(registry) == 0:
        return None
    discoverer = get_discoverer(registry)
    if discoverer is None:
        # Discovery is off: keep a private index, rebuilt only when the registry changed.
        state = _state(registry)
        cached = state.get(_SUGGEST_KEY)
        if cached is None or cached[0] != registry.version:
            from ._discovery import ToolDiscoveryTool

            cached = (registry.version, ToolDiscoveryTool(registry, semantic=False))
            state[_SUGGEST_KEY] = cached
        discoverer = cached[1]
    return discoverer.suggest(name, limit)
