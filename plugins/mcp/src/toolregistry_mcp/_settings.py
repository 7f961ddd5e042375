"""``[tool.toolregistry.plugins.mcp]``: the plugin's options, validated by pydantic (the
kernel validates the table when the configuration is loaded, through ``settings_model``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolregistry.errors import ConfigError

__all__ = ["MCPSettings"]


class MCPSettings(BaseModel):
    """``[tool.toolregistry.plugins.mcp]``: defaults for every MCP source of a registry."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    timeout: float = Field(60.0, gt=0, description="seconds a tool call may go without an "
                                                   "answer or a progress notification")
    max_timeout: float | None = Field(None, gt=0, alias="max-timeout",
                                      description="seconds a tool call may take in all, however "
                                                  "much progress it reports (default: ten "
                                                  "times timeout)")
    serve: dict[str, Any] = Field(default_factory=dict,
                                  description="[tool.toolregistry.plugins.mcp.serve]: how "
                                              "`toolregistry serve` serves (ServeOptions)")
    connect_timeout: float = Field(30.0, gt=0, alias="connect-timeout",
                                   description="seconds to start a server and finish the handshake")
    max_result_chars: int = Field(100_000, ge=0, alias="max-result-chars",
                                  description="longer text results are truncated (0: never), "
                                              "unless a plugin keeps them whole (the spool "
                                              "plugin: output_limits)")
    max_message_bytes: int = Field(64 * 1024 * 1024, gt=0, alias="max-message-bytes",
                                   description="largest streamed HTTP message accepted")
    shutdown_grace: float = Field(2.0, ge=0, alias="shutdown-grace",
                                  description="seconds a stdio server may take to exit after "
                                              "its stdin closes, before SIGTERM / SIGKILL")
    inherit_env: list[str] = Field(default_factory=list, alias="inherit-env",
                                   description="extra environment variable names passed to "
                                               "stdio servers")
    session_loop: Literal["background", "running"] = Field(
        "background", alias="session-loop",
        description="where sessions live: the plugin's background loop thread, or the event "
                    "loop that opens them (async applications: no thread hand-over per call)")
    command_prefix: list[str] = Field(
        default_factory=list, alias="command-prefix",
        description="arguments put before every stdio server's command: a sandbox or another "
                    "user (e.g. ['setpriv', '--reuid=mcp', '--regid=mcp', '--init-groups'])")
    protect_parent: bool = Field(
        False, alias="protect-parent",
        description="make this process non-dumpable (Linux prctl) before starting stdio "
                    "servers, so that same-user servers cannot read its environment")
    ordering: Literal["server", "none"] = Field(
        "server", description="'server': in a batch, a call to a tool not declared read-only "
                              "runs in call order relative to the other calls of the same "
                              "server; 'none': the server's tools run concurrently")
    screening: Literal["off", "warn", "strip", "disable", "refuse"] = Field(
        "warn", description="what a tool-poisoning finding in an imported definition does: "
                            "flag it (warn), also strip invisible characters, disable the tool, "
                            "or refuse the whole source")
    list_cache: str | float = Field(
        "auto", alias="list-cache",
        description="how long a server's listed tools are kept, so that a later load "
                    "registers them without starting the server: 'auto' (as long as the "
                    "server's cache hints say; none: not kept), 'off', or a lifetime "
                    "(seconds, or '90s', '10m', '1h', '1d')")

    @field_validator("list_cache", mode="before")
    @classmethod
    def _list_cache(cls, value: Any) -> str | float:
        from ._listcache import list_cache_mode

        try:
            return list_cache_mode(value, "list-cache")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
