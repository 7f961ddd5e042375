"""``[tool.toolregistry.plugins.inspector]``: the execution log's and the web UI's options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolregistry.plugin import ConfigPath

PLUGIN_NAME = "inspector"


class InspectorSettings(BaseModel):
    """Options of the inspector plugin (TOML keys use dashes: ``log-size``).

    ``log``: keep an execution log of the calls: ``"on-use"`` (default) from the moment
    something in this process asks for it (``execution_log(registry)``, an inspector on the
    registry), or from the start when it is also written to a file or the store; ``True``:
    every call from the registry's start; ``False``: the plugin observes nothing.
    ``log_size``: how many calls the in-memory ring buffer keeps (oldest dropped first).
    ``log_db``: an SQLite file (or a store URL) the log is also written to (by a background
    thread), which ``toolregistry log`` reads from another process; default: the kernel's
    ``store``, if any. ``log_retention_seconds`` /
    ``log_max_rows``: rows older or beyond that are deleted from the file.
    ``arguments``: ``"redacted"`` (default) keeps each argument's type and size, never its
    value; ``"full"`` keeps the values (JSON-encoded, cut at ``max_value_chars``).
    ``max_field_chars``: the longest any field of an entry is kept (an error text, a reason).
    ``host`` / ``port`` / ``read_only``: defaults of ``toolregistry inspect``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    log: bool | Literal["on-use"] = "on-use"
    log_size: int = Field(default=10_000, ge=1, le=10_000_000)
    log_db: ConfigPath | None = None
    log_retention_seconds: float = Field(default=7 * 86_400.0, gt=0)
    log_max_rows: int = Field(default=1_000_000, ge=1)
    arguments: Literal["redacted", "full"] = "redacted"
    max_value_chars: int = Field(default=2000, ge=16)
    max_field_chars: int = Field(default=8000, ge=64)
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    read_only: bool = False
