"""The streamable HTTP face of a served registry: who may reach it (Host / Origin allow-lists
on every bind), who may call it (bearer tokens, or OAuth 2.1 access tokens with Protected
Resource Metadata), what a request may weigh, TLS, and the event store that lets a client
resume a dropped stream. Built from the SDK's own parts (session manager, bearer middleware,
protected-resource route); this module decides how they are put together and refuses unsafe
combinations before anything listens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import import_target, log

from ._events import EventStoreFactory, memory_events
from ._verify import JWTVerifier, StaticTokens, TokenGrant, is_loopback, read_secret

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.lowlevel import Server
    from starlette.applications import Starlette

    from ._serve_config import ServeOptions

__all__ = ["check_bind", "http_app", "resource_url", "uvicorn_options"]

_WILDCARDS = ("0.0.0.0", "::", "")


def _netloc_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def check_bind(options: ServeOptions) -> None:
    """Refuse what must not listen: a non-loopback address without authentication (unless
    ``insecure_no_auth``), a wildcard address without the host names clients use, half a
    TLS configuration."""
    host = options.host
    if not is_loopback(host) and options.auth == "none" and options.token_verifier is None \
            and not options.insecure_no_auth:
        raise ConfigError(
            f"serve: refusing to listen on {host!r} without authentication: anyone who reaches "
            "it could run every tool. Configure auth = 'bearer' (tokens) or 'oauth', bind "
            "127.0.0.1 behind a reverse proxy that authenticates, or pass --insecure-no-auth "
            "(insecure_no_auth=True) if the network itself is trusted")
    if host in _WILDCARDS and not options.allowed_hosts:
        raise ConfigError(
            f"serve: host {host!r} listens on every address, so the Host header cannot be "
            "checked against it: name the host names clients use in allowed_hosts "
            "(--allowed-host mcp.example.com, or 'mcp.example.com:*' for any port)")
    if (options.tls_cert is None) != (options.tls_key is None):
        raise ConfigError("serve: TLS needs both tls_cert and tls_key (PEM files)")


def resource_url(options: ServeOptions, port: int | None = None) -> str:
    """This server's URL as clients reach it: the OAuth resource (token audience)."""
    if options.oauth is not None and options.oauth.resource:
        return options.oauth.resource
    if options.host in _WILDCARDS:
        raise ConfigError("serve: with a wildcard host, OAuth needs oauth.resource (the URL "
                          "clients use, e.g. https://mcp.example.com/mcp)")
    scheme = "https" if options.tls_cert else "http"
    return f"{scheme}://{_netloc_host(options.host)}:{port or options.port}{options.path}"


def _security(options: ServeOptions) -> Any:
    """Host / Origin allow-lists, enforced on every bind (the SDK checks them only when it is
    given them; it does so by itself only for 127.0.0.1, localhost and ::1)."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(options.allowed_hosts)
    origins = list(options.allowed_origins)
    if options.host not in _WILDCARDS:
        bound = _netloc_host(options.host)
        hosts += [bound, f"{bound}:*"]
    if is_loopback(options.host):
        hosts += ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if options.host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            origins += [f"http://{_netloc_host(options.host)}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=list(dict.fromkeys(hosts)),
                                     allowed_origins=list(dict.fromkeys(origins)))


def _verifier(options: ServeOptions, resource: str | None) -> TokenVerifier | None:
    custom = options.token_verifier
    if custom is not None:
        if isinstance(custom, str):
            custom = import_target(custom, "serve: token_verifier")
        if not hasattr(custom, "verify_token") and callable(custom):
            custom = custom()
        if not hasattr(custom, "verify_token"):
            raise ConfigError("serve: token_verifier must have an async verify_token(token) "
                              f"method, got {type(custom).__name__}")
        return custom  # type: ignore[no-any-return]
    if options.auth == "bearer":
        if not options.tokens:
            raise ConfigError("serve: auth = 'bearer' needs tokens (each with env or file)")
        grants = [TokenGrant(t.name, read_secret(env=t.env, file=t.file,
                                                 what=f"bearer token {t.name!r}"), t.access())
                  for t in options.tokens]
        return StaticTokens(grants)
    if options.auth == "oauth":
        oauth = options.oauth
        if oauth is None:
            raise ConfigError("serve: auth = 'oauth' needs the [oauth] table (issuer, ...)")
        assert resource is not None
        return JWTVerifier(
            issuer=oauth.issuer, audience=oauth.audience or [resource], jwks_url=oauth.jwks_url,
            algorithms=oauth.algorithms, required_scopes=oauth.required_scopes,
            scopes={name: rule.access() for name, rule in oauth.scopes.items()},
            leeway=oauth.leeway)
    return None


def event_factory(options: ServeOptions) -> EventStoreFactory | None:
    """The per-session event store factory the options name (``None``: no resumability)."""
    value = options.event_store
    if value is None or value == "none" or options.stateless:
        return None
    if value == "memory":
        return memory_events
    if isinstance(value, str):
        value = import_target(value, "serve: event_store")
    if not callable(value):
        raise ConfigError("serve: event_store must be 'memory', 'none' or a factory returning "
                          f"a new EventStore per session, got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def _session_manager(server: Server[Any], options: ServeOptions,
                     events: EventStoreFactory | None, prefix: str = "") -> Any:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    class SessionManager(StreamableHTTPSessionManager):
        """Gives every session an event store of its own: the SDK names a stream after the
        request id it answers, so one store shared by all sessions would replay one client's
        results to another. Session ids begin with ``prefix`` (the worker that holds them,
        under ``serve --workers``)."""

        def _admit_session(self, requestor: Any) -> Any:
            transport = super()._admit_session(requestor)
            if transport is not None and events is not None:
                transport._event_store = events()
            if transport is not None and prefix and transport.mcp_session_id is not None:
                plain, named = transport.mcp_session_id, prefix + transport.mcp_session_id
                transport.mcp_session_id = named
                self._server_instances[named] = self._server_instances.pop(plain)
                if plain in self._session_owners:
                    self._session_owners[named] = self._session_owners.pop(plain)
            return transport

    return SessionManager(
        app=server, event_store=None, json_response=options.json_response,
        stateless=options.stateless, security_settings=_security(options),
        retry_interval=options.retry_interval if events is not None else None,
        max_request_body_size=options.max_body_bytes)


def http_app(server: Server[Any], options: ServeOptions, *, port: int | None = None,
             session_prefix: str = "") -> Starlette:
    """The Starlette application serving ``server`` at ``options.path`` as ``options`` say
    (session ids beginning with ``session_prefix``)."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from starlette.applications import Starlette
    from starlette.routing import Route

    check_bind(options)
    oauth = options.auth == "oauth"
    resource = resource_url(options, port) if oauth else None
    verifier = _verifier(options, resource)
    manager = _session_manager(server, options, event_factory(options), session_prefix)
    server._session_manager = manager  # the SDK's own apps keep it here too
    endpoint: Any = StreamableHTTPASGIApp(manager)
    routes: list[Any] = []
    middleware: list[Any] = []
    if verifier is not None:
        from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
        from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
        from mcp.server.auth.routes import build_resource_metadata_url
        from pydantic import AnyHttpUrl
        from starlette.middleware import Middleware
        from starlette.middleware.authentication import AuthenticationMiddleware

        metadata_url = None
        required: list[str] = []
        if oauth and resource is not None and options.oauth is not None:
            metadata_url = build_resource_metadata_url(AnyHttpUrl(resource))
            required = list(options.oauth.required_scopes)
            routes += _metadata_routes(options, resource)
        middleware = [Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier),
                                 on_error=_auth_error),
                      Middleware(AuthContextMiddleware)]
        endpoint = RequireAuthMiddleware(endpoint, required, metadata_url)
    routes.insert(0, Route(options.path, endpoint=endpoint))
    log.info("mcp.serve_security", auth=options.auth if verifier is not None else "none",
             host=options.host, tls=options.tls_cert is not None)
    from starlette.middleware import Middleware as _Middleware

    middleware.insert(0, _Middleware(HeaderLimit, max_bytes=options.max_header_bytes))
    return Starlette(routes=routes, middleware=middleware,
                     lifespan=lambda app: manager.run())


class HeaderLimit:
    """Answers 431 to a request whose headers weigh more than ``max_bytes`` in all, before
    any of them is looked at (uvicorn bounds only headers that arrive in pieces)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            size = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ()))
            if size > self.max_bytes:
                from starlette.responses import PlainTextResponse

                log.info("mcp.request_refused", reason="headers too large", bytes=size)
                response = PlainTextResponse("Request headers too large", status_code=431)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _auth_error(conn: Any, exc: Exception) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": "invalid_token", "error_description": "authentication failed"},
                        status_code=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def _metadata_routes(options: ServeOptions, resource: str) -> list[Any]:
    """RFC 9728 Protected Resource Metadata, naming the issuer and the scopes."""
    from mcp.server.auth.routes import create_protected_resource_routes
    from pydantic import AnyHttpUrl

    oauth = options.oauth
    assert oauth is not None
    scopes = oauth.scopes_supported
    if scopes is None:
        scopes = list(dict.fromkeys([*oauth.required_scopes, *oauth.scopes]))
    # Strings, validated by the metadata model, which keeps a path-less issuer as it is
    # (AnyHttpUrl alone would add a slash, and issuers are compared as exact strings).
    return create_protected_resource_routes(
        resource_url=AnyHttpUrl(resource),
        authorization_servers=[oauth.issuer],  # type: ignore[list-item]
        scopes_supported=scopes or None, resource_name=oauth.resource_name)


def uvicorn_options(options: ServeOptions) -> dict[str, Any]:
    """uvicorn settings: the h11 parser with a bound on header bytes (a larger request is
    answered 400 before it reaches the application), and TLS when configured."""
    out: dict[str, Any] = {"http": "h11", "h11_max_incomplete_event_size": options.max_header_bytes,
                           "log_level": "warning", "lifespan": "on"}
    if options.tls_cert is not None:
        out["ssl_certfile"] = options.tls_cert
        out["ssl_keyfile"] = options.tls_key
    return out
