"""Hook implementations of the ray plugin.

``dispatch`` hands the calls of the selected tools to a Ray runner; ``register`` refuses, at
registration, a selected tool that could not run there (and connects to a configured cluster,
so that an unreachable one is an error at load); ``call_hooks`` says the plugin concerns only
the selected tools' dispatch, so the others pay nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import TYPE_CHECKING

from toolregistry.plugin import hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolRegistry
    from toolregistry.plugin import Runner

    from ._runner import RayBackend

PLUGIN_NAME = "ray"
"""The entry-point name (here, not in ``_settings``: that module imports pydantic, which
loading the plugin must not)."""

_lock = threading.Lock()


def backend_of(registry: ToolRegistry) -> RayBackend:
    """The registry's :class:`RayBackend`, made from its configuration on first need."""
    state = registry.plugin_state(PLUGIN_NAME)
    backend: RayBackend | None = state.get("backend")
    if backend is None:
        from ._runner import RayBackend
        from ._settings import RaySettings

        with _lock:
            backend = state.get("backend")
            if backend is None:
                backend = RayBackend(registry.plugin_settings(PLUGIN_NAME, RaySettings))
                state["backend"] = backend
                registry.add_closer(backend.close)
    return backend


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.ray]``, validated when the configuration is loaded."""
    from ._settings import RaySettings

    return RaySettings


@hookimpl
def register(registry: ToolRegistry, tool: Tool) -> None:
    """A tool selected for Ray must be shippable; a configured cluster must be reachable."""
    backend = backend_of(registry)
    if backend.selects(tool):
        backend.check(tool)
        if backend.settings.address is not None:
            backend.connect()


@hookimpl
def call_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str]:
    return ("dispatch",) if backend_of(registry).selects(tool) else ()


@hookimpl
def dispatch(registry: ToolRegistry, tool: Tool) -> Runner | None:
    """The tool's Ray runner when it is selected, else ``None`` (the registry's own pool)."""
    backend = backend_of(registry)
    return backend.runner(tool) if backend.selects(tool) else None
