"""A persistent MCP client session, shared by every thread and event loop of the process.

The session lives on one event loop (:mod:`._loop`: the plugin's background loop, or with
``session_loop="running"`` the application's own) in one *runner* task that enters the
transport and the SDK's ``ClientSession`` and leaves them again (anyio needs both in the same
task). Calls are separate tasks on that loop; callers reach them through :func:`._loop.run`
(sync) or :func:`._loop.arun` (async, from any loop; no hand-over on the session's own loop).

Where the session lives and how callers reach it, the public sync and async API, listing tools
(all pages, leniently when a server's listing breaks the SDK's validation) and calling them
(the one retry on an expired HTTP session, and the error each failure becomes) are here;
opening, running and ending the session itself is :mod:`._session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from toolregistry.errors import ConfigError, ToolCallError
from toolregistry.plugin import log

from . import _loop
from ._deadline import bounded, check_max_timeout, total_limit
from ._listcache import ListCache, Listing, cache_hint, keep
from ._reconnect import resend_after_loss, resend_safe
from ._sdk_private import send_unvalidated
from ._session import (
    InputHandler,
    MCPConnectError,
    Negotiated,
    SessionBase,
    ToolsChanged,
    _abandon,
    _Connection,
    _first_error,
    check_protocol_version,
)
from ._spec import ServerSpec, parse_server

if TYPE_CHECKING:
    import mcp_types

    from toolregistry.types import ProgressReporter

__all__ = ["MCPClient", "MCPConnectError"]

_MAX_PAGES = 1000  # a server whose tools/list cursor never ends cannot hang a load

_live: weakref.WeakSet[MCPClient] = weakref.WeakSet()

SESSION_LOOPS = ("background", "running")

class MCPClient(SessionBase):
    """A client for one MCP server: connect, list tools, call tools, close.

    ``server`` is a stdio spec (``{"command", "args", "env", "cwd"}``), a path to a ``.py`` /
    ``.js`` server script, or an ``http(s)`` URL (streamable HTTP; SSE when the URL ends with
    ``/sse`` or ``transport="sse"``). Sessions are persistent and shared by every caller
    (``persistent=False`` opens one session per call). ``shutdown_grace`` is how long a stdio
    server may take to exit after its stdin closes before it is terminated. Every method has a
    blocking form and an ``a``-prefixed coroutine form usable from any event loop.
    ``close()`` (or leaving the ``with`` block) ends the server process; so does interpreter
    exit.

    ``timeout`` bounds how long a call may go without an answer or a progress notification
    (each one starts it again); ``max_timeout`` (default ten times ``timeout``) bounds it in
    all. A call that loses its connection is sent once more, on a new session, only when the
    server declared its tool read-only or idempotent.

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

    ``protocol_version``: ``"auto"`` (default) asks ``server/discover`` at 2026-07-28 and falls
    back to the ``initialize`` handshake (2025-11-25 and older) for a server that does not
    speak it; ``"legacy"`` only the handshake; ``"2026-07-28"`` that revision without a probe.
    ``elicitation`` / ``sampling`` answer a server's input requests (a multi-round-trip
    call's ``InputRequiredResult`` at 2026-07-28, a server-to-client request before): called
    with the request's params (``mcp_types.ElicitRequestParams`` /
    ``CreateMessageRequestParams``), on the session's loop, they return the result (a model or
    its dict; a coroutine is awaited). Without one, the client declares no such capability and
    a call that needs input fails with an error result saying so.
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
        max_timeout: float | None = None,
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
        protocol_version: str = "auto",
        elicitation: InputHandler | None = None,
        sampling: InputHandler | None = None,
    ) -> None:
        if session_loop not in SESSION_LOOPS:
            raise ValueError(f"session_loop must be one of {', '.join(map(repr, SESSION_LOOPS))}"
                             f", not {session_loop!r}")
        self.protocol_version = check_protocol_version(protocol_version)
        for what, handler in (("elicitation", elicitation), ("sampling", sampling)):
            if handler is not None and not callable(handler):
                raise ConfigError(f"{what}= must be a callable taking the request's params, "
                                  f"not {type(handler).__name__}")
        self.elicitation = elicitation
        self.sampling = sampling
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
        self.max_timeout = check_max_timeout(max_timeout)
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
        self._verify: ToolsChanged | None = None  # once the first session opens
        self.listed_live = False  # the tools were listed by a session of this client
        self.list_cache: ListCache | None = None
        """Where a successful listing is kept (:mod:`._listcache`); ``None``: nowhere."""
        self._list_hint: tuple[float | None, str] = (None, "private")
        self._closed = False
        self._init: Negotiated | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._resend_safe: set[str] = set()  # read-only / idempotent: resent once if lost
        self.invalid_tools: dict[str, str] = {}
        self._as_task: set[str] = set()  # tools whose definition requires a task
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
    def negotiated_version(self) -> str | None:
        """The protocol revision of the open session (``None`` before connecting)."""
        return self._init.protocol_version if self._init is not None else None

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

    def restore_listing(self, listing: Listing, verify: ToolsChanged) -> list[mcp_types.Tool]:
        """Take a cached listing as the server's tools without connecting: what calls need
        to know of them is set from it, and ``await verify(client)`` runs when the first
        session opens (to list the tools live). Returns the cached tools."""
        # The cached definitions stand in for the SDK's models (the parts the source reads).
        tools = cast("list[mcp_types.Tool]", listing.listed())
        self.invalid_tools = dict(listing.invalid)
        self._as_task = set(listing.as_task)
        self._resend_safe = {tool.name for tool in tools if resend_safe(tool)}
        self._verify = verify
        return tools

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
        call = self._call_tool(name, arguments, timeout, progress, meta)
        home = self._home
        if (self.session_loop != "background" and home is not None
                and home is _loop.running_loop() and not home.is_closed()):
            return await call  # the session's own loop (every call after the first): no hop
        return await self.arun_on_session_loop(call)  # type: ignore[no-any-return]

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

    # ------------------------------------------------------------------ listing and calling
    async def _list_tools(self) -> list[mcp_types.Tool]:
        for attempt in (1, 2):
            async with self._session() as conn:
                try:
                    tools = await self._list_pages(conn)
                except Exception as exc:
                    if attempt == 1 and self._session_expired(conn, exc):
                        continue
                    raise self._call_error("tools/list", exc) from None
                self.listed_live = True
                if self.list_cache is not None:
                    await keep(self, tools)
                return tools
        raise AssertionError("unreachable")  # pragma: no cover

    async def _list_pages(self, conn: _Connection) -> list[mcp_types.Tool]:
        import mcp_types as types
        from pydantic import ValidationError

        client = conn.client
        assert client is not None
        tools: list[types.Tool] = []
        invalid: dict[str, str] = {}
        cursor: str | None = None
        self._list_hint = (None, "private")
        for page_number in range(_MAX_PAGES):
            with _timeout_scope(self.connect_timeout):
                if not conn.lenient:
                    try:
                        # The SDK client's listing honours the server's cache hints.
                        page = await client.list_tools(cursor=cursor)
                    except ValidationError:
                        # One malformed tool fails the SDK's whole listing; read the raw
                        # listing instead and drop only the malformed tools.
                        conn.lenient = True
                if conn.lenient:
                    page = await self._raw_list(conn, cursor, invalid)
            if page_number == 0 and not conn.lenient:
                self._list_hint = cache_hint(conn.init, page)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self._as_task = set()
        kept: list[types.Tool] = []
        for tool in tools:
            support = tool.execution.task_support if tool.execution is not None else None
            if support == "required" and not self._tasks_offered(conn):
                invalid[tool.name] = (
                    "it must be called as a task (execution.taskSupport is \"required\"), and "
                    "the server does not offer task-augmented tools/call on this session "
                    f"(protocol {conn.init.protocol_version if conn.init else '?'})")
                continue
            if support == "required" and not (conn.init and conn.init.modern):
                # At 2025-11-25 the client asks for the task; at 2026-07-28 the server decides.
                self._as_task.add(tool.name)
            kept.append(tool)
        self._resend_safe = {tool.name for tool in kept if resend_safe(tool)}
        self.invalid_tools = invalid
        return kept

    @staticmethod
    def _tasks_offered(conn: _Connection) -> bool:
        """The server runs ``tools/call`` as tasks (2025-11-25 core tasks; at 2026-07-28 the
        ``io.modelcontextprotocol/tasks`` extension)."""
        caps = conn.init.capabilities if conn.init is not None else None
        if conn.init is not None and conn.init.modern:
            from ._tasks import offered

            return offered(caps)
        tasks = caps.tasks if caps is not None else None
        return bool(tasks is not None and tasks.requests is not None
                    and tasks.requests.tools is not None
                    and tasks.requests.tools.call is not None)

    async def _raw_list(self, conn: _Connection, cursor: str | None,
                        invalid: dict[str, str]) -> mcp_types.ListToolsResult:
        import mcp_types as types
        from pydantic import ValidationError

        raw = await self._send_raw(conn, "tools/list", {"cursor": cursor} if cursor else {})
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

    async def _send_raw(self, conn: _Connection, method: str, params: dict[str, Any],
                        timeout: float | None = None, on_progress: Any = None
                        ) -> dict[str, Any]:
        """A request whose result is parsed here, not by the SDK."""
        assert conn.session is not None
        return await send_unvalidated(conn.session, method, params, timeout, on_progress)

    async def _call_tool(self, name: str, arguments: dict[str, Any] | None,
                         timeout: float | None, progress: ProgressReporter | None = None,
                         meta: Mapping[str, Any] | None = None
                         ) -> mcp_types.CallToolResult:
        _tasks = _tasks_module()
        limit = timeout if timeout is not None else self.timeout
        # A 2026-07-28 server may answer with a task; the tasks claim finishes it by then.
        token = _tasks.scope.set(_tasks.CallScope.start(self.display, name, limit))
        try:
            return await self._call(name, arguments, limit, progress, meta)
        finally:
            _tasks.scope.reset(token)

    async def _call(self, name: str, arguments: dict[str, Any] | None, limit: float | None,
                    progress: ProgressReporter | None, meta: Mapping[str, Any] | None
                    ) -> mcp_types.CallToolResult:
        import mcp_types as types

        request_meta: Any = dict(meta) if meta else None
        cap = total_limit(limit, self.max_timeout)
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
        if name in self._as_task:
            from ._tasks import call_as_task

            async with self._session() as conn:
                try:
                    return await call_as_task(conn.session, name, arguments, request_meta)
                except ToolCallError:
                    raise
                except Exception as exc:
                    raise self._call_error(name, exc, limit) from None
        attempts: tuple[int, ...] = (1, 2)
        live = self._conn
        if (self.persistent and live is not None and not live.dead and not live.lenient
                and live.client is not None and not self._closed):
            # The common case, without the session context manager's own cost per call.
            # The SDK client drives multi-round-trip (input-required) calls to their end.
            try:
                fast = live.client
                return await bounded(
                    lambda report: fast.call_tool(name, arguments or {},
                                                  progress_callback=report, meta=request_meta),
                    on_progress, limit, cap)
            except ToolCallError:
                raise
            except Exception as exc:
                if not (self._session_expired(live, exc)
                        or await resend_after_loss(self, live, name, exc)):
                    raise self._call_error(name, exc, limit) from None
            attempts = (2,)  # sent once already: one more try, on a new session
        for attempt in attempts:
            async with self._session() as conn:
                client = conn.client
                assert client is not None
                try:
                    if conn.lenient:
                        # The SDK re-lists tools to validate structured output, which fails
                        # for this server; call through the dispatcher, parse the result alone.
                        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
                        if request_meta:
                            params["_meta"] = dict(request_meta)
                        raw = await bounded(
                            lambda report, p=params, c=conn: self._send_raw(  # type: ignore[misc]
                                c, "tools/call", p, None, report),
                            on_progress, limit, cap)
                        return types.CallToolResult.model_validate(raw, by_name=False)
                    # Giving up cancels the call: the SDK sends notifications/cancelled.
                    return await bounded(
                        lambda report, c=client: c.call_tool(  # type: ignore[misc]
                            name, arguments or {}, progress_callback=report,
                            meta=request_meta),
                        on_progress, limit, cap)
                except ToolCallError:
                    raise
                except Exception as exc:
                    if attempt == 1 and (self._session_expired(conn, exc)
                                         or await resend_after_loss(self, conn, name, exc)):
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
        from ._call_errors import call_error

        return call_error(self, what, exc, limit)


@functools.cache
def _tasks_module() -> Any:
    """The tasks module, imported on first call (it loads the SDK's types), then at the cost
    of a dictionary look-up rather than an import statement on every call."""
    from . import _tasks

    return _tasks


@contextlib.contextmanager
def _timeout_scope(seconds: float | None) -> Any:
    import anyio

    with anyio.fail_after(seconds):
        yield


async def _close_all() -> None:
    """At interpreter exit (on the background loop): close every client where it lives."""
    await asyncio.gather(*(c.aclose() for c in list(_live)), return_exceptions=True)


_loop.on_shutdown(_close_all)
