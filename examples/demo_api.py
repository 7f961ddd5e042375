"""The demo's HTTP service implementing demo_api.yaml, on 127.0.0.1 (standard library only)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PETS: dict[int, dict[str, Any]] = {1: {"id": 1, "name": "Tama", "tag": "cat"},
                                   2: {"id": 2, "name": "Pochi", "tag": "dog"}}
RECEIVED_HEADERS: list[dict[str, str]] = []
"""The headers of the last requests (at most 100), lower-case names: what tests check."""


class _Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> None:
        RECEIVED_HEADERS.append({k.lower(): v for k, v in self.headers.items()})
        del RECEIVED_HEADERS[:-100]

    def do_GET(self) -> None:
        self._record()
        url = urlsplit(self.path)
        if url.path == "/pets":
            limit = int(parse_qs(url.query).get("limit", ["10"])[0])
            self._send(200, list(PETS.values())[:limit])
            return
        m = re.fullmatch(r"/pets/(\d+)", url.path)
        if m and int(m.group(1)) in PETS:
            self._send(200, PETS[int(m.group(1))])
            return
        self._send(404, {"error": f"no pet at {url.path}"})

    def do_POST(self) -> None:
        self._record()
        if urlsplit(self.path).path != "/pets":
            self._send(404, {"error": "not found"})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        pet = {"id": max(PETS) + 1, **body}
        PETS[pet["id"]] = pet
        self._send(201, pet)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def start() -> tuple[ThreadingHTTPServer, str]:
    """Start the service on a free port of 127.0.0.1; returns the server and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}"
