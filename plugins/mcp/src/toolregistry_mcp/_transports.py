"""The transports under one MCP session: our stdio transport (with the child's stderr tail),
the SDK's streamable HTTP and SSE clients (with the OAuth ``auth``, the refusal and body-size
hooks), and the read stream that reports a server's end. :mod:`._session` runs a session on
them."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import log

from ._spec import child_environment, make_non_dumpable

if TYPE_CHECKING:
    from ._session import SessionBase, _Connection

__all__ = ["open_transport"]

_STDERR_TAIL = 4000  # bytes of a child's stderr kept for error messages


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


def _refusals(conn: _Connection, endpoint: str) -> Callable[[Any], Awaitable[None]]:
    """An httpx response hook keeping the server's last 401 / 403 (the SDK reports them as
    a bare "Server returned an error response"). Any other answer of the MCP endpoint after
    it (the sign-in worked) forgets it: the error then is the server's own."""

    async def hook(response: Any) -> None:
        # A 403 (insufficient scope) says more than the 401 that may follow a failed step-up.
        if response.status_code in (401, 403):
            if conn.refused is None or conn.refused[0] != 403:
                conn.refused = (response.status_code,
                                str(response.headers.get("www-authenticate", "")))
        elif conn.refused is not None and _same_endpoint(str(response.request.url), endpoint):
            conn.refused = None

    return hook


def _same_endpoint(url: str, endpoint: str) -> bool:
    return url.split("?", 1)[0].rstrip("/") == endpoint.split("?", 1)[0].rstrip("/")


def _bounded_json(limit: int | None) -> Callable[[Any], Awaitable[None]]:
    """An httpx response hook bounding a JSON response body (the SDK bounds SSE events, and
    a 2026-07-28 server answers most requests with plain JSON): past ``limit`` bytes the
    read fails for that request alone, and the session goes on."""
    import httpx2

    class Bounded(httpx2.AsyncByteStream):
        def __init__(self, inner: Any, limit: int) -> None:
            self.inner = inner
            self.limit = limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in self.inner:
                size += len(chunk)
                if size > self.limit:
                    raise httpx2.StreamError(f"response over the {self.limit:,}-byte limit")
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def hook(response: Any) -> None:
        if limit and response.headers.get("content-type", "").startswith("application/json"):
            response.stream = Bounded(response.stream, limit)

    return hook


@contextlib.asynccontextmanager
async def open_transport(self: SessionBase, conn: _Connection, on_eof: Callable[[], None]
                         ) -> AsyncIterator[Any]:
    """The read and write streams of ``self``'s server for one session: the read stream
    reports its end through ``on_eof``."""
    async with _transport(self, conn) as (read, write):
        yield _WatchedStream(read, on_eof), write


@contextlib.asynccontextmanager
async def _transport(self: SessionBase, conn: _Connection) -> AsyncIterator[Any]:
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
            http.event_hooks["response"] += [_refusals(conn, spec.url or ""),
                                             _bounded_json(self.max_message_bytes)]
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
            http.event_hooks["response"].append(_refusals(conn, spec.url or ""))
            return http

        async with sse_client(spec.url or "", headers=dict(spec.headers) or None,
                              timeout=self.connect_timeout, auth=self._auth,
                              httpx_client_factory=factory) as streams:
            yield streams
