"""Calling operations with httpx: the pooled clients of a loaded document
(:class:`HttpSession`), the callables behind its tools (:class:`OperationCaller` and its async
twin), reading responses within the size limit and turning them into the tool's result.
Requests are built by ``_request``, credentials placed by ``_auth``."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import weakref
from collections.abc import Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log, outgoing_context

from ._auth import Credentials
from ._operations import Operation
from ._request import JSON_CT, Prepared, prepare

if TYPE_CHECKING:
    import httpx

__all__ = ["AsyncOperationCaller", "HttpSession", "OperationCaller", "interpret"]

EXCERPT_CHARS = 1000
INLINE_BINARY_BYTES = 32 * 1024
_TEXT_CT = re.compile(
    r"^text/|^application/(?:[\w.+-]+\+)?(?:xml|yaml|x-yaml|javascript|x-www-form-urlencoded)\b",
    re.I,
)


# -- responses --------------------------------------------------------------------------------

def _excerpt(data: bytes) -> str:
    text = data[: EXCERPT_CHARS * 4].decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def interpret(op: Operation, status: int, reason: str, ctype: str, data: bytes, url: str,
              truncated: bool) -> Any:
    """The tool's return value for a response, or a remote :class:`ToolCallError`."""
    if not 200 <= status < 300:
        hint = ""
        if status in (401, 403) and op.security:
            names = sorted({n for alt in op.security for n in alt})
            hint = f" (the operation needs {' or '.join(names)}: pass auth=...)"
        body = _excerpt(data) if data else "(empty body)"
        raise ToolCallError(
            f"HTTP {status} {reason} from {op.method} {op.path}{hint}: {body}", kind="remote"
        )
    if truncated:
        raise ToolCallError(
            f"the response of {op.method} {op.path} is larger than the limit "
            "(max_response_bytes): ask for less, or raise the limit",
            kind="remote",
        )
    if not data:
        return f"HTTP {status} {reason} (no content)"
    ct = ctype.split(";", 1)[0].strip().lower()
    if JSON_CT.match(ct):
        try:
            return json.loads(data)
        except ValueError:
            return data.decode("utf-8", "replace")
    if ct.startswith("image/"):
        from toolregistry import Image

        return Image.from_bytes(data, ct)
    if _TEXT_CT.match(ct) or not ct:
        charset = re.search(r"charset=([\w.-]+)", ctype, re.I)
        try:
            return data.decode(charset.group(1) if charset else "utf-8", "replace")
        except LookupError:
            return data.decode("utf-8", "replace")
    from toolregistry import ToolResult

    note = f"binary response: {len(data)} bytes of {ct or 'unknown type'}"
    if len(data) <= INLINE_BINARY_BYTES:
        note += f"; base64: {base64.b64encode(data).decode('ascii')}"
    # the application gets the bytes themselves in ToolResult.value
    return ToolResult(call_id=None, name="", content=note, value=data)


# -- clients ----------------------------------------------------------------------------------

def _no_cookies() -> CookieJar:
    # Responses must not plant cookies that leak into later calls of other tools.
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class HttpSession:
    """The HTTP clients of one loaded document: one pooled sync client, one async client per
    event loop, created on first use and closed by :meth:`close` / :meth:`aclose` (or when
    the session is garbage-collected)."""

    def __init__(self, *, label: str, timeout: float, creds: Credentials,
                 schemes: Mapping[str, Mapping[str, Any]], headers: Mapping[str, str],
                 max_response_bytes: int, verify: Any = True) -> None:
        self.label = label
        self.timeout = timeout
        self.creds = creds
        self.schemes = schemes
        self.headers = dict(headers)
        self.max_response_bytes = max_response_bytes
        self.verify = verify
        self._client: httpx.Client | None = None
        self._aclients: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop],
                                        httpx.AsyncClient]] = {}
        self._lock = threading.Lock()
        self.closed = False

    def _options(self) -> dict[str, Any]:
        import httpx

        return {
            "timeout": httpx.Timeout(self.timeout),
            "auth": self.creds.httpx_auth,
            "cookies": _no_cookies(),
            "follow_redirects": False,
            "verify": self.verify,
            "headers": {"User-Agent": "toolregistry-openapi/1.0"},
        }

    def client(self) -> httpx.Client:
        if self.closed:
            raise ToolCallError(f"the HTTP session of {self.label} is closed", kind="execution")
        if self._client is None:
            import httpx

            with self._lock:
                if self._client is None:
                    self._client = httpx.Client(**self._options())
        return self._client

    def aclient(self) -> httpx.AsyncClient:
        if self.closed:
            raise ToolCallError(f"the HTTP session of {self.label} is closed", kind="execution")
        import httpx

        loop = asyncio.get_running_loop()
        entry = self._aclients.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        with self._lock:
            # clients of loops that are gone cannot be closed from here; drop them
            for key, (ref, _c) in list(self._aclients.items()):
                if ref() is None or ref().is_closed():  # type: ignore[union-attr]
                    del self._aclients[key]
            client = httpx.AsyncClient(**self._options())
            self._aclients[id(loop)] = (weakref.ref(loop), client)
        return client

    def close(self) -> None:
        """Close every client this session opened (idempotent).

        Async clients are closed on their own event loop: directly when that loop is idle,
        through ``run_coroutine_threadsafe`` when it runs in another thread (the registry's
        ``async with`` closes from a worker thread), as a task when called on that loop.
        """
        self.closed = True
        client, self._client = self._client, None
        if client is not None:
            client.close()
        entries, self._aclients = list(self._aclients.values()), {}
        for ref, aclient in entries:
            loop = ref()
            if loop is None or loop.is_closed():
                continue  # nothing can close it any more; its sockets die with the loop
            try:
                current = asyncio.get_running_loop()
            except RuntimeError:
                current = None
            if current is loop:
                loop.create_task(aclient.aclose())
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(aclient.aclose(), loop).result(10)
            else:
                loop.run_until_complete(aclient.aclose())

    async def aclose(self) -> None:
        """Close every client this session opened."""
        self.closed = True
        loop = asyncio.get_running_loop()
        entry = self._aclients.pop(id(loop), None)
        if entry is not None:
            await entry[1].aclose()
        self._aclients.clear()
        client, self._client = self._client, None
        if client is not None:
            client.close()


class OperationCaller:
    """The callable behind one tool (sync); :class:`AsyncOperationCaller` is the async twin."""

    def __init__(self, op: Operation, session: HttpSession, base_url: str | None,
                 base_error: str | None) -> None:
        self.op = op
        self.session = session
        self.base_url = base_url
        self.base_error = base_error

    def _request(self, kwargs: Mapping[str, Any], client: httpx.Client | httpx.AsyncClient
                 ) -> tuple[Prepared, httpx.Request]:
        """The call's arguments as an HTTP request of ``client``."""
        if self.base_url is None:
            raise ToolCallError(
                f"{self.op.name}: {self.base_error or 'no base URL'}", kind="execution"
            )
        s = self.session
        req = prepare(self.op, self.base_url, kwargs, s.schemes, s.creds, s.headers)
        # in the call's own context: what tracing plugins add (W3C traceparent / tracestate)
        for key, value in outgoing_context().items():
            req.headers.setdefault(key, value)
        request = client.build_request(req.method, req.url, params=req.params,
                                       headers=req.headers, content=req.content)
        log.debug("openapi.request", tool=self.op.name, method=req.method, url=req.url)
        return req, request

    def _interpret(self, req: Prepared, resp: httpx.Response, data: bytes,
                   truncated: bool) -> Any:
        return interpret(self.op, resp.status_code, resp.reason_phrase,
                         resp.headers.get("content-type", ""), data, req.url, truncated)

    def _transport_error(self, exc: Exception, req: Prepared) -> ToolCallError:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return ToolCallError(
                f"{req.method} {req.url} timed out after {self.session.timeout}s "
                f"({type(exc).__name__})", kind="timeout")
        return ToolCallError(f"{req.method} {req.url} failed: {type(exc).__name__}: {exc}",
                             kind="remote")

    def __call__(self, **kwargs: Any) -> Any:
        import httpx

        client = self.session.client()
        req, request = self._request(kwargs, client)
        try:
            resp = client.send(request, stream=True)
            try:
                data, truncated = _read_sync(resp, self.session.max_response_bytes)
            finally:
                resp.close()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, req) from None
        return self._interpret(req, resp, data, truncated)


class AsyncOperationCaller(OperationCaller):
    """Async twin of :class:`OperationCaller` (used by tools from ``aload_openapi``)."""

    async def __call__(self, **kwargs: Any) -> Any:
        import httpx

        client = self.session.aclient()
        req, request = self._request(kwargs, client)
        try:
            resp = await client.send(request, stream=True)
            try:
                data, truncated = await _read_async(resp, self.session.max_response_bytes)
            finally:
                await resp.aclose()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, req) from None
        return self._interpret(req, resp, data, truncated)


def _read_sync(resp: httpx.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


async def _read_async(resp: httpx.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False
