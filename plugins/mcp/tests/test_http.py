"""Streamable HTTP against our own server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from toolregistry import ToolRegistry


def test_streamable_http_load_and_call(registry: ToolRegistry, http_server: str) -> None:
    tools = registry.register_from_mcp(http_server, namespace=True,
                                       headers={"X-Test": "sesame"})
    assert "test-server-echo" in {t.name for t in tools}
    assert registry["test-server-echo"].provenance.detail == http_server
    assert registry.invoke("test-server-echo", {"text": "over http"}).content == "over http"
    assert registry.invoke("test-server-header", {"name": "x-test"}).content == "sesame"
    image = registry.invoke("test-server-image", {})
    assert image.ok and len(image.images) == 1
    added = registry.invoke("test-server-add", {"a": 40, "b": 2})
    assert json.loads(added.text) == {"sum": 42}
    failed = registry.invoke("test-server-fail", {})
    assert failed.is_error and failed.error_kind == "remote"


def test_streamable_http_timeout_and_concurrency(registry: ToolRegistry,
                                                 http_server: str) -> None:
    registry.register_from_mcp(http_server, timeout=1)
    slow = registry.invoke("slow", {"seconds": 30})
    assert slow.is_error and slow.error_kind == "timeout"

    async def many() -> list[Any]:
        return await asyncio.gather(*(registry.ainvoke("echo", {"text": str(i)})
                                      for i in range(25)))

    results = asyncio.run(many())
    assert [r.content for r in results] == [str(i) for i in range(25)]


def test_streamable_http_big_result(registry: ToolRegistry, http_server: str) -> None:
    registry.register_from_mcp(http_server, include=["big"])
    result = registry.invoke("big", {"mb": 5})
    assert result.ok and len(result.text) < 101_000
    if not registry.plugins.is_loaded("spool"):
        assert "[truncated by toolregistry-mcp" in result.text


def test_unreachable_url_is_a_clear_error(registry: ToolRegistry) -> None:
    import socket

    import pytest

    from toolregistry_mcp import MCPConnectError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(MCPConnectError) as info:
        registry.register_from_mcp(f"http://127.0.0.1:{port}/mcp", connect_timeout=5)
    assert f"127.0.0.1:{port}" in str(info.value)


def test_http_server_restart_starts_a_new_session(registry: ToolRegistry, procs: Any,
                                                  marker: Any) -> None:
    import subprocess
    import sys
    from pathlib import Path

    server = Path(__file__).parent / "servers" / "demo_server.py"
    port = procs.free_port()

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(server), "--http", str(port),
                                 "--marker", str(marker)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.wait_for_port(port, proc)
        return proc

    proc = start()
    try:
        registry.register_from_mcp(f"http://127.0.0.1:{port}/mcp", include=["echo", "die"])
        assert registry.invoke("echo", {"text": "1"}).content == "1"
        procs.stop(proc)
        proc = start()
        # The new server does not know our session (404): a new session, transparently.
        assert registry.invoke("echo", {"text": "2"}).content == "2"
        # Dying mid-call is an error for that call, and never re-sent.
        died = registry.invoke("die", {})
        assert died.is_error and died.error_kind == "remote"
        proc.wait(10)
        assert marker.read_text(encoding="utf-8").split().count("dying") == 1
        proc = start()
        assert registry.invoke("echo", {"text": "3"}).content == "3"
    finally:
        procs.stop(proc)


def test_http_timeout_sends_cancellation(registry: ToolRegistry, procs: Any,
                                         marker: Any) -> None:
    import sys
    import time
    from pathlib import Path

    server = Path(__file__).parent / "servers" / "demo_server.py"
    port = procs.free_port()
    with procs.listening([sys.executable, str(server), "--http", str(port),
                          "--marker", str(marker)], port, "/mcp") as url:
        registry.register_from_mcp(url, include=["slow"], timeout=1)
        result = registry.invoke("slow", {"seconds": 60})
        assert result.is_error and result.error_kind == "timeout"
        deadline = time.monotonic() + 10
        while "cancelled slow" not in marker.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline, "the server never saw notifications/cancelled"
            time.sleep(0.05)
