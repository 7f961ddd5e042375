"""``[tool.toolregistry.plugins.ray]``: which tools run on Ray, where Ray is, and what each
task asks of it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._plugin import PLUGIN_NAME as PLUGIN_NAME  # noqa: PLC0414  (re-exported)

DISTRIBUTION = "toolregistry-ray"


class TaskOptions(BaseModel):
    """What a tool's Ray task asks for (``None``: Ray's default). Set for every selected tool
    in the plugin's table, per tool in ``overrides``, or in ``ToolMetadata(extra={"ray":
    {...}})``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)
    memory: int | None = Field(default=None, gt=0, description="bytes of heap memory")
    resources: dict[str, float] | None = None
    runtime_env: dict[str, Any] | None = None

    def ray_options(self) -> dict[str, Any]:
        """The options ``.options(...)`` of a remote function takes, without the unset ones."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class RaySettings(TaskOptions):
    """Options of the ray plugin (TOML keys may use dashes: ``force-cancel``).

    Which tools run on Ray: ``tools`` (globs on tool names), ``namespaces``, ``tags`` (a tool
    with one of these tags or custom tags); a tool whose metadata has ``extra={"ray": True}``
    (or a dict of task options) always does, ``extra={"ray": False}`` never.

    Where Ray is: ``address`` ``None`` starts a local Ray on first use (``init_options`` go to
    ``ray.init``, e.g. ``{num_cpus = 2}``) and stops it when the last registry using it
    closes; ``"auto"``, ``"host:port"`` or ``"ray://host:port"`` connect to a running cluster,
    checked when the plugin is enabled (an unreachable one is an error then, not at the first
    call). A Ray the application connected to itself is used as it is and never stopped.

    Tasks: ``num_cpus`` / ``num_gpus`` / ``memory`` / ``resources`` / ``runtime_env`` for
    every selected tool, ``overrides`` per tool-name glob. ``ship``: how a tool's function
    reaches the workers -- ``"import"`` by its import path (the module must be importable
    there), ``"value"`` pickled with its code, ``"auto"`` by import path for installed modules
    and by value otherwise. ``max_retries``: Ray's retries after a worker or node failure,
    for idempotent tools only (others run at most once); ``force_cancel``: a passed deadline
    kills the worker running the call (else the task is only interrupted, which a call
    blocked outside Python may not notice). ``traceback_frames``: how
    many frames of a remote traceback the model reads. ``carry``: context variables (import
    paths ``"module:attr"``) whose values in the caller's context go into every task (see
    :func:`toolregistry_ray.carry`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    address: str | None = None
    init_options: dict[str, Any] = Field(default_factory=dict)
    connect_timeout: float = Field(default=5.0, gt=0, le=300)
    overrides: dict[str, TaskOptions] = Field(default_factory=dict)
    ship: Literal["auto", "import", "value"] = "auto"
    max_retries: int = Field(default=3, ge=0, le=100)
    force_cancel: bool = True
    traceback_frames: int = Field(default=3, ge=0, le=50)
    carry: tuple[str, ...] = ()
