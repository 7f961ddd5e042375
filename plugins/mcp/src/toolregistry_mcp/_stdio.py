"""The stdio transport: spawn an MCP server and frame its newline-delimited JSON-RPC.

Why not the SDK's ``stdio_client``: it re-joins and re-splits its whole line buffer on every
64 KiB read, which is quadratic in the message size (a large result keeps a CPU busy for
long), it has no bound on one message, and it kills the process group only when
the leader itself hangs, so helpers a launcher started (``npx`` -> ``node``) can outlive it.
This transport reads linearly, bounds a message at ``max_message_bytes``, and always ends the
whole process group. It keeps the SDK's shutdown order (close stdin, wait, SIGTERM, wait,
SIGKILL) and its message types; on Windows the SDK's own transport is used.

It is also shorter on the hot path: the SDK's streams are the ``ReadStream`` /
``WriteStream`` protocols of ``mcp.shared._stream_protocols``, and here they sit right on the
subprocess pipes. A message is written to the server's stdin by the task that sends it, and
lines the server writes are parsed as they arrive and queued for the session's receive loop:
no reader or writer task, and no hand-over between tasks, for each message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio

__all__ = ["MessageTooLarge", "stdio_transport", "too_large"]

_EXIT_GRACE = 2.0  # seconds for the server to exit after its stdin closes
_TERM_GRACE = 2.0  # seconds after SIGTERM before SIGKILL
_HIGH_WATER = 64  # parsed messages waiting for the session: stop reading the pipe above this
_LOW_WATER = 16  # ... and read again at or below this


class MessageTooLarge(Exception):
    """The server sent one message larger than the configured bound."""


def too_large(limit: int) -> str:
    """What to say about a message over ``max-message-bytes``: the limit and where to raise it."""
    return (f"the server sent a message larger than the {limit:,}-byte limit; raise "
            "max-message-bytes in [tool.toolregistry.plugins.mcp] (or pass "
            "max_message_bytes= to register_from_mcp) if such results are expected")


class _Inbox:
    """The read stream: lines from the server's stdout, parsed as they arrive."""

    def __init__(self, limit: int, on_fatal: Callable[[BaseException], None] | None) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        self._parse = types.jsonrpc_message_adapter.validate_json
        self._message = SessionMessage
        self._limit = limit
        self._on_fatal = on_fatal
        self._items: deque[Any] = deque()
        self._pending: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._closed = False
        self._paused = False
        self.pipe: asyncio.ReadTransport | None = None  # stdout, for flow control

    # -- fed by the protocol (on the loop) ---------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        if self._eof:
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                rest = len(chunk) - start
                if rest:
                    self._pending.append(chunk[start:])
                    self._size += rest
                if self._limit and self._size > self._limit:
                    self._fail(MessageTooLarge(too_large(self._limit)))
                return
            if self._pending:
                self._pending.append(chunk[start:end])
                line = b"".join(self._pending)
                self._pending.clear()
                self._size = 0
            else:
                line = chunk[start:end]
            start = end + 1
            if self._limit and len(line) > self._limit:  # a whole line within one read
                self._fail(MessageTooLarge(too_large(self._limit)))
                return
            if line.strip():
                try:
                    item: Any = self._message(self._parse(line, by_name=False))
                except ValueError as exc:
                    item = exc  # surfaces in the session's message handler
                self._push(item)

    def _push(self, item: Any) -> None:
        self._items.append(item)
        self._wake()
        if not self._paused and len(self._items) >= _HIGH_WATER and self.pipe is not None:
            self._paused = True
            self.pipe.pause_reading()

    def _fail(self, error: BaseException) -> None:
        if self._on_fatal is not None:
            self._on_fatal(error)
        self._pending.clear()
        if self.pipe is not None:
            self.pipe.close()
        self.feed_eof()

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the ReadStream protocol (the session's receive loop) --------------------------------
    async def receive(self) -> Any:
        while not self._items:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._eof:
                raise anyio.EndOfStream
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        if self._paused and len(self._items) <= _LOW_WATER and self.pipe is not None:
            self._paused = False
            self.pipe.resume_reading()
        return item

    def __aiter__(self) -> _Inbox:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True
        self._items.clear()
        self._wake()

    async def __aenter__(self) -> _Inbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Outbox:
    """The write stream: each message goes to the server's stdin from the task sending it."""

    def __init__(self, protocol: _ServerProtocol) -> None:
        self._protocol = protocol
        self._closed = False

    async def send(self, message: Any) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        protocol = self._protocol
        pipe = protocol.stdin
        if pipe is None or pipe.is_closing() or protocol.stdin_lost:
            raise anyio.BrokenResourceError
        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        pipe.write(data.encode("utf-8") + b"\n")
        if not protocol.writable.is_set():  # the pipe is full: wait for the server to read
            await protocol.writable.wait()
            if protocol.stdin_lost:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> _Outbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _ServerProtocol(asyncio.SubprocessProtocol):
    def __init__(self, inbox: _Inbox) -> None:
        self.inbox = inbox
        self.stdin: asyncio.WriteTransport | None = None
        self.stdin_lost = False
        self.writable = asyncio.Event()
        self.writable.set()
        self.exited = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]
        self.inbox.pipe = transport.get_pipe_transport(1)  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.inbox.feed(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.inbox.feed_eof()
        elif fd == 0:
            self.stdin_lost = True
            self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def process_exited(self) -> None:
        self.exited.set()


@contextlib.asynccontextmanager
async def stdio_transport(command: str, args: list[str], *, env: dict[str, str],
                          cwd: str | None, errlog: IO[str],
                          max_message_bytes: int | None,
                          on_fatal: Callable[[BaseException], None] | None = None,
                          exit_grace: float = _EXIT_GRACE,
                          on_start: Callable[[int], None] | None = None) -> AsyncIterator[Any]:
    """Yield ``(read_stream, write_stream)`` for a server started as ``command args``;
    ``on_start(pid)`` learns the process (and process group) id."""
    if sys.platform == "win32":  # pragma: no cover - the SDK handles Windows job objects
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return

    loop = asyncio.get_running_loop()
    inbox = _Inbox(max_message_bytes or 0, on_fatal)
    transport, protocol = await loop.subprocess_exec(
        lambda: _ServerProtocol(inbox), command, *args, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=errlog, env=env, cwd=cwd, start_new_session=True)
    if on_start is not None:
        on_start(transport.get_pid())
    outbox = _Outbox(protocol)
    try:
        yield inbox, outbox
    finally:
        await outbox.aclose()
        await inbox.aclose()
        with anyio.CancelScope(shield=True):
            await _stop(transport, protocol, exit_grace)


async def _stop(transport: asyncio.SubprocessTransport, protocol: _ServerProtocol,
                exit_grace: float) -> None:
    """Close stdin, give the server a moment, then end its whole process group."""
    stdin = transport.get_pipe_transport(0)
    if stdin is not None:
        stdin.close()
    with anyio.move_on_after(exit_grace):
        await protocol.exited.wait()
    # The leader's pid is the group id (start_new_session); helpers it started are in it.
    pgid = transport.get_pid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        with anyio.move_on_after(_TERM_GRACE if sig == signal.SIGTERM else 2.0):
            while _group_alive(pgid) or transport.get_returncode() is None:
                await anyio.sleep(0.01)
        if not _group_alive(pgid) and transport.get_returncode() is not None:
            break
    transport.close()


def end_process_group(pgid: int) -> bool:
    """Blocking form of the end of :func:`_stop`, for a process whose event loop is gone:
    SIGTERM the group, wait, SIGKILL, wait. True when the group is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return True
        deadline = time.monotonic() + _TERM_GRACE
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return True
            time.sleep(0.01)
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
