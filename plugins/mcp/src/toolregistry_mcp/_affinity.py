"""Sessions across the worker processes of ``toolregistry serve --workers N``.

An MCP session (``Mcp-Session-Id``) lives in the worker that opened it, while the kernel
spreads connections over every worker. So each worker names the sessions it opens after
itself (``w<pid>-<hex>``) and also listens on a unix socket ``<pid>.sock`` in a folder the
supervisor made for this serve (mode 0700: only this user's processes reach it). A request
that names another worker's session is forwarded there as it came (method, path, headers
with ``Mcp-Session-Id``, ``Last-Event-ID`` and ``Authorization``, body), and the answer,
a streamed SSE response too, is passed back as it arrives. The owner serves the request with
the same application, so its Host / Origin checks and authentication apply there as they do
on the public socket. A session whose worker is gone is answered 404 (session not found),
and the client opens a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from toolregistry.plugin import log

__all__ = ["Affinity", "private_listener", "session_prefix"]

_SESSION = re.compile(r"w([1-9][0-9]{0,9})-[0-9a-f]{32}")
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate",
                         b"proxy-authorization", b"te", b"trailer", b"transfer-encoding",
                         b"upgrade"})


def session_prefix() -> str:
    """What the session ids this worker opens begin with."""
    return f"w{os.getpid()}-"


def socket_path(folder: str | Path, pid: int) -> Path:
    return Path(folder) / f"{pid}.sock"


# A unix socket's path holds at most 107 bytes on Linux (fewer on macOS): room for the
# folder's random name and the largest process id.
_MAX_SOCKET_PATH = 100
_LONGEST_NAME = len("toolregistry-serve-xxxxxxxx/4194304.sock") + 1


def socket_folder() -> str:
    """A new folder, only this user's (0700), for the workers' sockets: under the temporary
    folder where a socket path fits there, else under ``/tmp``; a clear error when neither
    can hold one."""
    import tempfile

    from toolregistry.errors import ConfigError

    for base in (tempfile.gettempdir(), "/tmp"):
        if len(os.fsencode(base)) + _LONGEST_NAME <= _MAX_SOCKET_PATH and os.path.isdir(base):
            return tempfile.mkdtemp(prefix="toolregistry-serve-", dir=base)
    raise ConfigError(
        f"serve: workers with sessions need a folder for unix sockets whose path is at most "
        f"{_MAX_SOCKET_PATH - _LONGEST_NAME} characters; the temporary folder "
        f"{tempfile.gettempdir()!r} is longer: set TMPDIR to a shorter one, or serve "
        "stateless")


def _owner(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"mcp-session-id":
            match = _SESSION.fullmatch(value.decode("latin-1"))
            return int(match.group(1)) if match else None
    return None


class Affinity:
    """The public face of one worker: requests for its own sessions (or none) go to ``app``,
    requests for another worker's session are forwarded to that worker's socket."""

    def __init__(self, app: Any, folder: str) -> None:
        self.app = app
        self.folder = folder
        self.pid = os.getpid()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            owner = _owner(scope)
            if owner is not None and owner != self.pid:
                await self._forward(owner, scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _forward(self, owner: int, scope: Any, receive: Any, send: Any) -> None:
        import anyio
        import httpx2 as httpx  # the HTTP client the mcp SDK depends on

        path = socket_path(self.folder, owner)
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP_BY_HOP]
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        disconnected = False

        async def body() -> AsyncIterator[bytes]:
            nonlocal disconnected
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected = True
                    return
                yield message.get("body", b"")
                if not message.get("more_body", False):
                    return

        transport = httpx.AsyncHTTPTransport(uds=str(path))
        timeout = httpx.Timeout(None, connect=10)
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
            request = client.build_request(scope["method"], "http://worker" + target.decode("latin-1"),
                                           headers=headers, content=body())
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                if disconnected:  # the client went away while sending its request
                    return
                gone = isinstance(exc, httpx.ConnectError)  # the worker holding it is gone
                log.info("mcp.session_forward_failed", worker=owner, gone=gone,
                         error=f"{type(exc).__name__}: {exc}")
                await _error(send, 404 if gone else 502,
                             "Session not found" if gone else "The session's worker failed")
                return
            try:
                await send({"type": "http.response.start", "status": response.status_code,
                            "headers": [(k, v) for k, v in response.headers.raw
                                        if k.lower() not in _HOP_BY_HOP]})
                async with anyio.create_task_group() as group:

                    async def until_gone() -> None:
                        while (await receive())["type"] != "http.disconnect":
                            pass
                        group.cancel_scope.cancel()

                    group.start_soon(until_gone)
                    with contextlib.suppress(httpx.TransportError):
                        async for chunk in response.aiter_raw():
                            await send({"type": "http.response.body", "body": chunk,
                                        "more_body": True})
                    group.cancel_scope.cancel()
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                await response.aclose()


async def _error(send: Any, status: int, message: str) -> None:
    """A JSON-RPC error without a request id, as the SDK answers an unknown session."""
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


@contextlib.asynccontextmanager
async def private_listener(app: Any, folder: str, options: dict[str, Any]) -> AsyncIterator[None]:
    """Serve ``app`` on this worker's socket in ``folder`` while the context lasts (the same
    uvicorn settings as the public socket, without a lifespan of its own: the public server
    runs the application's)."""
    import anyio
    import uvicorn

    path = socket_path(folder, os.getpid())
    plain = {k: v for k, v in options.items() if not k.startswith("ssl_")}
    config = uvicorn.Config(app, uds=str(path), **{**plain, "lifespan": "off"})
    server = _server(config)
    async with anyio.create_task_group() as group:
        ended = anyio.Event()

        async def serve() -> None:
            try:
                await server.serve()
            finally:
                ended.set()

        group.start_soon(serve)
        # The application starts (its lifespan completes) only once this socket listens: a
        # socket that cannot be made fails the worker's start, never the sessions later.
        while not server.started:
            if ended.is_set():
                raise RuntimeError(f"the worker's session socket {path} did not start")
            await anyio.sleep(0.01)
        try:
            yield
        finally:
            server.should_exit = True
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _server(config: Any) -> Any:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """A second server in the worker: the worker's own server handles the signals."""

        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    return QuietServer(config)
