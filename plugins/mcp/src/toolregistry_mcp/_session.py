"""Opening, running and ending one MCP session, and explaining why one failed.

It owns the connection record (:class:`_Connection`: the SDK ``ClientSession``, its runner
task, the child's stderr tail, an HTTP refusal), the runner task that enters the transport
(:mod:`._transports`) and the SDK's client and leaves them again (anyio needs both in the same
task), listening for tool-list changes, and the
messages for a server that could not be started, reached or signed in to
(:class:`MCPConnectError`). :class:`SessionBase` is the part of
:class:`~toolregistry_mcp.MCPClient` that does this on the session's loop; the client
(``_client``) adds where the session lives, listing and calling.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs

from toolregistry.errors import ConfigError, ToolCallError
from toolregistry.plugin import log

from ._transports import open_transport

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.client import Client
    from mcp.client.session import ClientSession

    from ._client import MCPClient
    from ._spec import ServerSpec
    from ._transports import _StderrTail

__all__ = ["MCPConnectError", "Negotiated", "SessionBase", "check_protocol_version"]

ToolsChanged = Callable[["MCPClient"], Awaitable[None]]
InputHandler = Callable[[Any], Any]

class MCPConnectError(ToolCallError):
    """An MCP server could not be started or reached, or did not complete the handshake."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message, kind="remote")
        self.unreachable = unreachable
        """Nothing answered at the server's address (a server that may be restarting)."""


@attrs.frozen
class Negotiated:
    """What the server said when the session opened (``server/discover`` at 2026-07-28,
    the ``initialize`` handshake before)."""

    protocol_version: str
    modern: bool  # 2026-07-28 or later: no session, every request carries its _meta
    server_info: mcp_types.Implementation | None
    capabilities: mcp_types.ServerCapabilities | None
    instructions: str | None


def _negotiated(client: Any) -> Negotiated:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    version = client.protocol_version
    return Negotiated(protocol_version=version, modern=version in MODERN_PROTOCOL_VERSIONS,
                      server_info=client.server_info,
                      capabilities=client.server_capabilities,
                      instructions=client.instructions)


def _input_callback(handler: InputHandler | None, kind: str) -> Any:
    """The SDK callback for an application's input handler (``None``: the SDK's default,
    which declares no capability and refuses)."""
    if handler is None:
        return None
    import inspect

    import mcp_types as types

    result_type: Any = types.ElicitResult if kind == "elicitation" else \
        types.CreateMessageResult

    async def callback(context: Any, params: Any) -> Any:
        answer = handler(params)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Mapping):
            answer = result_type.model_validate(answer)
        return answer

    return callback


@attrs.define(eq=False)
class _Connection:
    """One live session (one child process or HTTP session) and its runner task."""

    session: ClientSession | None = None
    client: Client | None = None  # the SDK's client around the session
    init: Negotiated | None = None
    runner: asyncio.Task[None] | None = None
    stop: asyncio.Event = attrs.field(factory=asyncio.Event)
    dead: bool = False
    stderr: _StderrTail | None = None
    error: BaseException | None = None  # why the transport failed, when it knows
    lenient: bool = False  # the server's listing fails the SDK's validation
    pid: int | None = None  # a stdio server's process (and process group) id
    refused: tuple[int, str] | None = None  # an HTTP 401 / 403 and its WWW-Authenticate


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


def check_protocol_version(value: str) -> str:
    """``"auto"`` (2026-07-28 through ``server/discover``, else the ``initialize`` handshake),
    ``"legacy"`` (the handshake only) or a 2026-era revision (that one, no probe)."""
    if value in ("auto", "legacy"):
        return value  # without the SDK's types: a source loaded from the list cache
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    if value in MODERN_PROTOCOL_VERSIONS:
        return value
    hint = (" (a handshake-era revision: use 'legacy', which negotiates the newest of them "
            "the server speaks)" if value in HANDSHAKE_PROTOCOL_VERSIONS else "")
    raise ConfigError(f"protocol_version must be 'auto', 'legacy' or one of "
                      f"{', '.join(map(repr, MODERN_PROTOCOL_VERSIONS))}, not {value!r}{hint}")


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
        protocol_version: str
        elicitation: InputHandler | None
        sampling: InputHandler | None
        _auth: Any
        _conn: _Connection | None
        _lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None
        _listeners: list[ToolsChanged]
        _verify: ToolsChanged | None
        _closed: bool
        _init: Negotiated | None
        _background: set[asyncio.Task[Any]]
        _release_loop: Callable[[], Any]
        _resend_safe: set[str]

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
        verify, self._verify = self._verify, None
        if verify is not None:  # tools registered from the list cache: list them live now
            self._spawn(verify)
        info = conn.init.server_info if conn.init else None
        log.info("mcp.connected", server=self.display, transport=self.spec.transport,
                 protocol_version=conn.init.protocol_version if conn.init else None,
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
        from ._reconnect import never_sent

        return MCPConnectError(msg, unreachable=never_sent(exc))

    async def _run(self, conn: _Connection, ready: asyncio.Future[None]) -> None:
        import anyio
        import mcp_types as types
        from mcp.client.client import Client

        from . import _tasks

        def mark_dead() -> None:
            if not conn.dead:
                conn.dead = True
                if ready.done() and not conn.stop.is_set():
                    log.warning("mcp.disconnected", server=self.display)
            conn.stop.set()  # end the transport now (the process, its pipes), not at next use

        # The SDK's own client: version negotiation (server/discover first, the initialize
        # handshake for older servers), the per-request _meta envelope and headers, input
        # requests, the tools/list cache. Our part is the transport under it.
        client = Client(
            open_transport(self, conn, mark_dead),
            mode=self.protocol_version,
            message_handler=self._on_message,
            logging_callback=self._on_log,
            elicitation_callback=_input_callback(self.elicitation, "elicitation"),
            sampling_callback=_input_callback(self.sampling, "sampling"),
            client_info=types.Implementation(name=self.client_name, version=_version()),
            extensions=[_tasks.extension()],
        )
        try:
            # One scope around the whole session (anyio needs its task groups entered and
            # left inside it): the deadline covers opening and negotiating, then is lifted.
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.connect_timeout
                async with client:
                    scope.deadline = float("inf")
                    conn.client = client
                    conn.session = client.session
                    conn.init = _negotiated(client)
                    ready.set_result(None)
                    async with anyio.create_task_group() as tasks:
                        if self.listen_for_changes(conn):
                            tasks.start_soon(self._listen, conn, client)
                        await conn.stop.wait()
                        tasks.cancel_scope.cancel()
            if scope.cancelled_caught and not ready.done():
                raise TimeoutError("handshake")
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
            conn.client = None
            if conn.stderr is not None:
                conn.stderr.close()

    def listen_for_changes(self, conn: _Connection) -> bool:
        """A 2026-07-28 server announces tool-list changes only on a ``subscriptions/listen``
        stream: open one when it says its tool list can change."""
        caps = conn.init.capabilities if conn.init is not None else None
        return bool(conn.init is not None and conn.init.modern and caps is not None
                    and caps.tools is not None and caps.tools.list_changed)

    async def _listen(self, conn: _Connection, client: Any) -> None:
        """Until the session ends: each tools-list event goes to the listeners; a lost stream
        is opened again (its events are not replayed, so the listeners refetch)."""
        from mcp.client.subscriptions import ToolsListChanged

        while not conn.stop.is_set():
            try:
                async with client.listen(tools_list_changed=True) as sub:
                    async for event in sub:
                        if isinstance(event, ToolsListChanged):
                            self._tools_changed()
                    return  # the server ended the stream gracefully
            except Exception as exc:
                if conn.stop.is_set() or conn.dead:
                    return
                log.warning("mcp.listen_lost", server=self.display,
                            error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(1.0)
                self._tools_changed()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("mcp.transport_error", server=self.display,
                        error=f"{type(message).__name__}: {message}")
            return
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._tools_changed()

    def _tools_changed(self) -> None:
        log.info("mcp.tools_list_changed", server=self.display)
        for callback in list(self._listeners):
            self._spawn(callback)

    def _spawn(self, callback: ToolsChanged) -> None:
        # Not awaited here: the callback lists tools through this same session, and the
        # dispatcher (or the session's opening) is waiting for this to return.
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

