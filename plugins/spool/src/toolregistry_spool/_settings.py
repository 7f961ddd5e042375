"""``[tool.toolregistry.plugins.spool]``: the plugin's options, validated by pydantic."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolregistry.plugin import ConfigPath

PLUGIN_NAME = "spool"
DEFAULT_READER_NAME = "read_tool_output"


class SpoolSettings(BaseModel):
    """Options of the spool plugin (TOML keys use dashes: ``threshold-tokens``).

    ``all_tools``: spool every tool's long output unless the tool sets
    ``too_long_to_file=False`` (default: only tools that set it ``True``).
    ``threshold_tokens``: outputs over this many tokens are spooled; the model receives at most
    this many. ``token_counter``: ``"pkg.mod:fn"``, an exact ``fn(text) -> int`` used instead of
    the fast estimate. ``directory``: where per-registry spool folders are made (default: the
    user's cache folder; relative to the configuration file); every registry with the same directory reads the handles of all. ``max_age_seconds`` / ``max_total_bytes``: retention, oldest evicted
    first. ``keep``: leave the files on ``close()``. ``tail_fraction``: share of the preview
    given to the end of the output. ``reader``: register the reader tool (``False``: the notice
    names the file path instead, for agents with their own file tools). ``reader_name``: its
    name. ``wrap_bytes``: lines longer than this are read as several numbered lines.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    all_tools: bool = False
    threshold_tokens: int = Field(default=20_000, ge=100)
    token_counter: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    directory: ConfigPath | None = None
    max_age_seconds: float = Field(default=86_400.0, gt=0)
    max_total_bytes: int = Field(default=1 << 30, gt=0)
    keep: bool = False
    tail_fraction: float = Field(default=0.2, ge=0.0, le=0.8)
    reader: bool = True
    reader_name: str = Field(default=DEFAULT_READER_NAME, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    wrap_bytes: int = Field(default=2000, ge=256, le=1_000_000)
