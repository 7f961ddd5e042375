"""toolregistry-ray: selected tools' calls run as Ray tasks, on a local Ray started on first
use or on a cluster; validation, authorization, hooks, deadlines and answers stay in the
registry's process.

Select tools in ``[tool.toolregistry.plugins.ray]`` (``tools = ["heavy-*"]``), per tool with
``ToolMetadata(extra={"ray": True})``, or with :func:`enable_ray`. See ``docs/ray.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._carry import carry
    from ._cluster import RayUnavailableError
    from ._runner import RayBackend
    from ._settings import RaySettings, TaskOptions

__all__ = ["RayBackend", "RaySettings", "RayUnavailableError", "TaskOptions", "carry",
           "enable_ray", "get_ray"]

_LAZY = {
    "RayBackend": "._runner",
    "RaySettings": "._settings",
    "TaskOptions": "._settings",
    "RayUnavailableError": "._cluster",
    "carry": "._carry",
}

__getattr__ = lazy_exports(__name__, _LAZY)


def enable_ray(registry: ToolRegistry, **options: Any) -> RayBackend:
    """Run tools of ``registry`` on Ray with ``options`` over its
    ``[tool.toolregistry.plugins.ray]`` table (same names, underscores or dashes):
    ``enable_ray(registry, tools=["heavy_*"], num_cpus=2)``.

    With an ``address``, the cluster is connected now (an unreachable one raises
    :class:`RayUnavailableError`); a local Ray starts at the first call. Tools already
    registered that it selects are checked now (:class:`~toolregistry.errors.ConfigError`
    naming those that cannot be shipped). Returns the registry's :class:`RayBackend`.
    """
    from toolregistry.errors import ConfigError, ToolRejected

    from ._runner import RayBackend
    from ._settings import PLUGIN_NAME, RaySettings

    registry.plugins.require(PLUGIN_NAME, "enable_ray")
    base = registry.plugin_settings(PLUGIN_NAME, RaySettings)
    merged = {**base.model_dump(), **{k.replace("-", "_"): v for k, v in options.items()}}
    try:
        settings = RaySettings.model_validate(merged)
    except ValueError as exc:
        raise ConfigError(f"enable_ray: {exc}") from None
    backend = RayBackend(settings)
    refused = []
    for tool in registry.get_tools(include_disabled=True):
        try:
            if backend.selects(tool):
                backend.check(tool)
        except ToolRejected as exc:
            refused.append(str(exc))
    if refused:
        raise ConfigError("enable_ray: " + "; ".join(refused))
    if settings.address is not None:
        backend.connect()
    state = registry.plugin_state(PLUGIN_NAME)
    old: RayBackend | None = state.get("backend")
    state["backend"] = backend
    registry.add_closer(backend.close)
    # A new value recompiles the call plans (the settings may hold callables, such as a
    # runtime_env's worker_process_setup_hook, so they are not the value).
    registry.set_setting("ray", int(registry.get_setting("ray", 0) or 0) + 1)
    if old is not None:
        old.close()
    return backend


def get_ray(registry: ToolRegistry) -> RayBackend:
    """The registry's :class:`RayBackend` (made from its configuration when needed)."""
    from ._plugin import backend_of

    return backend_of(registry)

