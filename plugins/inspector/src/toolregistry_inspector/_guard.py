"""The inspector's guard on every request (ASGI middleware): the token (from the printed URL,
then the session path it is traded for, or an ``Authorization: Bearer`` header); the ``Host``
header must name a loopback address or an allowed host (no DNS rebinding); an ``Origin``
header must be the app's own origin or an allowed one. The session and CSRF values derive
from the token; the token itself is neither.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = ["LOOPBACK", "SESSION_PATH", "Guard", "csrf_token", "session_key"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
SESSION_PATH = "/s/"


def _hostname(value: str) -> str:
    """``host`` of ``host:port`` / ``[::1]:port``, lowercased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The ASGI middleware that checks the token, ``Host`` and ``Origin`` of every request."""

    def __init__(self, app: ASGIApp, token: str, allowed_hosts: Iterable[str],
                 allowed_origins: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in (*LOOPBACK, *allowed_hosts)}
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.session = session_key(token)
        self.prefix = f"{SESSION_PATH}{self.session}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        host = headers.get("host", "")
        if _hostname(host) not in self.hosts:
            await _plain(send, 421, f"Host {host!r} is not accepted by this inspector (it "
                                    "answers on loopback names and its --allowed-host values)")
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin, host):
            await _plain(send, 403, f"requests from origin {origin!r} are refused")
            return
        root = scope.get("root_path", "")
        path = scope["path"][len(root):] if scope["path"].startswith(root) else scope["path"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await _plain(send, 403, "wrong token: open the URL toolregistry inspect printed")
                return
            if scope["method"] == "GET":
                # Trade the token in the URL for the session path, and drop it from the
                # address bar (and so from the history).
                rest = urlencode([(k, v) for k, v in parse_qsl(
                    scope.get("query_string", b"").decode("latin-1")) if k != "token"])
                inner = self._inner(path)
                location = root + self.prefix + (path if inner is None else inner) + \
                    (f"?{rest}" if rest else "")
                await _redirect(send, location)
                return
        else:
            inner = self._inner(path)
            if inner is not None:
                if inner in ("", "/"):
                    await _redirect(send, root + self.prefix + "/tools")
                    return
                # The app sees the session prefix as its root: its routes and links work under
                # it (``base`` in the templates).
                scope = {**scope, "root_path": root + self.prefix}
            elif not self._bearer(headers):
                await _plain(send, 403, "this inspector needs its token: open the URL "
                                        "toolregistry inspect printed (…?token=…)")
                return
        scope.setdefault("state", {})["csrf"] = csrf_token(self.token)
        await self.app(scope, receive, send)

    def _inner(self, path: str) -> str | None:
        """The path inside the session (``/tools`` of ``/s/<session>/tools``), or ``None``
        when ``path`` is not under the session."""
        if not path.startswith(SESSION_PATH):
            return None
        key, slash, rest = path[len(SESSION_PATH):].partition("/")
        if not hmac.compare_digest(key.encode(), self.session.encode()):
            return None
        return slash + rest

    def _bearer(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return hmac.compare_digest(auth[7:].strip().encode(), self.token.encode())
        return False

    def _origin_ok(self, origin: str, host: str) -> bool:
        origin = origin.rstrip("/").lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == host.lower()


async def _redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 303, "headers": [
        (b"location", location.encode("latin-1")), (b"cache-control", b"no-store"),
        (b"referrer-policy", b"no-referrer")]})
    await send({"type": "http.response.body", "body": b""})


def session_key(token: str) -> str:
    """The session path segment of an inspector: derived from its token (the same token gives
    the same session after a restart), never the token itself."""
    return hmac.new(token.encode(), b"toolregistry-inspector session",
                    hashlib.sha256).hexdigest()[:32]


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def csrf_token(token: str) -> str:
    """The CSRF token of an inspector: derived from its secret token, so that a page of
    another origin, which never sees the token, cannot forge an action."""
    return hmac.new(token.encode(), b"toolregistry-inspector csrf", hashlib.sha256).hexdigest()
