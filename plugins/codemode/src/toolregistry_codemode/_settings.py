"""``[tool.toolregistry.plugins.codemode]``: which tools programs see, and the sandbox's limits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ._plugin import PLUGIN_NAME as PLUGIN_NAME  # noqa: PLC0414  (re-exported)

DEFAULT_TOOL_NAME = "run_code"


class CodeModeSettings(BaseModel):
    """Options of the codemode plugin (TOML keys use dashes: ``max-tool-calls``).

    Which tools a program may call: ``include`` / ``exclude`` are globs on tool names (a tool
    is exposed when it matches an ``include`` glob and no ``exclude`` glob); ``namespaces``
    keeps only tools of these namespaces, ``tags`` only tools with one of these tags (a
    :class:`~toolregistry.ToolTag` value or a custom tag); ``None`` keeps all. Deferred tools
    are never listed in the description, but a program reaches them through
    ``call_tool(name, arguments)`` (and finds them with ``discover_tools`` when discovery is
    on); ``include_deferred=False`` hides them from programs too.

    Limits: ``wall_time`` seconds per program (its tool calls included), ``memory_mb`` of
    sandbox heap, ``max_tool_calls`` per program, ``max_output_chars`` printed and returned
    (a program over it is stopped), ``max_recursion_depth``. ``result_chars``: longer results
    are cut to this for the model, unless the spool plugin is installed (it keeps the full
    text in a file and gives the model a reader). ``type_check``: check programs against
    stubs generated from the tools' schemas before they run. ``pool_size`` sandbox workers
    at most, ``warm_workers`` kept started.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_name: str = Field(default=DEFAULT_TOOL_NAME, pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    namespaces: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    include_deferred: bool = True
    wall_time: float = Field(default=30.0, gt=0, le=3600)
    memory_mb: int = Field(default=64, ge=4, le=16_384)
    max_tool_calls: int = Field(default=200, ge=1, le=100_000)
    max_output_chars: int = Field(default=1_000_000, ge=1_000)
    result_chars: int = Field(default=20_000, ge=200)
    max_recursion_depth: int = Field(default=200, ge=10, le=10_000)
    type_check: bool = True
    pool_size: int = Field(default=2, ge=1, le=64)
    warm_workers: int = Field(default=1, ge=0, le=64)
