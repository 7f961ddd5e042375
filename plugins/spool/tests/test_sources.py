"""Spooling results of tools from the other loaders, against real servers on loopback.

Each test is skipped when its loader plugin is not installed (the spool plugin's own session
has only the kernel); the "everything" session runs them all.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolregistry_spool as ts
from toolregistry import ToolMetadata, ToolRegistry

MakeRegistry = Callable[..., ToolRegistry]
SERVER = Path(__file__).parent / "servers" / "long_mcp_server.py"


def lines(n: int) -> str:
    return "".join(f"line {i:07d} {'y' * 40}\n" for i in range(n))


def check_spooled(registry: ToolRegistry, result: Any, expected: str) -> None:
    assert result.ok, result.content
    info = result.metadata["spool"]
    assert Path(info["path"]).read_text(encoding="utf-8") == expected
    assert ts.estimate_tokens(result.text) <= 1000
    page = registry.invoke("read_tool_output", {"handle": info["handle"], "tail": 1})
    assert page.ok and expected.splitlines()[-1] in page.text


def test_mcp_tool_over_stdio(make_registry: MakeRegistry) -> None:
    pytest.importorskip("toolregistry_mcp")
    registry = make_registry(all_tools=True)
    registry.register_from_mcp(str(SERVER))
    assert "read_tool_output" in registry
    check_spooled(registry, registry.invoke("dump", {"n": 3000}), lines(3000))


class _Handler(BaseHTTPRequestHandler):
    SPEC: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "logs", "version": "1"},
        "paths": {"/logs": {"get": {
            "operationId": "getLogs",
            "summary": "Numbered log lines.",
            "parameters": [{"name": "n", "in": "query", "required": True,
                            "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "the lines",
                                  "content": {"text/plain": {"schema": {"type": "string"}}}}},
        }}},
    }

    def do_GET(self) -> None:
        n = int(self.path.split("n=", 1)[1]) if "n=" in self.path else 0
        body = lines(n).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_openapi_operation(make_registry: MakeRegistry, http_base: str) -> None:
    pytest.importorskip("toolregistry_openapi")
    registry = make_registry(all_tools=True)
    registry.register_from_openapi(json.loads(json.dumps(_Handler.SPEC)), base_url=http_base)
    name = next(n for n in registry.list_tools() if n != "read_tool_output")
    result = registry.invoke(name, {"n": 3000})
    assert result.ok, result.content
    assert "spool" in result.metadata
    assert "line 0002999" in Path(result.metadata["spool"]["path"]).read_text(encoding="utf-8")


def test_langchain_tool(make_registry: MakeRegistry) -> None:
    pytest.importorskip("toolregistry_langchain")
    from langchain_core.tools import tool

    @tool
    def dump(n: int) -> str:
        """Return n numbered log lines."""
        return lines(n)

    registry = make_registry()
    registry.register_from_langchain(dump, metadata=ToolMetadata(too_long_to_file=True))
    assert "read_tool_output" in registry
    check_spooled(registry, registry.invoke("dump", {"n": 3000}), lines(3000))


def test_spec_example_decorator(make_registry: MakeRegistry, tmp_path: Path) -> None:
    """The spec's `@tool(too_long_to_file=True)` example, with a real large file."""
    import asyncio

    from toolregistry.decorators import tool

    @tool(too_long_to_file=True)
    async def read_large_file(path: str) -> str:
        """Read a potentially large file."""
        with open(path) as f:
            return f.read()

    big = tmp_path / "big.log"
    big.write_text(lines(3000))
    registry = make_registry()
    registry.register(read_large_file)
    result = asyncio.run(registry.ainvoke("read_large_file", {"path": str(big)}))
    check_spooled(registry, result, lines(3000))
