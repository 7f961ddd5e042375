"""Calls that outlive their connection or keep reporting progress, against a real server
(``servers/resilience_server.py``, the SDK's MCPServer) over stdio and streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

from .conftest import free_port, stop, wait_for_port

SERVER = Path(__file__).parent / "servers" / "resilience_server.py"


def lines(marker: Path, prefix: str) -> list[str]:
    return [line for line in marker.read_text(encoding="utf-8").splitlines()
            if line.startswith(prefix)]


def wait_for_line(marker: Path, line: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while line not in marker.read_text(encoding="utf-8").splitlines():
        assert time.monotonic() < deadline, f"the server never wrote {line!r}"
        time.sleep(0.05)


def stdio(marker: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "--marker", str(marker)]}


class HTTPServer:
    """The server over streamable HTTP on one port, restarted there by ``restart()`` or, with
    ``revive=True``, as soon as it exits."""

    def __init__(self, marker: Path) -> None:
        self.port = free_port()
        self.marker = marker
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = self._start()
        self.revive = False
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(self.port),
                                 "--marker", str(self.marker)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, proc)
        return proc

    def _watch(self) -> None:
        while not self._stopping.is_set():
            if self.revive and self.proc.poll() is not None:
                time.sleep(0.3)  # down for a moment: connections are refused meanwhile
                self.proc = self._start()
            time.sleep(0.05)

    def restart(self) -> None:
        stop(self.proc)
        self.proc = self._start()

    def close(self) -> None:
        self._stopping.set()
        self._watcher.join(10)
        stop(self.proc)


@pytest.fixture
def http(marker: Path) -> Iterator[HTTPServer]:
    server = HTTPServer(marker)
    try:
        yield server
    finally:
        server.close()


# --------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_progress_restarts_the_timeout(registry: ToolRegistry, marker: Path,
                                       request: pytest.FixtureRequest, transport: str) -> None:
    server: Any = stdio(marker) if transport == "stdio" else \
        request.getfixturevalue("http").url
    registry.register_from_mcp(server, include=["progress", "silent"], timeout=0.5)
    # Progress every 0.2 s for 2 s: four times the timeout in all, never silent for long.
    result = registry.invoke("progress", {"seconds": 2, "every": 0.2})
    assert not result.is_error, result.text
    assert result.content == "done"
    silent = registry.invoke("silent", {"seconds": 30})
    assert silent.is_error and silent.error_kind == "timeout"
    assert "did not answer within 0.5s" in silent.text
    wait_for_line(marker, "cancelled silent")


def test_the_cap_stops_an_endless_reporter(registry: ToolRegistry, marker: Path) -> None:
    registry.register_from_mcp(stdio(marker), include=["endless"], timeout=0.5,
                               max_timeout=1.5)
    started = time.monotonic()
    result = registry.invoke("endless", {"every": 0.1})
    assert result.is_error and result.error_kind == "timeout"
    assert "1.5s cap" in result.text and "max_timeout" in result.text
    assert time.monotonic() - started < 15
    wait_for_line(marker, "cancelled endless")


def test_a_server_that_stops_reporting_progress_times_out(registry: ToolRegistry,
                                                          marker: Path) -> None:
    registry.register_from_mcp(stdio(marker), include=["progress"], timeout=0.5,
                               max_timeout=60)
    # One report after 0.3 s, then nothing for 5 s.
    result = registry.invoke("progress", {"seconds": 10, "every": 5})
    assert result.is_error and result.error_kind == "timeout"
    assert "did not answer within 0.5s" in result.text
    wait_for_line(marker, "cancelled progress")


def test_max_timeout_is_checked(registry: ToolRegistry, marker: Path) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match="max_timeout must be a positive number"):
        registry.register_from_mcp(stdio(marker), max_timeout=-1)


def test_the_registry_deadline_leaves_room_for_progress(registry: ToolRegistry,
                                                        marker: Path) -> None:
    registry.register_from_mcp(stdio(marker), include=["progress"], timeout=2)
    tool = registry.get_tool("progress")
    assert tool is not None
    assert tool.metadata.timeout == 2 * 10 + 5


# --------------------------------------------------------------------------- reconnecting


def _counts(registry: ToolRegistry, marker: Path, restart: Callable[[], None]) -> None:
    # A call in flight when the server dies: an error result, not sent again.
    died = registry.invoke("count", {"tag": "a", "die": True})
    assert died.is_error and died.error_kind == "remote", died.text
    assert "may or may not have run" in died.text
    restart()
    # The next call reconnects and works.
    again = registry.invoke("count", {"tag": "b"})
    assert not again.is_error, again.text
    assert lines(marker, "count") == ["count a", "count b"]


def test_stdio_non_idempotent_call_is_never_sent_twice(registry: ToolRegistry,
                                                       marker: Path) -> None:
    registry.register_from_mcp(stdio(marker), include=["count"])
    _counts(registry, marker, lambda: None)


def test_stdio_read_only_call_is_sent_again_once(registry: ToolRegistry,
                                                 marker: Path) -> None:
    registry.register_from_mcp(stdio(marker), include=["peek"])
    result = registry.invoke("peek", {"tag": "a", "die": True})
    assert not result.is_error, result.text
    assert result.content == "peeked a"
    assert lines(marker, "peek") == ["peek a", "peek a"]


@pytest.mark.parametrize("version", ["auto", "legacy"])
def test_http_restart_on_the_same_port(registry: ToolRegistry, marker: Path,
                                       http: HTTPServer, version: str) -> None:
    registry.register_from_mcp(http.url, include=["count"], protocol_version=version)

    def restart() -> None:
        http.proc.wait(10)
        http.restart()

    _counts(registry, marker, restart)
    # Restarted while idle: the next call is sent on a new session (a 404 for the old one).
    http.restart()
    assert registry.invoke("count", {"tag": "c"}).content == "counted c"
    assert lines(marker, "count") == ["count a", "count b", "count c"]


@pytest.mark.parametrize("version", ["auto", "legacy"])
def test_http_read_only_call_waits_for_the_restart(registry: ToolRegistry, marker: Path,
                                                   http: HTTPServer, version: str) -> None:
    registry.register_from_mcp(http.url, include=["peek"], protocol_version=version)
    http.revive = True
    result = registry.invoke("peek", {"tag": "a", "die": True})
    assert not result.is_error, result.text
    assert lines(marker, "peek") == ["peek a", "peek a"]


@pytest.mark.parametrize("version", ["auto", "legacy"])
def test_http_server_down_while_idle(registry: ToolRegistry, marker: Path,
                                     http: HTTPServer, version: str) -> None:
    registry.register_from_mcp(http.url, include=["count", "peek"], protocol_version=version)
    assert registry.invoke("count", {"tag": "a"}).content == "counted a"
    # The server goes away while idle and comes back a moment later. A read-only call made
    # meanwhile is sent again on a new session once the server is back.
    http.revive = True
    stop(http.proc)
    result = registry.invoke("peek", {"tag": "b"})
    assert not result.is_error, result.text
    assert lines(marker, "peek") == ["peek b"]
    # Down again: a call that may write is an error result, never sent twice.
    stop(http.proc)
    failed = registry.invoke("count", {"tag": "c"})
    assert lines(marker, "count").count("count c") <= 1
    if failed.is_error:
        assert failed.error_kind == "remote"
    deadline = time.monotonic() + 20
    while True:  # the next call, once the server is back, works
        again = registry.invoke("count", {"tag": "d"})
        if not again.is_error or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert again.content == "counted d", again.text
