"""A registry served as an MCP server (stdio or streamable HTTP).

Every enabled tool is listed from ``registry.get_schemas(api_format="mcp")`` (so
``schema_transform`` hooks, think-augment included, apply) and called through
``registry.ainvoke`` (so validation, ``pre_invoke`` / ``post_invoke`` and timeouts apply);
error results become ``isError`` results. Registry changes are announced to every connected
client with ``notifications/tools/list_changed``: on its connection's standalone channel,
whether or not it has a request in flight (2025-11-25 and older), or on its
``subscriptions/listen`` stream (2026-07-28).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import json
import secrets
import warnings
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolregistry.errors import ConfigError
from toolregistry.plugin import continuing, log
from toolregistry.types import answering_in, calling_for, reporting_progress

from ._access import EVERYTHING, NOTHING, Access
from ._convert import to_call_result
from ._fanout import share
from ._heap import frozen_heap
from ._notify import CallChannel, forwarding_logs, level_number, want_level
from ._serve_config import CacheHintEntry, ServeOptions
from ._serve_modern import ApprovalAsk, can_answer, install, is_modern
from ._serve_modern import cache_hints as sdk_cache_hints

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolregistry import ToolRegistry
    from toolregistry.events import ChangeEvent

__all__ = ["REQUEST_KEY", "ServeOptions", "aserve", "build_server", "main", "serve"]

ServeTransport = Literal["stdio", "streamable-http"]

REQUEST_KEY = "mcp_request"
"""A served tool that declares ``Annotated[Any, Injected("mcp_request")]`` receives the SDK's
request context: ``session`` (built for this request: not one to keep for later),
``request_id``, ``meta``, ``request`` (the HTTP request, whose ``scope["user"].access_token``
is the caller's verified token) and ``close_sse_stream``."""


def _verified_token(ctx: Any) -> Any:
    """The verified access token of this request's client (``None``: none)."""
    request = getattr(ctx, "request", None)
    user = None
    if request is not None:
        user = getattr(request, "scope", {}).get("user")
    return getattr(user, "access_token", None)


def _access(ctx: Any, scopes: dict[str, Access], authenticated: bool) -> Access:
    """What the client behind this request may see: its token's grant (``GrantedToken``),
    else the union of its OAuth scopes' grants when ``scopes`` map any, else everything.
    Over HTTP with authentication configured, a request without a verified token sees
    nothing (the bearer middleware has refused it before this point anyway)."""
    token = _verified_token(ctx)
    if token is None:
        return NOTHING if authenticated else EVERYTHING
    granted = getattr(token, "access", None)
    if isinstance(granted, Access):
        return granted
    if scopes:
        return Access.union(scopes[s] for s in token.scopes if s in scopes)
    return EVERYTHING


def _unknown(name: str) -> Any:
    """The answer to a call of a tool this client may not see: the same as for a tool that
    does not exist, without the registry's suggestions (they could name hidden tools)."""
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(
        type="text", text=f"Error: there is no tool named {name!r}. Call only the tools you "
                          "were given, by their exact names.")], is_error=True)


def build_server(registry: ToolRegistry, *, name: str | None = None,
                 include_deferred: bool = False, instructions: str | None = None,
                 tool_log_level: str | None = "info",
                 scopes: dict[str, Access] | None = None,
                 authenticated: bool = False,
                 cache_hints: dict[str, CacheHintEntry | dict[str, Any]] | None = None,
                 request_state_key_env: str | None = None) -> Server[Any]:
    """The SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call`` from
    ``registry``. Use it to mount the registry into your own MCP application.

    A tool's ``ToolContext.report_progress`` becomes ``notifications/progress`` when the
    client sent a progress token; its log records (``logging``, at ``tool_log_level`` or
    above, or the level the client set with ``logging/setLevel``) become
    ``notifications/message``. With a ``store`` configured, the registry shares its
    tool-list changes with every other registry on it (``share_changes``) and its clients
    hear of theirs too. ``scopes`` maps OAuth scopes to the tools they grant (for
    verifiers that return the SDK's plain ``AccessToken``); ``authenticated``: requests
    without a verified token see no tool. ``cache_hints``: per list (``"tools/list"``),
    ``{"ttl-ms": ..., "cache-scope": ...}`` for 2026-07-28 clients. ``requestState`` is
    sealed under the secret in the environment variable ``request_state_key_env`` (default: a
    key of this process). A call held for approval is asked of the user of a 2026-07-28
    client that takes elicitation, with an ``InputRequiredResult``.
    """
    import mcp_types as types
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
    from mcp.shared.exceptions import MCPError

    # 2026-07-28 clients hear of changes on subscriptions/listen streams, fed by this bus.
    bus = InMemorySubscriptionBus()
    # The client connections changes are announced to: the SDK's ``Connection`` of each, which
    # lives as long as the client stays (a request's ``ctx.session`` is a proxy built for that
    # request alone, gone when it ends). Weakly: a closed connection is forgotten.
    connections: weakref.WeakSet[Any] = weakref.WeakSet()
    loop_ref: dict[str, asyncio.AbstractEventLoop] = {}
    announcing: set[asyncio.Task[None]] = set()
    # logging/setLevel, per connection (the per-request session proxies share it).
    levels: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
    default_level = None if tool_log_level in (None, "off") else level_number(tool_log_level)
    grants = dict(scopes or {})
    hints = ServeOptions.resolve(cache_hints=cache_hints).cache_hints  # checked, by name
    asking = ApprovalAsk(registry)
    # Whom each connection's calls are for, when its client has no token (calling_for).
    callers: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def token_caller(ctx: Any) -> str | None:
        """The caller named by this request's verified token (``None``: no token)."""
        token = getattr(_verified_token(ctx), "token", None)
        if isinstance(token, str):
            return "mcp-token:" + hashlib.sha256(token.encode()).hexdigest()[:24]
        return None

    def caller(ctx: Any, conn: Any) -> str:
        """Whom this request's calls are for: its client's verified token (hashed: the
        secret itself is kept nowhere), else its connection (a session)."""
        by_token = token_caller(ctx)
        if by_token is not None:
            return by_token
        name = callers.get(conn)
        if name is None:
            name = callers[conn] = "mcp-session:" + secrets.token_hex(12)
        return name

    def connection(ctx: Any) -> Any:
        """The client connection ``ctx``'s request came on (the per-request session's)."""
        return getattr(ctx.session, "_connection", ctx.session)

    def joined(ctx: Any) -> Any:
        """:func:`connection`, remembered for announcements the first time it is seen."""
        conn = connection(ctx)
        if conn not in connections:
            connections.add(conn)
            loop_ref["loop"] = asyncio.get_running_loop()
        return conn

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        joined(ctx)
        schemas = registry.get_schemas(api_format="mcp", include_deferred=include_deferred)
        access = _access(ctx, grants, authenticated)
        if access.restricted:
            allowed = []
            for schema in schemas:
                tool = registry.get_tool(schema["name"])
                if tool is not None and access.allows(tool):
                    allowed.append(schema)
            schemas = allowed
        return types.ListToolsResult(tools=[types.Tool.model_validate(s) for s in schemas])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        conn = joined(ctx)
        tool = registry.get_tool(params.name)
        access = _access(ctx, grants, authenticated)
        if access.restricted and (tool is None or not access.allows(tool)):
            return _unknown(params.name)  # type: ignore[no-any-return]
        meta = ctx.meta or {}
        wants_progress = meta.get("progress_token", meta.get("progressToken")) is not None
        channel = CallChannel(ctx, min_level=levels.get(conn, default_level),
                              allowed=getattr(ctx.session, "_allowed_log_levels", None))
        # the caller's trace context (W3C traceparent in _meta) continues around the call
        carrier = {k: v for k, v in dict(meta).items() if isinstance(v, str)}
        # A retry answering the approval asked of the client's user: the state is sealed and
        # bound to this request (and token), so the call is its first request's caller's.
        answered = asking.state(params)
        whom = (answered or {}).get("caller") or caller(ctx, conn)
        try:
            # answering_in: tools that return tool definitions answer in MCP's dialect
            with channel.active(), reporting_progress(channel.progress if wants_progress
                                                      else None), continuing(registry, carrier), \
                    answering_in("mcp"), calling_for(str(whom)):
                if answered is not None:
                    result = await asking.resume(answered, params, context={REQUEST_KEY: ctx})
                else:
                    result = await registry.ainvoke(params.name, dict(params.arguments or {}),
                                                    context={REQUEST_KEY: ctx})
        finally:
            await channel.aclose()
        if result.pending and result.approval is not None and answered is None \
                and can_answer(ctx):
            return asking.question(result)
        if isinstance(result.value, MCPError) and result.ok:
            raise result.value  # the tool's protocol error (a capability the client lacks)
        if isinstance(result.value, types.InputRequiredResult) and result.ok:
            if is_modern(ctx):
                return result.value
            return types.CallToolResult(content=[types.TextContent(
                type="text", text=f"Error: the tool {params.name!r} needs input from the "
                                  "client, which this client cannot give (it needs protocol "
                                  "revision 2026-07-28).")], is_error=True)
        wants_structured = tool is not None and tool.output_schema is not None
        out = to_call_result(result)
        if wants_structured and out.structured_content is None and not result.is_error:
            # A tool with an outputSchema must send structuredContent; its text is JSON.
            try:
                parsed = json.loads(result.text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                out.structured_content = parsed
        return out

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        levels[connection(ctx)] = number = level_number(params.level)
        want_level(number)
        return types.EmptyResult()

    async def tell(conn: Any) -> None:
        # The connection's standalone channel (stdio's pipe, the HTTP client's GET stream),
        # as the SDK sends it: the SDK drops it where the protocol era does not carry it
        # (2026-07-28: only subscriptions/listen streams do) or the channel is gone.
        try:
            await conn.send_tool_list_changed()
        except Exception as exc:  # a client that went away
            log.debug("mcp.notify_failed", error=f"{type(exc).__name__}: {exc}")

    async def announce() -> None:
        # Once to each connection, all at once: a client that stopped reading holds up no one.
        await asyncio.gather(*[tell(conn) for conn in list(connections)])
        await bus.publish(ToolsListChanged())  # to every subscriptions/listen stream

    def start_announcing() -> None:
        task = asyncio.get_running_loop().create_task(announce())
        announcing.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(announcing.discard)

    def announce_soon(kind: str, details: Any) -> None:
        if kind == "metadata" and not details.get("schema_changed"):
            return
        loop = loop_ref.get("loop")
        if loop is not None and not loop.is_closed():
            # Not in the context of whatever made the change (a call's, with its log routing)
            loop.call_soon_threadsafe(start_announcing, context=contextvars.Context())

    def changed(event: ChangeEvent) -> None:
        announce_soon(event.kind, event.details)

    @contextlib.asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        # A listen stream may be a worker's only client: announcements need its loop.
        loop_ref.setdefault("loop", asyncio.get_running_loop())
        # Tools' log records reach the client only while the server runs.
        with forwarding_logs(default_level):
            yield {}

    registry.on_change(changed)
    shared = share(registry)  # with a store: every worker's and host's changes
    if shared is not None:
        # Told even when nothing changed here: behind a load balancer, this worker's clients
        # list the tools of whichever worker their next request reaches.
        shared.on_remote(lambda change: announce_soon(change.kind, change.details))
    with warnings.catch_warnings():
        # The SDK marks logging deprecated for the 2026-07-28 protocol (SEP-2577); clients of
        # the handshake protocols still use logging/setLevel, and the issue asks for it.
        warnings.simplefilter("ignore")
        server = _server_class()(
            name or getattr(registry, "name", None) or "toolregistry",
            version=_version(),
            instructions=instructions,
            lifespan=lifespan,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_level,
            on_subscriptions_listen=ListenHandler(bus),
            cache_hints=sdk_cache_hints(hints),
        )
    install(server, key_env=request_state_key_env, principal=token_caller)
    return server


@functools.cache
def _server_class() -> type[Server[Any]]:
    """The SDK's ``Server``, advertising ``tools.listChanged`` by default.

    The registry announces every change, on every transport. The SDK's streamable-HTTP
    session manager builds each session's ``initialize`` answer from
    ``create_initialization_options()`` with no arguments, so the default is where the
    capability must be said (otherwise HTTP sessions advertise ``listChanged: false``).
    """
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.models import InitializationOptions

    class RegistryServer(Server[Any]):
        def create_initialization_options(
            self, notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> InitializationOptions:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities, extensions)

    return RegistryServer


def _options(registry: ToolRegistry, transport: str | None, options: dict[str, Any]
             ) -> ServeOptions:
    """The ``[tool.toolregistry.plugins.mcp.serve]`` table with ``options`` on top."""
    table: Any = None
    config = getattr(registry, "config", None)
    if config is not None:
        table = config.plugin_table("mcp").get("serve")
    resolved = ServeOptions.resolve(table, transport=transport, **options)
    if table and config is not None and config.path is not None:
        # Files named in the configuration are relative to the configuration file.
        base = Path(config.path).parent
        for entry in resolved.tokens if "tokens" not in options else ():
            if entry.file is not None:
                entry.file = str(base / Path(entry.file).expanduser())
        if resolved.tls_cert is not None and "tls_cert" not in options:
            resolved.tls_cert = str(base / Path(resolved.tls_cert).expanduser())
        if resolved.tls_key is not None and "tls_key" not in options:
            resolved.tls_key = str(base / Path(resolved.tls_key).expanduser())
    return resolved


def server_for(registry: ToolRegistry, options: ServeOptions) -> Server[Any]:
    """:func:`build_server` as ``options`` say."""
    scopes: dict[str, Access] = {}
    if options.oauth is not None:
        scopes = {name: rule.access() for name, rule in options.oauth.scopes.items()}
    authenticated = options.transport == "streamable-http" and (
        options.auth != "none" or options.token_verifier is not None)
    return build_server(registry, name=options.name, include_deferred=options.include_deferred,
                        tool_log_level=options.tool_log_level, scopes=scopes,
                        authenticated=authenticated, cache_hints=dict(options.cache_hints),
                        request_state_key_env=options.request_state_key_env)


async def aserve(registry: ToolRegistry, transport: ServeTransport | None = None,
                 **options: Any) -> None:
    """Async :func:`serve` (runs until cancelled, or until stdin closes for stdio)."""
    opts = _options(registry, transport, options)
    if opts.workers > 1:
        raise ConfigError(
            f"serve: workers = {opts.workers} needs each worker process to build the registry "
            "itself, and a registry object cannot be shared by processes: run toolregistry "
            "serve --workers N, or toolregistry_mcp.serve_workers(config, workers=N), which "
            "build it from the configuration in every worker")
    server = server_for(registry, opts)
    if opts.transport == "stdio":
        from mcp.server.stdio import stdio_server

        log.info("mcp.serving", transport="stdio", tools=len(registry))
        with frozen_heap():
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        return
    import uvicorn

    from ._http import http_app, uvicorn_options

    app = http_app(server, opts)
    config = uvicorn.Config(app, host=opts.host, port=opts.port, **uvicorn_options(opts))
    scheme = "https" if opts.tls_cert else "http"
    url = f"{scheme}://{opts.host}:{opts.port}{opts.path}"
    log.info("mcp.serving", transport="streamable-http", url=url, tools=len(registry),
             auth=opts.auth)
    server_ = uvicorn.Server(config)
    with frozen_heap():
        try:
            await server_.serve()
        except asyncio.CancelledError:
            # Cancelled (aserve's documented way to stop): close the listening sockets and
            # connections as a signal would, rather than leave them to the collector.
            if getattr(server_, "servers", None):
                server_.should_exit = True
                await server_.shutdown()
            raise


def serve(registry: ToolRegistry, transport: ServeTransport | None = None,
          **options: Any) -> None:
    """Serve every tool of ``registry`` as an MCP server; blocks until the server stops.

    ``transport="stdio"`` speaks MCP on stdin/stdout (nothing else may write to stdout);
    ``"streamable-http"`` listens on ``http://host:port{path}``. ``options`` are the fields
    of :class:`ServeOptions` (``host``, ``port``, ``auth``, ``tokens``, ``oauth``,
    ``allowed_hosts``, ``tls_cert``, ...), on top of ``[tool.toolregistry.plugins.mcp.serve]``.
    A non-loopback address is refused without authentication; Host and Origin are checked
    on every bind. Deferred tools are hidden unless ``include_deferred=True``.
    """
    import anyio

    anyio.run(lambda: aserve(registry, transport, **options))


def main(argv: list[str] | None = None) -> int:
    """``python -m toolregistry_mcp serve``: serve the registry of ``[tool.toolregistry]``
    (the same options as ``toolregistry serve``)."""
    import argparse

    from toolregistry.plugin import CommandContext

    from . import _cli

    parser = argparse.ArgumentParser(prog="python -m toolregistry_mcp",
                                     description="Serve a toolregistry over MCP.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help=_cli.HELP)
    p.add_argument("--config", help="pyproject.toml with [tool.toolregistry] (default: nearest)")
    _cli.arguments(p)
    args = parser.parse_args(argv)
    context = CommandContext(args, args.config)
    try:
        return _cli.run(context)
    finally:
        context.close()


def _version() -> str:
    from ._session import _version as v

    return v()
