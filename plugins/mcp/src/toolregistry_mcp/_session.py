"""Opening, running and ending one MCP session, and explaining why one failed.

It owns the connection record (:class:`_Connection`: the SDK ``ClientSession``, its runner
task, the child's stderr tail, an HTTP refusal), the transports (our stdio transport, the SDK's
streamable HTTP and SSE clients with the OAuth ``auth``), the runner task that enters them and
the SDK's ``ClientSession`` and leaves them again (anyio needs both in the same task), and the
messages for a server that could not be started, reached or signed in to
(:class:`MCPConnectError`). :class:`SessionBase` is the part of
:class:`~toolregistry_mcp.MCPClient` that does this on the session's loop; the client
(``_client``) adds where the session lives, listing and calling.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import attrs

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log

from ._spec import child_environment, make_non_dumpable

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.session import ClientSession

    from ._client import MCPClient
    from ._spec import ServerSpec

__all__ = ["MCPConnectError", "SessionBase"]

ToolsChanged = Callable[["MCPClient"], Awaitable[None]]

_STDERR_TAIL = 4000  # bytes of a child's stderr kept for error messages

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


class SessionBase:
    """Opening, running and ending the session of an :class:`~toolregistry_mcp.MCPClient`
    (everything here runs on the session's loop). The client's state it uses is set in
    ``MCPClient.__init__`` and declared here for the type checker."""

    if TYPE_CHECKING:
        spec: ServerSpec
        persistent: bool
        connect_timeout: float
        inherit_env: tuple[str, ...]
        command_prefix: tuple[str, ...]
        protect_parent: bool
        max_message_bytes: int | None
        shutdown_grace: float
        client_name: str
        _auth: Any
        _conn: _Connection | None
        _lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None
        _listeners: list[ToolsChanged]
        _closed: bool
        _init: mcp_types.InitializeResult | None
        _background: set[asyncio.Task[Any]]
        _release_loop: Callable[[], Any]

        @property
        def display(self) -> str: ...

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
            await callback(cast("MCPClient", self))
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

