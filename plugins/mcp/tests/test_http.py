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
    assert result.ok and "[truncated by toolregistry-mcp" in result.text


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
