"""A persistent MCP client session, shared by every thread and event loop of the process.

The session lives on one event loop (:mod:`._loop`: the plugin's background loop, or with
``session_loop="running"`` the application's own) in one *runner* task that enters the
transport and the SDK's ``ClientSession`` and leaves them again (anyio needs both in the same
task). Calls are separate tasks on that loop; callers reach them through :func:`._loop.run`
(sync) or :func:`._loop.arun` (async, from any loop; no hand-over on the session's own loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from toolregistry.errors import ConfigError, ToolCallError
from toolregistry.plugin import log

from . import _loop
from ._spec import ServerSpec, child_environment, make_non_dumpable, parse_server

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.session import ClientSession

    from toolregistry.types import ProgressReporter

__all__ = ["MCPClient", "MCPConnectError"]

ToolsChanged = Callable[["MCPClient"], Awaitable[None]]

_STDERR_TAIL = 4000  # bytes of a child's stderr kept for error messages
_MAX_PAGES = 1000  # a server whose tools/list cursor never ends cannot hang a load

_live: weakref.WeakSet[MCPClient] = weakref.WeakSet()

SESSION_LOOPS = ("background", "running")


class MCPConnectError(ToolCallError):
    """An MCP server could not be started or reached, or did not complete the handshake."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="remote")


class _StderrTail(asyncio.Protocol):
    """Keeps the last bytes a stdio server wrote to stderr (for error messages) and logs
    them at debug level; bounded memory whatever the server writes."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.buffer: deque[bytes] = deque()
        self.size = 0
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer.append(data)
        self.size += len(data)
        while self.size > _STDERR_TAIL and len(self.buffer) > 1:
            self.size -= len(self.buffer.popleft())
        if log.is_debug():
            log.debug("mcp.server_stderr", server=self.display,
                      text=data.decode("utf-8", "replace")[-500:])

    def text(self) -> str:
        return b"".join(self.buffer).decode("utf-8", "replace")[-_STDERR_TAIL:].strip()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class _WatchedStream:
    """The transport's read stream, reporting end of stream so that a server that died while
    idle is restarted *before* the next call is sent (instead of failing that call)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._on_eof()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:
            self._on_eof()
            raise

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._on_eof()
        return await self._inner.__aexit__(*exc)  # type: ignore[no-any-return]


@attrs.define(eq=False)
class _Connection:
    """One live session (one child process or HTTP session) and its runner task."""

    session: ClientSession | None = None
    init: mcp_types.InitializeResult | None = None
    runner: asyncio.Task[None] | None = None
    stop: asyncio.Event = attrs.field(factory=asyncio.Event)
    dead: bool = False
    stderr: _StderrTail | None = None
    error: BaseException | None = None  # why the transport failed, when it knows
    dispatcher: Any = None  # the session's JSON-RPC dispatcher (for the lenient path)
    lenient: bool = False  # the server's listing fails the SDK's validation
    pid: int | None = None  # a stdio server's process (and process group) id
    refused: tuple[int, str] | None = None  # an HTTP 401 / 403 and its WWW-Authenticate


def _refusals(conn: _Connection) -> Callable[[Any], Awaitable[None]]:
    """An httpx response hook keeping the server's last 401 / 403 (the SDK reports them as
    a bare "Server returned an error response")."""

    async def hook(response: Any) -> None:
        # A 403 (insufficient scope) says more than the 401 that may follow a failed step-up.
        if response.status_code in (401, 403) and (conn.refused is None
                                                   or conn.refused[0] != 403):
            conn.refused = (response.status_code,
                            str(response.headers.get("www-authenticate", "")))

    return hook


def _oauth_error(exc: BaseException | None) -> str | None:
    """The SDK's OAuth client error behind ``exc`` (its cause or context), if any."""
    from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError

    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (OAuthFlowError, OAuthRegistrationError)):
            return f"{type(exc).__name__}: {str(exc)[:500]}"
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        else:
            exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _refusal_hint(refused: tuple[int, str], have_auth: bool) -> str:
    status, challenge = refused
    said = f" (WWW-Authenticate: {challenge[:300]})" if challenge else ""
    if status == 401:
        todo = ("the credentials were not accepted: check the token or the OAuth client, or "
                "delete the stored tokens to sign in again" if have_auth else
                "give it credentials: auth = { grant = \"authorization_code\" } (OAuth, a "
                "user signs in) or { grant = \"client_credentials\", client-id = ..., "
                "client-secret-env = ..., issuer = ... }, or headers = { Authorization = "
                "\"Bearer ...\" }")
        return f"answered HTTP 401 Unauthorized{said}: it requires authentication; {todo}"
    return (f"answered HTTP 403 Forbidden{said}: the credentials are valid but not allowed "
            "(a missing scope: ask for it with auth.scope, or use another account)")


def _first_error(exc: BaseException) -> BaseException:
    """The innermost meaningful exception of an (anyio) exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


class MCPClient:
    """A client for one MCP server: connect, list tools, call tools, close.

    ``server`` is a stdio spec (``{"command", "args", "env", "cwd"}``), a path to a ``.py`` /
    ``.js`` server script, or an ``http(s)`` URL (streamable HTTP; SSE when the URL ends with
    ``/sse`` or ``transport="sse"``). Sessions are persistent and shared by every caller
    (``persistent=False`` opens one session per call). ``shutdown_grace`` is how long a stdio
    server may take to exit after its stdin closes before it is terminated. Every method has a
    blocking form and an ``a``-prefixed coroutine form usable from any event loop.
    ``close()`` (or leaving the ``with`` block) ends the server process; so does interpreter
    exit.

    ``command_prefix`` is put before a stdio server's command (a sandbox or another user:
    ``("bwrap", ...)``, ``("setpriv", "--reuid=...", ...)``); ``protect_parent=True`` makes
    this process non-dumpable before the server starts, so that a server running as the same
    user cannot read this process's environment from ``/proc`` (Linux).

    ``session_loop`` says where the session lives. ``"background"`` (default): on the plugin's
    own loop thread, reached from every thread and loop through one hand-over per call.
    ``"running"``: on the event loop of the call that opens it, like the SDK's own
    ``ClientSession``, so async calls on that loop need no hand-over (a blocking call opens it
    on the background loop). Calls from other threads and loops are handed to that loop while
    it runs; a blocking call on its own thread is refused (it would wait for itself). When
    that loop closes the session ends (``asyncio.run`` cancels it and the server is stopped);
    the next call opens a new one.
    """

    def __init__(
        self,
        server: Any,
        *,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        transport: str | None = None,
        timeout: float | None = 60.0,
        connect_timeout: float = 30.0,
        persistent: bool = True,
        inherit_env: tuple[str, ...] = (),
        max_message_bytes: int | None = 64 * 1024 * 1024,
        shutdown_grace: float = 2.0,
        client_name: str = "toolregistry",
        session_loop: str = "background",
        command_prefix: tuple[str, ...] = (),
        protect_parent: bool = False,
        auth: Any = None,
    ) -> None:
        if session_loop not in SESSION_LOOPS:
            raise ValueError(f"session_loop must be one of {', '.join(map(repr, SESSION_LOOPS))}"
                             f", not {session_loop!r}")
        self.spec: ServerSpec = parse_server(server, headers=headers, env=env, cwd=cwd,
                                             transport=transport)
        self._auth: Any = None
        if auth is not None:
            if self.spec.transport == "stdio":
                raise ConfigError(f"MCP server {self.spec.display}: auth= is for HTTP servers "
                                  "(a stdio server is given its credentials in env=)")
            from ._oauth import build_auth

            # An httpx Auth of the application's own, or the options of ours.
            self._auth = auth if hasattr(auth, "async_auth_flow") else \
                build_auth(self.spec.url or "", auth)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.persistent = persistent
        self.inherit_env = tuple(inherit_env)
        self.command_prefix = tuple(command_prefix)
        self.protect_parent = protect_parent
        self.max_message_bytes = max_message_bytes
        self.shutdown_grace = shutdown_grace
        self.client_name = client_name
        self.session_loop = session_loop
        self._home: asyncio.AbstractEventLoop | None = None  # session_loop="running"
        self._guard = threading.Lock()
        self._conn: _Connection | None = None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._listeners: list[ToolsChanged] = []
        self._closed = False
        self._init: mcp_types.InitializeResult | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.invalid_tools: dict[str, str] = {}
        """Tools of the last listing whose definitions were malformed: ``{name: why}``."""
        _live.add(self)
        # The background loop runs while a client is open; this lets go of it exactly once
        # (at close, or when a client that was never closed is collected).
        _loop.hold()
        self._release_loop = weakref.finalize(self, _loop.release)

    # ------------------------------------------------------------------ info
    @property
    def display(self) -> str:
        """How events and errors name this server."""
        return self.spec.display

    @property
    def server_info(self) -> mcp_types.Implementation | None:
        """The server's ``serverInfo`` from the last handshake (``None`` before connecting)."""
        return self._init.server_info if self._init is not None else None

    @property
    def capabilities(self) -> mcp_types.ServerCapabilities | None:
        """The server's ``capabilities`` from the last handshake."""
        return self._init.capabilities if self._init is not None else None

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` from the last handshake."""
        return self._init.instructions if self._init is not None else None

    @property
    def closed(self) -> bool:
        return self._closed

    def on_tools_changed(self, callback: ToolsChanged) -> None:
        """Call ``await callback(client)`` (on the background loop) when the server sends
        ``notifications/tools/list_changed``."""
        self._listeners.append(callback)

    # ------------------------------------------------------------------ where it lives
    def _target(self, *, awaiting: bool) -> asyncio.AbstractEventLoop | None:
        """The loop that holds (or will open) the session; ``None``: the background loop."""
        if self.session_loop == "background":
            return None
        home = self._home
        if home is not None and not home.is_closed():  # every call after the first
            return home
        with self._guard:
            home = self._home
            if home is not None and not home.is_closed():
                return home
            # First use, or the loop that held the session has closed: the session opens on
            # the caller's loop (a blocking caller's: the background loop).
            stale, self._conn = self._conn, None
            if stale is not None:
                _abandon(stale, self.display)
            home = asyncio.get_running_loop() if awaiting else _loop.get_loop()
            self._home = home
            return home

    def run_on_session_loop(self, coro: Any, timeout: float | None = None) -> Any:
        """Run ``coro`` where the session lives and block until it is done."""
        try:
            loop = self._target(awaiting=False)
            return _loop.run(coro, timeout, loop,
                             start_within=None if loop is None else self.connect_timeout)
        except _loop.LoopUnavailable as exc:
            raise ToolCallError(f"MCP server {self.display}: {exc}", kind="execution") from None

    async def arun_on_session_loop(self, coro: Any) -> Any:
        """Await ``coro`` where the session lives (directly when that is this loop)."""
        try:
            return await _loop.arun(coro, self._target(awaiting=True))
        except _loop.LoopUnavailable as exc:
            raise ToolCallError(f"MCP server {self.display}: {exc}", kind="execution") from None

    # ------------------------------------------------------------------ sync API
    def connect(self) -> None:
        """Start the server / open the session now (it is otherwise opened on first use)."""
        self.run_on_session_loop(self._ensure())

    def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool of the server (all pages)."""
        return self.run_on_session_loop(self._list_tools())  # type: ignore[no-any-return]

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                  timeout: float | None = None, progress: ProgressReporter | None = None,
                  meta: Mapping[str, Any] | None = None) -> mcp_types.CallToolResult:
        """Call a tool and return the SDK's ``CallToolResult`` (``isError`` results included;
        transport failures and timeouts raise :class:`~toolregistry.errors.ToolCallError`).
        ``progress(progress, total, message)`` receives the server's progress notifications
        (from the session's thread); ``meta`` goes in the request's ``_meta`` (e.g. W3C
        ``traceparent``)."""
        return self.run_on_session_loop(  # type: ignore[no-any-return]
            self._call_tool(name, arguments, timeout, progress, meta))

    def close(self) -> None:
        """End the session and the server process. Idempotent."""
        if self._closed and self._conn is None:
            return
        home = self._home if self.session_loop == "running" else None
        if self._closed_without_loop(home):
            return
        if _loop.in_loop_thread() or (home is not None and _loop.running_loop() is home):
            # From a callback on the session's loop: cannot block here.
            _loop.submit(self._close(), home)
            return
        _loop.run(self._close(), timeout=30, loop=home)

    def __enter__(self) -> MCPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ async API
    async def aconnect(self) -> None:
        """Async :meth:`connect`."""
        await self.arun_on_session_loop(self._ensure())

    async def alist_tools(self) -> list[mcp_types.Tool]:
        """Async :meth:`list_tools`."""
        return await self.arun_on_session_loop(  # type: ignore[no-any-return]
            self._list_tools())

    async def acall_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                         timeout: float | None = None, progress: ProgressReporter | None = None,
                         meta: Mapping[str, Any] | None = None) -> mcp_types.CallToolResult:
        """Async :meth:`call_tool`; cancelling the awaiting task sends MCP cancellation."""
        return await self.arun_on_session_loop(  # type: ignore[no-any-return]
            self._call_tool(name, arguments, timeout, progress, meta))

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        home = self._home if self.session_loop == "running" else None
        if not self._closed_without_loop(home):
            await _loop.arun(self._close(), home)

    def _closed_without_loop(self, home: asyncio.AbstractEventLoop | None) -> bool:
        """Close here when the loop holding the session can no longer run it (closed or
        stopped): end the server's process group directly. True when that was the case."""
        if home is None or (not home.is_closed() and home.is_running()):
            return False
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            _abandon(conn, self.display)
            log.info("mcp.closed", server=self.display)
        self._release_loop()
        return True

    # ------------------------------------------------------------------ on the loop
    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _ensure(self) -> _Connection:
        if self._closed:
            raise ToolCallError(f"MCP client for {self.display} is closed", kind="remote")
        conn = self._conn
        if conn is not None and not conn.dead:
            return conn
        async with self._get_lock():
            conn = self._conn
            if conn is not None and not conn.dead:
                return conn
            if conn is not None:
                log.info("mcp.reconnecting", server=self.display)
                await self._teardown(conn)
            if self._closed:
                raise ToolCallError(f"MCP client for {self.display} is closed", kind="remote")
            conn = await self._open()
            self._conn = conn
            return conn

    async def _open(self) -> _Connection:
        conn = _Connection()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.runner = asyncio.get_running_loop().create_task(
            self._run(conn, ready), name=f"mcp-session {self.display}"
        )
        try:
            # The runner bounds the handshake itself; this outer bound also covers a
            # transport that hangs while opening (an SSE endpoint that never answers).
            await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout + 10)
        except BaseException as exc:
            await self._teardown(conn)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise self._connect_error(conn, exc) from None
        self._init = conn.init
        info = conn.init.server_info if conn.init else None
        log.info("mcp.connected", server=self.display, transport=self.spec.transport,
                 server_name=info.name if info else None,
                 server_version=info.version if info else None)
        return conn

    def _connect_error(self, conn: _Connection, exc: BaseException) -> MCPConnectError:
        exc = _first_error(exc)
        if isinstance(exc, TimeoutError):
            what = f"did not complete the MCP handshake within {self.connect_timeout:g}s"
        elif isinstance(exc, FileNotFoundError):
            first = (self.command_prefix or (self.spec.command,))[0]
            what = f"could not be started: command {first!r} was not found"
        elif conn.refused is not None:
            what = _refusal_hint(conn.refused, self._auth is not None)
            oauth = _oauth_error(exc)
            if oauth is not None:
                what += f"; signing in with the authorization server failed: {oauth}"
        else:
            what = f"failed to start or connect ({type(exc).__name__}: {exc})"
        msg = f"MCP server {self.display} {what}"
        tail = conn.stderr.text() if conn.stderr is not None else ""
        if tail:
            msg += f"; its stderr ends with:\n{tail[-1500:]}"
        log.error("mcp.connect_failed", server=self.display, error=msg)
        return MCPConnectError(msg)

    async def _run(self, conn: _Connection, ready: asyncio.Future[None]) -> None:
        import anyio
        import mcp_types as types
        from mcp.client.session import ClientSession
        from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

        def mark_dead() -> None:
            if not conn.dead:
                conn.dead = True
                if ready.done() and not conn.stop.is_set():
                    log.warning("mcp.disconnected", server=self.display)
            conn.stop.set()  # end the transport now (the process, its pipes), not at next use

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(conn))
                # Our own dispatcher object, so that the lenient path can send raw requests.
                conn.dispatcher = JSONRPCDispatcher(_WatchedStream(read, mark_dead), write)
                session = ClientSession(
                    dispatcher=conn.dispatcher,
                    message_handler=self._on_message,
                    logging_callback=self._on_log,
                    client_info=types.Implementation(name=self.client_name,
                                                     version=_version()),
                )
                await stack.enter_async_context(session)
                with anyio.fail_after(self.connect_timeout):
                    conn.init = await session.initialize()
                conn.session = session
                ready.set_result(None)
                await conn.stop.wait()
        except BaseException as exc:
            conn.dead = True
            if not ready.done():
                if isinstance(exc, Exception):
                    ready.set_exception(_first_error(exc))
                else:
                    ready.cancel()
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("mcp.session_failed", server=self.display,
                            error=f"{type(_first_error(exc)).__name__}: {_first_error(exc)}")
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            conn.dead = True
            conn.session = None
            if conn.stderr is not None:
                conn.stderr.close()

    @contextlib.asynccontextmanager
    async def _transport(self, conn: _Connection) -> AsyncIterator[Any]:
        spec = self.spec
        if spec.transport == "stdio":
            from ._stdio import stdio_transport

            loop = asyncio.get_running_loop()
            read_fd, write_fd = os.pipe()
            errlog = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
            tail = _StderrTail(self.display)
            conn.stderr = tail

            def fatal(exc: BaseException) -> None:
                conn.error = exc

            if self.protect_parent:
                make_non_dumpable()
            argv = [*self.command_prefix, spec.command or "", *spec.args]
            try:
                await loop.connect_read_pipe(lambda: tail, os.fdopen(read_fd, "rb", 0))
                async with stdio_transport(
                    argv[0], argv[1:],
                    env=child_environment(spec.env, self.inherit_env), cwd=spec.cwd,
                    errlog=errlog, max_message_bytes=self.max_message_bytes, on_fatal=fatal,
                    exit_grace=self.shutdown_grace, on_start=lambda pid: setattr(conn, "pid", pid),
                ) as streams:
                    # The child holds its own copy now; ours would keep the pipe open forever.
                    errlog.close()
                    yield streams
            finally:
                if not errlog.closed:
                    errlog.close()
        elif spec.transport == "streamable-http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with create_mcp_http_client(headers=dict(spec.headers) or None,
                                              auth=self._auth) as http:
                http.event_hooks["response"].append(_refusals(conn))
                async with streamable_http_client(
                        spec.url or "", http_client=http,
                        max_sse_event_size=self.max_message_bytes) as streams:
                    yield streams
        else:
            from mcp.client.sse import sse_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            def factory(headers: dict[str, str] | None = None, timeout: Any = None,
                        auth: Any = None) -> Any:
                http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
                http.event_hooks["response"].append(_refusals(conn))
                return http

            async with sse_client(spec.url or "", headers=dict(spec.headers) or None,
                                  timeout=self.connect_timeout, auth=self._auth,
                                  httpx_client_factory=factory) as streams:
                yield streams

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("mcp.transport_error", server=self.display,
                        error=f"{type(message).__name__}: {message}")
            return
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            log.info("mcp.tools_list_changed", server=self.display)
            for callback in list(self._listeners):
                # Not awaited here: the callback lists tools through this same session, and
                # the dispatcher is waiting for this handler to return.
                task = asyncio.get_running_loop().create_task(self._notify(callback))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _notify(self, callback: ToolsChanged) -> None:
        try:
            await callback(self)
        except Exception as exc:
            log.warning("mcp.refresh_failed", server=self.display,
                        error=f"{type(exc).__name__}: {exc}")

    async def _on_log(self, params: Any) -> None:
        log.debug("mcp.server_log", server=self.display, level=str(params.level),
                  logger=params.logger, data=str(params.data)[:500])

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[_Connection]:
        if self.persistent:
            yield await self._ensure()
            return
        if self._closed:
            raise ToolCallError(f"MCP client for {self.display} is closed", kind="remote")
        conn = await self._open()
        try:
            yield conn
        finally:
            await self._teardown(conn)

    async def _list_tools(self) -> list[mcp_types.Tool]:
        for attempt in (1, 2):
            async with self._session() as conn:
                try:
                    return await self._list_pages(conn)
                except Exception as exc:
                    if attempt == 1 and self._session_expired(conn, exc):
                        continue
                    raise self._call_error("tools/list", exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _list_pages(self, conn: _Connection) -> list[mcp_types.Tool]:
        import mcp_types as types
        from pydantic import ValidationError

        session = conn.session
        assert session is not None
        tools: list[types.Tool] = []
        invalid: dict[str, str] = {}
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with _timeout_scope(self.connect_timeout):
                if not conn.lenient:
                    try:
                        page = await session.list_tools(params=params)
                    except ValidationError:
                        # One malformed tool fails the SDK's whole listing; read the raw
                        # listing instead and drop only the malformed tools.
                        conn.lenient = True
                if conn.lenient:
                    page = await self._raw_list(conn, cursor, invalid)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.invalid_tools = invalid
        return tools

    async def _raw_list(self, conn: _Connection, cursor: str | None,
                        invalid: dict[str, str]) -> mcp_types.ListToolsResult:
        import mcp_types as types
        from pydantic import ValidationError

        assert conn.dispatcher is not None
        raw = await conn.dispatcher.send_raw_request(
            "tools/list", {"cursor": cursor} if cursor else None, self._raw_options(conn))
        items = raw.get("tools")
        if not isinstance(items, list):
            raise ValueError("tools/list result has no 'tools' list")
        good: list[types.Tool] = []
        for index, item in enumerate(items):
            name = item.get("name") if isinstance(item, dict) else None
            try:
                good.append(types.Tool.model_validate(item, by_name=False))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                invalid[str(name or f"#{index}")] = (
                    f"the server's tool definition is malformed ({where}: {first['msg']})")
        next_cursor = raw.get("nextCursor")
        return types.ListToolsResult(tools=good, next_cursor=next_cursor
                                     if isinstance(next_cursor, str) else None)

    def _raw_options(self, conn: _Connection, timeout: float | None = None,
                     on_progress: Any = None) -> Any:
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

        opts: dict[str, Any] = {}
        if on_progress is not None:
            opts["on_progress"] = on_progress
        if conn.init is not None:
            opts["headers"] = {MCP_PROTOCOL_VERSION_HEADER: conn.init.protocol_version}
        if timeout is not None:
            opts["timeout"] = timeout
        return opts

    async def _call_tool(self, name: str, arguments: dict[str, Any] | None,
                         timeout: float | None, progress: ProgressReporter | None = None,
                         meta: Mapping[str, Any] | None = None
                         ) -> mcp_types.CallToolResult:
        import mcp_types as types

        request_meta: Any = dict(meta) if meta else None

        limit = timeout if timeout is not None else self.timeout
        on_progress = None
        if progress is not None:
            report = progress

            async def forward(progress: float, total: float | None, message: str | None
                              ) -> None:
                try:
                    report(progress, total, message)
                except Exception as exc:  # the application's callback; the call goes on
                    log.warning("mcp.progress_callback_failed",
                                error=f"{type(exc).__name__}: {exc}")

            on_progress = forward
        attempts: tuple[int, ...] = (1, 2)
        live = self._conn
        if (self.persistent and live is not None and not live.dead and not live.lenient
                and live.session is not None and not self._closed):
            # The common case, without the session context manager's own cost per call.
            try:
                return await live.session.call_tool(name, arguments or {},
                                                    read_timeout_seconds=limit,
                                                    progress_callback=on_progress,
                                                    meta=request_meta)
            except Exception as exc:
                if not self._session_expired(live, exc):
                    raise self._call_error(name, exc, limit) from None
            attempts = (2,)  # sent once already: one more try, on a new session
        for attempt in attempts:
            async with self._session() as conn:
                session = conn.session
                assert session is not None
                try:
                    if conn.lenient:
                        # The SDK re-lists tools to validate structured output, which fails
                        # for this server; call through the dispatcher, parse the result alone.
                        assert conn.dispatcher is not None
                        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
                        if request_meta:
                            params["_meta"] = request_meta
                        raw = await conn.dispatcher.send_raw_request(
                            "tools/call", params, self._raw_options(conn, limit, on_progress))
                        return types.CallToolResult.model_validate(raw, by_name=False)
                    # The SDK's per-request timeout sends notifications/cancelled when it fires.
                    return await session.call_tool(name, arguments or {},
                                                   read_timeout_seconds=limit,
                                                   progress_callback=on_progress,
                                                   meta=request_meta)
                except Exception as exc:
                    if attempt == 1 and self._session_expired(conn, exc):
                        continue
                    raise self._call_error(name, exc, limit) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _session_expired(self, conn: _Connection, exc: BaseException) -> bool:
        """An HTTP server that forgot our session (it restarted) answers 404, which the SDK
        reports as INVALID_REQUEST "Session terminated" / "Session not found". The server
        refused the request without running it, and the spec says to start a new session:
        so this one case is sent again, once, on a fresh session."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_REQUEST

        exc = _first_error(exc)
        if self.spec.transport == "stdio" or not isinstance(exc, MCPError):
            return False
        text = exc.error.message.lower()
        if exc.code != INVALID_REQUEST or "session" not in text or not any(
                word in text for word in ("not found", "terminated", "expired", "unknown")):
            return False
        conn.dead = True
        log.info("mcp.session_expired", server=self.display, error=exc.error.message)
        return True

    def _call_error(self, what: str, exc: BaseException, limit: float | None = None
                    ) -> ToolCallError:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        exc = _first_error(exc)
        label = f"tool {what!r}" if what != "tools/list" else "tools/list"
        conn = self._conn
        if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
            log.warning("mcp.call_timeout", server=self.display, tool=what, timeout=limit)
            # kind="timeout", not a TimeoutError: a retry policy must never re-send it.
            return ToolCallError(
                f"MCP server {self.display}: {label} did not answer within {limit:g}s; the "
                "request was cancelled (notifications/cancelled sent)", kind="timeout"
            )
        if isinstance(exc, TimeoutError):
            return ToolCallError(
                f"MCP server {self.display}: {label} did not answer in time", kind="timeout"
            )
        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
            return ToolCallError(
                f"MCP server {self.display} rejected {label}: {exc.error.message} "
                f"(JSON-RPC error {exc.code})", kind="remote"
            )
        invalid = _invalid_result(exc)
        if invalid is not None:
            # The answer arrived and was read whole: the session is fine, only this result
            # is unusable. An error result for this call; no restart.
            log.warning("mcp.invalid_result", server=self.display, tool=what, error=invalid)
            return ToolCallError(f"MCP server {self.display}: {label} {invalid}", kind="remote")
        if (self.spec.transport != "stdio" and isinstance(exc, MCPError)
                and "byte limit" in exc.error.message and self.max_message_bytes):
            # The SDK abandoned this request's event stream; the HTTP session goes on.
            from ._stdio import too_large

            log.warning("mcp.message_too_large", server=self.display, tool=what,
                        limit=self.max_message_bytes)
            return ToolCallError(f"MCP server {self.display}: {label} failed: "
                                 f"{too_large(self.max_message_bytes)}", kind="remote")
        if self._closed:
            return ToolCallError(f"MCP client for {self.display} was closed during {label}",
                                 kind="cancelled")
        # Connection lost (the process exited, the HTTP session dropped) or a broken message:
        # the session is unusable; the next call starts a new one. This call is not retried:
        # the server may have acted on it.
        if conn is not None:
            conn.dead = True
        tail = conn.stderr.text() if conn is not None and conn.stderr is not None else ""
        detail = exc.error.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"
        if conn is not None and conn.error is not None:
            detail = str(conn.error)
        if conn is not None and type(conn.error).__name__ == "MessageTooLarge":
            msg = (f"MCP server {self.display}: {label} failed: {detail}. The session was "
                   "ended (a stdio stream cannot skip part of a message); the next call starts "
                   "a new one, and this call was not retried")
        else:
            msg = (f"MCP server {self.display} lost the connection during {label} ({detail}); "
                   "it will be restarted on the next call, and this call was not retried")
        if tail:
            msg += f"; its stderr ends with:\n{tail[-1000:]}"
        log.error("mcp.call_failed", server=self.display, tool=what, error=detail)
        return ToolCallError(msg, kind="remote")

    async def _teardown(self, conn: _Connection) -> None:
        conn.dead = True
        conn.stop.set()
        runner = conn.runner
        if runner is None or runner.done():
            return
        # The SDK's stdio shutdown is bounded (close stdin, 2 s, SIGTERM, 2 s, SIGKILL);
        # the extra margin only guards against a transport that ignores cancellation.
        done, _ = await asyncio.wait({runner}, timeout=12)
        if not done:
            runner.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({runner}, timeout=5)
            log.warning("mcp.close_forced", server=self.display)

    async def _close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        for task in list(self._background):
            task.cancel()
        try:
            if conn is not None:
                await self._teardown(conn)
                log.info("mcp.closed", server=self.display)
        finally:
            self._release_loop()


def _invalid_result(exc: BaseException) -> str | None:
    """How a result the server did send breaks the MCP schema (or its tool's outputSchema),
    or ``None`` when ``exc`` is not about the result."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0] if errors else None
        where = ".".join(str(p) for p in first["loc"]) if first else "?"
        more = f" and {len(errors) - 1} more problem(s)" if len(errors) > 1 else ""
        return (f"returned a result that does not follow the MCP schema "
                f"({where or 'result'}: {first['msg'] if first else exc}{more})")
    if isinstance(exc, RuntimeError) and any(
            word in str(exc) for word in ("structured content", "Invalid schema for tool")):
        return f"returned an invalid result: {exc}"
    return None


@contextlib.contextmanager
def _timeout_scope(seconds: float | None) -> Any:
    import anyio

    with anyio.fail_after(seconds):
        yield


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolregistry-mcp")
    except PackageNotFoundError:  # running from a source tree
        return "0"


def _abandon(conn: _Connection, display: str) -> None:
    """End a session whose event loop has closed or stopped (its runner task can never run
    again): stop the server's whole process group from here."""
    from ._stdio import end_process_group

    conn.dead = True
    pid, conn.pid = conn.pid, None
    if pid is None:
        return
    if end_process_group(pid):
        log.info("mcp.session_abandoned", server=display, pid=pid)
    else:
        log.warning("mcp.close_forced", server=display, pid=pid)


async def _close_all() -> None:
    """At interpreter exit (on the background loop): close every client where it lives."""
    await asyncio.gather(*(c.aclose() for c in list(_live)), return_exceptions=True)


_loop.on_shutdown(_close_all)
