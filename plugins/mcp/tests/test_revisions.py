"""The client at both spec revisions: 2026-07-28 (``server/discover``, the ``_meta`` envelope
and headers on every request, cache hints, ``subscriptions/listen``, multi-round-trip calls)
against the SDK's own server over stdio and streamable HTTP, and the fallback to the
``initialize`` handshake for older servers (npm's server-everything)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry_mcp import MCPClient, MCPConnectError

from .conftest import free_port, listening

MODERN = Path(__file__).parent / "servers" / "modern_server.py"


def modern_spec(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(MODERN), *args]}


@pytest.fixture
def modern_only_http() -> Iterator[str]:
    """The SDK's server over streamable HTTP, refusing every request that does not carry the
    2026-07-28 version header (a server that speaks only that revision)."""
    port = free_port()
    with listening([sys.executable, str(MODERN), "--http", str(port), "--modern-only"],
                   port, "/mcp") as url:
        yield url


def answer(params: Any) -> dict[str, Any]:
    assert "name" in params.message
    return {"action": "accept", "content": {"name": "Ada"}}


def test_a_server_speaking_only_2026_07_28_is_reached_with_its_headers(
        registry: ToolRegistry, modern_only_http: str) -> None:
    registry.register_from_mcp(modern_only_http, namespace="m")
    assert registry.invoke("m-add", {"a": 2, "b": 3}).content == "5"
    seen = json.loads(str(registry.invoke("m-whoami", {"region": "eu-west"}).content))
    assert seen == {"region": "eu-west", "headers": {
        "mcp-method": "tools/call", "mcp-name": "whoami", "mcp-param-region": "eu-west",
        "mcp-protocol-version": "2026-07-28"}}


def test_stdio_negotiates_the_newest_revision_and_legacy_on_request(no_orphans: None) -> None:
    with MCPClient(modern_spec()) as client:
        assert [t.name for t in client.list_tools()][:2] == ["add", "greet"]
        assert client.negotiated_version == "2026-07-28"
        assert client.server_info is not None and client.server_info.name == "modern-server"
    with MCPClient(modern_spec(), protocol_version="legacy") as client:
        client.connect()
        assert client.negotiated_version == "2025-11-25"
        assert client.call_tool("add", {"a": 1, "b": 1}).content[0].text == "2"  # type: ignore[union-attr]


def test_an_older_server_is_reached_through_the_handshake(registry: ToolRegistry,
                                                          everything_js: Path) -> None:
    with MCPClient({"command": "node", "args": [str(everything_js)]}) as client:
        client.connect()
        assert client.negotiated_version == "2025-11-25"
        result = client.call_tool("echo", {"message": "hi"})
        assert "hi" in result.content[0].text  # type: ignore[union-attr]


def test_bad_protocol_version_is_refused_before_anything_starts(no_orphans: None) -> None:
    with pytest.raises(ConfigError, match=r"'legacy'.*handshake-era"):
        MCPClient(modern_spec(), protocol_version="2025-06-18")
    with pytest.raises(ConfigError, match="protocol_version must be"):
        MCPClient(modern_spec(), protocol_version="newest")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_input_request_goes_to_the_applications_handler(
        registry: ToolRegistry, transport: str, modern_only_http: str) -> None:
    server: Any = modern_spec() if transport == "stdio" else modern_only_http
    registry.register_from_mcp(server, namespace="m", elicitation=answer)
    assert registry.invoke("m-greet", {}).content == "Hello, Ada!"


def test_an_input_request_without_a_handler_is_a_clear_error(registry: ToolRegistry) -> None:
    registry.register_from_mcp(modern_spec(), namespace="m")
    result = registry.invoke("m-greet", {})
    assert result.is_error and result.error_kind == "remote"
    assert "asks for input" in result.text and "elicitation=handler" in result.text
    assert registry.invoke("m-add", {"a": 1, "b": 2}).content == "3"  # the session goes on


def test_an_async_handler_is_awaited_and_a_legacy_session_uses_it_too(
        registry: ToolRegistry) -> None:
    async def handler(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Bo"}}

    registry.register_from_mcp(modern_spec(), namespace="l", protocol_version="legacy",
                               elicitation=handler)
    assert registry.invoke("l-greet", {}).content == "Hello, Bo!"


def test_tools_list_cache_hints_are_honoured(no_orphans: None) -> None:
    with MCPClient(modern_spec("--ttl-ms", "60000")) as client:
        client.list_tools()
        client.list_tools()
        assert client.call_tool("listings").content[0].text == "1"  # type: ignore[union-attr]
    with MCPClient(modern_spec()) as client:  # no hint: every listing reaches the server
        client.list_tools()
        client.list_tools()
        assert client.call_tool("listings").content[0].text == "2"  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_list_changes_arrive_through_subscriptions_listen(
        registry: ToolRegistry, transport: str, modern_only_http: str) -> None:
    server: Any = modern_spec() if transport == "stdio" else modern_only_http
    registry.register_from_mcp(server, namespace="m")
    assert "m-extra" not in registry
    assert registry.invoke("m-grow", {}).content == "grown"
    deadline = time.monotonic() + 20
    while "m-extra" not in registry:
        assert time.monotonic() < deadline, "the changed tool list was not applied"
        time.sleep(0.05)
    assert registry.invoke("m-extra", {}).content == "extra"


# --------------------------------------------------------------------------- tasks
def test_a_tool_that_requires_a_task_is_called_as_one(registry: ToolRegistry,
                                                      everything_js: Path) -> None:
    registry.register_from_mcp({"command": "node", "args": [str(everything_js)]},
                               namespace="e", include=["simulate-research-query", "echo"])
    result = registry.invoke("e-simulate-research-query", {"topic": "tides"})
    assert not result.is_error, result.text
    assert "Research Report: tides" in result.text
    assert "hi" in registry.invoke("e-echo", {"message": "hi"}).text  # plain calls as before


def test_a_task_past_its_deadline_is_cancelled_on_the_server(registry: ToolRegistry,
                                                             everything_js: Path) -> None:
    import structlog

    registry.register_from_mcp({"command": "node", "args": [str(everything_js)]},
                               namespace="e", include=["simulate-research-query"], timeout=1.5)
    with structlog.testing.capture_logs() as logs:
        result = registry.invoke("e-simulate-research-query", {"topic": "tides"})
    assert result.is_error and result.error_kind == "timeout"
    assert "run as a task" in result.text and "tasks/cancel" in result.text
    assert any(e["event"] == "mcp.task_cancelled" for e in logs)


def test_a_task_tool_the_session_cannot_run_is_refused_with_the_reason(
        registry: ToolRegistry) -> None:
    import structlog

    with structlog.testing.capture_logs() as logs:
        registry.register_from_mcp(modern_spec("--task-tool"), namespace="m",
                                   protocol_version="legacy")
    assert "m-add" in registry and "m-research" not in registry
    skipped = [e for e in logs if e["event"] == "mcp.tool_skipped"]
    assert skipped and skipped[0]["tool"] == "research"
    assert "taskSupport" in skipped[0]["reason"]


# --------------------------------------------------------------------------- errors
def test_after_a_sign_in_the_servers_own_refusal_is_reported(registry: ToolRegistry) -> None:
    import httpx2

    class SignIn(httpx2.Auth):
        """Like an OAuth flow: the first request goes without a token, the 401 starts the
        sign-in, and the request is sent again with the token it got."""

        def auth_flow(self, request: Any) -> Any:
            response = yield request
            if response.status_code == 401:
                request.headers["Authorization"] = "Bearer sekrit"
                yield request

    port = free_port()
    with listening([sys.executable, str(MODERN), "--http", str(port), "--modern-only",
                    "--bearer", "sekrit"], port, "/mcp") as url:
        with pytest.raises(MCPConnectError) as caught:
            registry.register_from_mcp(url, auth=SignIn(), protocol_version="legacy")
        message = str(caught.value)
        assert "Missing MCP-Protocol-Version header" in message and "401" not in message
        registry.register_from_mcp(url, auth=SignIn(), namespace="m")  # auto: it works
        assert registry.invoke("m-add", {"a": 1, "b": 2}).content == "3"
