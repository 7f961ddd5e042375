"""Serving the inspector: ``serve(registry)`` runs the app under uvicorn on loopback (blocking,
or on a thread of its own with ``block=False``) and prints the URL with its token."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolregistry import ToolRegistry


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or ``localhost``."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class InspectorServer:
    """A running inspector (``serve(..., block=False)``): its ``url`` (with the token) and
    ``close()``."""

    def __init__(self, server: Any, thread: threading.Thread, url: str, app: Any) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        self.app = app

    @property
    def base_url(self) -> str:
        """``http://host:port`` (no path, no token)."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    def close(self) -> None:
        """Stop serving (waits for the server's thread)."""
        self.app.state.closing.set()
        self._server.should_exit = True
        self._thread.join(15.0)

    def __enter__(self) -> InspectorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(registry: ToolRegistry, *, host: str = "127.0.0.1", port: int = 8765,
          token: str | None = None, read_only: bool = False,
          allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
          token_counter: Callable[[str], int] | None = None, block: bool = True,
          open_browser: bool = False, quiet: bool = False) -> InspectorServer | None:
    """Serve the inspector over ``registry`` on ``http://host:port/`` and print its URL (with
    a random token unless ``token`` is given). ``port=0`` picks a free port. A non-loopback
    ``host`` needs an explicit ``token`` (anyone who can reach the port would otherwise only
    need the printed URL). ``block=False`` returns an :class:`InspectorServer` at once."""
    import uvicorn

    from ._web import create_app

    if not is_loopback(host) and token is None:
        raise ValueError(f"serving the inspector on {host!r} (not loopback) needs an explicit "
                         "token: token=..., or --token-env VAR / --token-file PATH")
    secret = token or secrets.token_urlsafe(24)
    hosts = list(allowed_hosts)
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    app = create_app(registry, token=secret, read_only=read_only, allowed_hosts=hosts,
                     allowed_origins=allowed_origins, token_counter=token_counter)
    sock = socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)  # connections wait in the backlog until the server accepts them
    except OSError as exc:
        sock.close()
        raise OSError(f"the inspector cannot listen on {host}:{port}: {exc.strerror}") from exc
    bound = sock.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
    url = f"http://{shown}:{bound}/tools?token={secret}"
    # Open pages hold an event stream: on shutdown they get a moment to end, then are cut.
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    if not quiet:
        mode = " (read-only)" if read_only else ""
        print(f"toolregistry inspector{mode} for registry {registry.name!r}: {url}",
              flush=True)
    if open_browser:
        import webbrowser

        threading.Timer(0.5, webbrowser.open, (url,)).start()
    if block:
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        return None
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="toolregistry-inspector", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        thread.join(5)
        sock.close()
        print("the inspector did not start", file=sys.stderr)
        raise RuntimeError(f"the inspector did not start on {host}:{bound}")
    return InspectorServer(server, thread, url, app)
