"""Calling operations with httpx: request building, auth, responses, pooled clients."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import threading
import weakref
from collections.abc import Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urljoin

from attrs import frozen

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log, outgoing_context

from ._errors import OpenAPIError
from ._operations import Operation, ParamSpec

if TYPE_CHECKING:
    import httpx

__all__ = ["Credentials", "HttpSession", "OperationCaller", "server_url"]

EXCERPT_CHARS = 1000
INLINE_BINARY_BYTES = 32 * 1024
_JSON_CT = re.compile(r"^application/(?:[\w.+-]+\+)?json\b|^[\w.+-]+/[\w.+-]*\+json\b", re.I)
_TEXT_CT = re.compile(
    r"^text/|^application/(?:[\w.+-]+\+)?(?:xml|yaml|x-yaml|javascript|x-www-form-urlencoded)\b",
    re.I,
)
_VAR_RE = re.compile(r"\{([^{}]+)\}")


# -- servers ---------------------------------------------------------------------------------

def server_url(server: Mapping[str, Any], variables: Mapping[str, str] | None,
               doc_url: str | None) -> str:
    """A server object's URL with its variables filled (user values, else defaults),
    relative URLs resolved against the document's URL."""
    url = str(server.get("url", ""))
    declared = server.get("variables") if isinstance(server.get("variables"), Mapping) else {}
    given = variables or {}

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in given:
            return str(given[name])
        spec = declared.get(name) if isinstance(declared, Mapping) else None
        if isinstance(spec, Mapping) and "default" in spec:
            return str(spec["default"])
        raise OpenAPIError(
            f"server {url!r} has the variable {{{name}}} with no default: pass "
            f"server_variables={{{name!r}: ...}} or base_url="
        )

    url = _VAR_RE.sub(fill, url)
    if not url.lower().startswith(("http://", "https://")):
        if doc_url is None:
            raise OpenAPIError(
                f"the spec's server {url!r} is relative and the document has no URL: "
                "pass base_url="
            )
        url = urljoin(doc_url, url)
    return url


# -- credentials ------------------------------------------------------------------------------

@frozen
class Credentials:
    """What the user passed as ``auth``, normalised.

    ``token``: one secret for every bearer / OAuth2 / API-key scheme; ``basic``: a
    (user, password) pair; ``per_scheme``: values by securitySchemes name; ``httpx_auth``: an
    ``httpx.Auth`` used as is.
    """

    token: str | None = None
    basic: tuple[str, str] | None = None
    per_scheme: Mapping[str, Any] = {}
    httpx_auth: Any = None

    @classmethod
    def from_option(cls, auth: Any) -> Credentials:
        if auth is None:
            return cls()
        if isinstance(auth, str):
            return cls(token=auth)
        if isinstance(auth, (tuple, list)) and len(auth) == 2 and all(
            isinstance(a, str) for a in auth
        ):  # a list too: TOML has no tuples
            return cls(basic=(auth[0], auth[1]))
        if isinstance(auth, Mapping):
            return cls(per_scheme=dict(auth))
        import httpx

        if isinstance(auth, httpx.Auth):
            return cls(httpx_auth=auth)
        raise OpenAPIError(
            f"auth must be a token string, a (user, password) tuple, a mapping of "
            f"securitySchemes name to credential, or an httpx.Auth; got {type(auth).__name__}"
        )

    def for_scheme(self, name: str, scheme: Mapping[str, Any]) -> Any:
        if name in self.per_scheme:
            return self.per_scheme[name]
        kind = str(scheme.get("type", "")).lower()
        if (kind == "http" and str(scheme.get("scheme", "")).lower() == "basic") or kind == "basic":
            return self.basic
        return self.token

    @property
    def empty(self) -> bool:
        return not (self.token or self.basic or self.per_scheme or self.httpx_auth)


def _basic(value: Any) -> str | None:
    if isinstance(value, str) and ":" in value:
        user, _, pw = value.partition(":")
        value = (user, pw)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        raw = f"{value[0]}:{value[1]}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")
    return None


def _apply_scheme(name: str, scheme: Mapping[str, Any], value: Any, headers: dict[str, str],
                  query: list[tuple[str, str]], cookies: dict[str, str]) -> bool:
    kind = str(scheme.get("type", "")).lower()
    if kind == "apikey":
        where, key = str(scheme.get("in", "header")), str(scheme.get("name", ""))
        if not isinstance(value, str) or not key:
            return False
        if where == "query":
            query.append((key, value))
        elif where == "cookie":
            cookies[key] = value
        else:
            headers[key] = value
        return True
    if kind in ("http", "basic"):
        http_scheme = "basic" if kind == "basic" else str(scheme.get("scheme", "")).lower()
        if http_scheme == "basic":
            encoded = _basic(value)
            if encoded is None:
                return False
            headers["Authorization"] = encoded
            return True
        if not isinstance(value, str):
            return False
        label = "Bearer" if http_scheme in ("bearer", "") else http_scheme.capitalize()
        headers["Authorization"] = f"{label} {value}"
        return True
    if kind in ("oauth2", "openidconnect"):
        if not isinstance(value, str):
            return False
        headers["Authorization"] = f"Bearer {value}"
        return True
    return False  # mutualTLS and unknown kinds: configure the client instead


def apply_security(op: Operation, schemes: Mapping[str, Mapping[str, Any]], creds: Credentials,
                   headers: dict[str, str], query: list[tuple[str, str]],
                   cookies: dict[str, str]) -> None:
    """Put credentials where the operation's security requirement says.

    The first alternative whose schemes all have credentials wins; an operation with no
    declared security gets a plain token / basic pair as ``Authorization`` when one was given.
    """
    if creds.empty or creds.httpx_auth is not None:
        return
    if not op.security:
        if op.security is None or op.security == ():
            if creds.token:
                headers.setdefault("Authorization", f"Bearer {creds.token}")
            elif creds.basic:
                headers.setdefault("Authorization", _basic(creds.basic) or "")
        return
    for alternative in sorted(op.security, key=lambda alt: not alt):
        if not alt_satisfiable(alternative, schemes, creds):
            continue
        for name in alternative:
            scheme = schemes[name]
            _apply_scheme(name, scheme, creds.for_scheme(name, scheme), headers, query, cookies)
        return


def alt_satisfiable(alternative: Mapping[str, Any], schemes: Mapping[str, Mapping[str, Any]],
                    creds: Credentials) -> bool:
    for name in alternative:
        scheme = schemes.get(name)
        if scheme is None:
            return False
        probe_h: dict[str, str] = {}
        if not _apply_scheme(name, scheme, creds.for_scheme(name, scheme), probe_h, [], {}):
            return False
    return True


# -- serialisation ----------------------------------------------------------------------------

def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _deep(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _deep(f"{prefix}[{k}]", v, out)
    elif isinstance(value, list):
        if all(not isinstance(v, (Mapping, list)) for v in value):
            out.extend((f"{prefix}[]", _scalar(v)) for v in value)
        else:
            for i, v in enumerate(value):
                _deep(f"{prefix}[{i}]", v, out)
    else:
        out.append((prefix, _scalar(value)))


_DELIMS = {"spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t"}


def _query_pairs(p: ParamSpec, value: Any, out: list[tuple[str, str]]) -> None:
    if p.kind == "json":
        out.append((p.name, json.dumps(value, ensure_ascii=False)))
    elif isinstance(value, list):
        if p.style == "form" and p.explode:
            out.extend((p.name, _scalar(v)) for v in value)
        else:
            out.append((p.name, _DELIMS.get(p.style, ",").join(_scalar(v) for v in value)))
    elif isinstance(value, Mapping):
        if p.style == "deepObject":
            _deep(p.name, value, out)
        elif p.explode:
            out.extend((str(k), _scalar(v)) for k, v in value.items())
        else:
            out.append((p.name, ",".join(f"{k},{_scalar(v)}" for k, v in value.items())))
    else:
        out.append((p.name, _scalar(value)))


def _simple(value: Any, explode: bool) -> str:
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    if isinstance(value, Mapping):
        sep = "=" if explode else ","
        return ",".join(f"{k}{sep}{_scalar(v)}" for k, v in value.items())
    return _scalar(value)


def _path_value(p: ParamSpec, value: Any) -> str:
    if p.kind == "json":
        return quote(json.dumps(value, ensure_ascii=False), safe="")
    text = _simple(value, p.explode)
    encoded = quote(text, safe=",=")
    if p.style == "label":
        return "." + encoded
    if p.style == "matrix":
        return f";{p.name}={encoded}"
    return quote(text, safe="")


def _fill_path(template: str, values: Mapping[str, str]) -> str:
    """``template`` with its ``{name}`` variables replaced by encoded values.

    A segment that the values make ``.`` or ``..`` is sent as ``%2E`` / ``%2E%2E``: left as
    it is, clients and servers remove it as a dot segment (``/files/..`` becomes ``/``), and
    the request would reach another resource than the one the arguments name."""
    path = _VAR_RE.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if "." not in path:
        return path
    segments = template.split("/")
    filled = path.split("/")
    if len(filled) != len(segments):  # a variable named with a "/": values never hold one
        return path
    for i, (segment, value) in enumerate(zip(segments, filled, strict=True)):
        if value in (".", "..") and "{" in segment:
            filled[i] = value.replace(".", "%2E")
    return "/".join(filled)


def _multipart(fields: list[tuple[str, str]], files: list[tuple[str, str, bytes, str]]
               ) -> tuple[bytes, str]:
    boundary = "toolregistry-" + secrets.token_hex(12)
    chunks: list[bytes] = []
    for name, value in fields:
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(name)}"\r\n\r\n'.encode()
            + value.encode("utf-8") + b"\r\n"
        )
    for name, filename, data, ctype in files:
        chunks.append(
            (f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(name)}"; '
             f'filename="{_q(filename)}"\r\nContent-Type: {ctype}\r\n\r\n').encode()
            + data + b"\r\n"
        )
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def _q(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")


def _file_part(name: str, value: Any) -> tuple[str, str, bytes, str]:
    if isinstance(value, Mapping):  # {"filename", "content", "content_type"}
        content = value.get("content", "")
        data = content if isinstance(content, bytes) else str(content).encode("utf-8")
        return (name, str(value.get("filename") or name), data,
                str(value.get("content_type") or "application/octet-stream"))
    raw = bytes(value) if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")
    return name, name, raw, "application/octet-stream"


@frozen
class Prepared:
    method: str
    url: str
    params: list[tuple[str, str | int | float | bool | None]]
    headers: dict[str, str]
    content: bytes | None


def prepare(op: Operation, base_url: str, args: Mapping[str, Any],
            schemes: Mapping[str, Mapping[str, Any]], creds: Credentials,
            extra_headers: Mapping[str, str]) -> Prepared:
    """The request for ``op`` with ``args`` (already validated against its schema)."""
    path_values: dict[str, str] = {}
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = dict(extra_headers)
    cookies: dict[str, str] = {}
    for p in op.params:
        if p.arg not in args or args[p.arg] is None:
            if p.location == "path":
                raise ToolCallError(
                    f"missing path parameter {p.arg!r} for {op.method} {op.path}",
                    kind="invalid_arguments",
                )
            continue
        value = args[p.arg]
        if p.location == "path":
            path_values[p.name] = _path_value(p, value)
        elif p.location == "query":
            _query_pairs(p, value, query)
        elif p.location == "header":
            headers[p.name] = json.dumps(value) if p.kind == "json" else _simple(value, p.explode)
        elif p.location == "cookie":
            cookies[p.name] = json.dumps(value) if p.kind == "json" else _simple(value, False)
    url = base_url.rstrip("/") + _fill_path(op.path, path_values)

    content: bytes | None = None
    body = op.body
    if body is not None and "body" in args and args["body"] is not None:
        value = args["body"]
        mt = body.media_type
        low = mt.lower()
        if low.startswith("application/x-www-form-urlencoded"):
            pairs: list[tuple[str, str]] = []
            if isinstance(value, Mapping):
                for k, v in value.items():
                    if isinstance(v, Mapping) or k in body.deep_fields:
                        _deep(str(k), v, pairs)
                    elif isinstance(v, list):
                        pairs.extend((str(k), _scalar(x)) for x in v)
                    else:
                        pairs.append((str(k), _scalar(v)))
            else:
                pairs.append(("body", _scalar(value)))
            content = urlencode(pairs).encode("ascii")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif low.startswith("multipart/"):
            fields: list[tuple[str, str]] = []
            files: list[tuple[str, str, bytes, str]] = []
            for k, v in (value.items() if isinstance(value, Mapping) else [("body", value)]):
                if k in body.file_fields:
                    for item in v if isinstance(v, list) else [v]:
                        files.append(_file_part(str(k), item))
                elif isinstance(v, list):
                    fields.extend((str(k), _scalar(x)) for x in v)
                else:
                    fields.append((str(k), _scalar(v)))
            content, headers["Content-Type"] = _multipart(fields, files)
        elif _JSON_CT.match(low) or low == "*/*":
            content = json.dumps(value, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = mt if low != "*/*" else "application/json"
        else:
            content = (value if isinstance(value, bytes) else
                       (value if isinstance(value, str) else json.dumps(value)).encode("utf-8"))
            headers["Content-Type"] = mt
    apply_security(op, schemes, creds, headers, query, cookies)
    if cookies:
        jar = "; ".join(f"{k}={_cookie_value(v)}" for k, v in cookies.items())
        headers["Cookie"] = f"{headers['Cookie']}; {jar}" if "Cookie" in headers else jar
    return Prepared(op.method, url, list(query), headers, content)


_COOKIE_UNSAFE = re.compile(r'[;,"\\\x00-\x1f\x7f%]')


def _cookie_value(value: str) -> str:
    # values go as they are; only characters that would break the Cookie header (and %)
    # are percent-encoded
    return _COOKIE_UNSAFE.sub(lambda m: f"%{ord(m.group(0)):02X}", value)


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
    if _JSON_CT.match(ct):
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
