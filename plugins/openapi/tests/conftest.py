"""Real HTTP services on 127.0.0.1: the FastAPI test app (uvicorn in a thread) and recording
servers (the standard library's), each on a free port chosen by the OS."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "openapi"
if not DATA.is_dir():  # CI lays shared/ beside the clone
    DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "openapi"


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    import importlib.util

    import uvicorn

    spec = importlib.util.spec_from_file_location(
        "toolregistry_openapi_test_app", Path(__file__).with_name("openapi_test_app.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test service did not start")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def registry() -> Iterator[object]:
    from toolregistry import ToolRegistry

    reg = ToolRegistry()
    yield reg
    reg.close()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"the shared OpenAPI documents are not at {DATA}")
    return DATA


class RecordingServer:
    """A real HTTP server on 127.0.0.1 (the standard library's, in a thread) that answers
    from a table of routes and records every request line's raw target, exactly as sent."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        import http.server
        import json

        self.routes = routes
        self.seen: list[tuple[str, str]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                server.seen.append((self.command, self.path))
                route = server.routes.get(self.path) or server.routes.get(self.path.split("?")[0])
                if route is None:  # echo what arrived
                    route = (200, {"content-type": "application/json"},
                             json.dumps({"method": self.command, "path": self.path}).encode())
                status, headers, body = route
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [path for _method, path in self.seen]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def http_server() -> Iterator[Callable[..., RecordingServer]]:
    """Start recording servers (each on its own port: its own origin); all stop at the end."""
    started: list[RecordingServer] = []

    def start(routes: dict[str, tuple[int, dict[str, str], bytes]] | None = None
              ) -> RecordingServer:
        server = RecordingServer(routes or {})
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
