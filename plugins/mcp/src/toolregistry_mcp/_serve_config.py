"""How a registry is served: one model for ``serve(...)``, ``toolregistry serve`` and the
``[tool.toolregistry.plugins.mcp.serve]`` table (command-line options win over the table)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolregistry.errors import ConfigError

from ._access import AccessRule
from ._verify import DEFAULT_ALGORITHMS

__all__ = ["CacheHintEntry", "OAuthResource", "ServeOptions", "TokenEntry"]

# The cacheable results a served registry answers (it serves no prompts nor resources).
CACHED_LISTS = ("tools/list", "server/discover")

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert",
                   "emergency"]


class TokenEntry(AccessRule):
    """``[[tool.toolregistry.plugins.mcp.serve.tokens]]``: one bearer token, read from an
    environment variable or a file, and the tools it may see (all when none are named)."""

    name: str = Field(description="who holds it (in logs, and to tools as the client)")
    env: str | None = Field(None, description="environment variable holding the token")
    file: str | None = Field(None, description="file whose first line is the token")


class CacheHintEntry(BaseModel):
    """``[tool.toolregistry.plugins.mcp.serve.cache-hints."tools/list"]``: how long a
    2026-07-28 client may reuse a list (``ttlMs``) and whether a cache may share it between
    clients (``cacheScope``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    ttl_ms: int = Field(alias="ttl-ms", ge=0, le=2**53 - 1,
                        description="milliseconds the list stays fresh (0: stale at once)")
    cache_scope: Literal["public", "private"] = Field(
        "private", alias="cache-scope",
        description="private: reused within one authorization context; public: shared")


class OAuthResource(BaseModel):
    """``[tool.toolregistry.plugins.mcp.serve.oauth]``: the served registry as an OAuth 2.1
    resource server (MCP authorization)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    issuer: str = Field(description="the authorization server (its metadata names the JWKS)")
    resource: str | None = Field(
        None, description="this server's URL as clients reach it: the token audience and the "
                          "protected-resource identifier (default: the bound address + path)")
    audience: list[str] | None = Field(None, description="accepted 'aud' values "
                                                         "(default: [resource])")
    jwks_url: str | None = Field(None, alias="jwks-url",
                                 description="the issuer's JWKS (default: from its metadata)")
    algorithms: list[str] = Field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    required_scopes: list[str] = Field(default_factory=list, alias="required-scopes",
                                       description="scopes every token must carry (else 403)")
    scopes_supported: list[str] | None = Field(
        None, alias="scopes-supported",
        description="scopes announced in the protected-resource metadata (default: "
                    "required-scopes and the keys of 'scopes')")
    leeway: float = Field(30.0, ge=0, description="clock skew allowed on exp / nbf, seconds")
    scopes: dict[str, AccessRule] = Field(
        default_factory=dict, description="OAuth scope -> the tools it grants; empty: every "
                                          "valid token sees every tool")
    resource_name: str | None = Field(None, alias="resource-name")


class ServeOptions(BaseModel):
    """Everything :func:`toolregistry_mcp.serve` accepts (see docs/mcp.md, "Serving a
    registry" and "Security")."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              arbitrary_types_allowed=True)

    transport: Literal["stdio", "streamable-http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    path: str = "/mcp"
    name: str | None = None
    include_deferred: bool = Field(False, alias="include-deferred")
    json_response: bool = Field(False, alias="json-response")
    stateless: bool = False
    workers: int = Field(
        1, ge=1, le=256,
        description="processes serving (streamable HTTP, stateless only), each building the "
                    "registry from the configuration: toolregistry serve --workers N")
    # -- who may call ---------------------------------------------------------------------
    auth: Literal["none", "bearer", "oauth"] = Field(
        "none", description="none; bearer (the tokens below); oauth (JWTs from 'issuer')")
    tokens: list[TokenEntry] = Field(default_factory=list)
    oauth: OAuthResource | None = None
    token_verifier: Any = Field(
        None, alias="token-verifier",
        description="a TokenVerifier (verify_token(token) -> AccessToken | None), or an "
                    "import target 'module:attr' of one or of a function returning one")
    insecure_no_auth: bool = Field(False, alias="insecure-no-auth",
                                   description="allow a non-loopback bind without auth")
    # -- what may reach it ------------------------------------------------------------------
    allowed_hosts: list[str] = Field(default_factory=list, alias="allowed-hosts",
                                     description="Host header values accepted besides the "
                                                 "bound address ('name:*': any port)")
    allowed_origins: list[str] = Field(default_factory=list, alias="allowed-origins",
                                       description="Origin header values accepted (browsers)")
    tls_cert: str | None = Field(None, alias="tls-cert")
    tls_key: str | None = Field(None, alias="tls-key")
    max_header_bytes: int = Field(16 * 1024, ge=1024, alias="max-header-bytes")
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024, alias="max-body-bytes")
    # -- streams ----------------------------------------------------------------------------
    event_store: Any = Field(
        "memory", alias="event-store",
        description="'memory' (default), 'none', or a factory returning a new EventStore per "
                    "session (an object, or an import target 'module:attr')")
    retry_interval: int | None = Field(1000, ge=0, alias="retry-interval",
                                       description="milliseconds a client waits before "
                                                   "reconnecting a dropped stream")
    tool_log_level: LogLevel | Literal["off"] | None = Field(
        "info", alias="tool-log-level",
        description="lowest level of tools' log records forwarded (and the root logger's "
                    "level while serving, when higher); 'off' (or None): forward none")

    # -- 2026-07-28 -------------------------------------------------------------------------
    cache_hints: dict[str, CacheHintEntry] = Field(
        default_factory=dict, alias="cache-hints",
        description="per result ('tools/list', 'server/discover'): its ttl-ms and cache-scope "
                    "(default: the SDK's, 0 and private)")
    request_state_key_env: str | None = Field(
        None, alias="request-state-key-env",
        description="environment variable holding the secret (32 bytes or more) that seals "
                    "multi-round-trip requestState; every process sharing it accepts the "
                    "others' (default: a key made at start, this process only)")

    @field_validator("cache_hints")
    @classmethod
    def _served_lists(cls, hints: dict[str, CacheHintEntry]) -> dict[str, CacheHintEntry]:
        unknown = sorted(set(hints) - set(CACHED_LISTS))
        if unknown:
            raise ValueError(f"no cache hints for {', '.join(map(repr, unknown))}: a served "
                             f"registry caches these results: {', '.join(CACHED_LISTS)}")
        return hints

    @model_validator(mode="after")
    def _private_when_scoped(self) -> ServeOptions:
        scoped = any(entry.access().restricted for entry in self.tokens) or (
            self.oauth is not None and bool(self.oauth.scopes)) or \
            self.token_verifier is not None
        tools = self.cache_hints.get("tools/list")
        if scoped and tools is not None and tools.cache_scope == "public":
            raise ValueError(
                "cache-hints: tools/list has cache-scope = 'public', but each client "
                "sees the tools its token grants: a shared cache would show one client's list "
                "to another; use 'private'")
        return self

    @classmethod
    def resolve(cls, table: dict[str, Any] | BaseModel | None = None,
                **overrides: Any) -> ServeOptions:
        """The configuration table (or model) with ``overrides`` (non-``None`` ones) on top;
        errors name the option."""
        if isinstance(table, BaseModel):
            table = table.model_dump(by_alias=False, exclude_unset=True)
        data = dict(table or {})
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError.from_validation("MCP serve options", exc, values=False) from None
