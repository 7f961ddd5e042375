"""A served registry at protocol revision 2026-07-28 and the handshake revisions: what
``server/discover`` says it speaks (and that each of those revisions is answered), and the
cache hints of its results taken from the serve settings. A real served registry
(``servers/served_registry.py``) over streamable HTTP; the SDK's own client, and raw HTTP for
the handshake revisions the SDK client no longer offers."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from toolregistry.errors import ConfigError
from toolregistry_mcp import ServeOptions

from .conftest import post, served

NEWEST_FIRST = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


async def _modern(url: str) -> tuple[Any, Any, Any]:
    """(the discover result, tools/list, a call's result) from the SDK client at 2026-07-28."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), mode="auto") as client:
        assert client.session.protocol_version == "2026-07-28"
        listed = await client.list_tools(cache_mode="bypass")
        called = await client.call_tool("files-read", {"path": "a.txt"})
        return client.session.discover_result, listed, called


def _handshake(host: str, port: int, version: str) -> tuple[str, str]:
    """(the negotiated version, a call's text) over the initialize handshake at ``version``."""
    status, headers, text = post(host, port, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
    assert status == 200, text
    negotiated = json.loads(text)["result"]["protocolVersion"]
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "Mcp-Protocol-Version": negotiated}
    status, _, text = post(host, port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                           headers=session)
    assert status == 202, text
    status, _, text = post(host, port, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "files-read", "arguments": {"path": "b.txt"}}}, headers=session)
    assert status == 200, text
    return negotiated, json.loads(text)["result"]["content"][0]["text"]


def test_discover_names_every_revision_served_and_each_is_answered(procs: Any) -> None:
    with served({"json_response": True}, procs) as (host, port):
        discovered, _, called = anyio.run(_modern, f"http://{host}:{port}/mcp")
        assert discovered.supported_versions == NEWEST_FIRST
        assert called.content[0].text == "contents of a.txt"
        for version in discovered.supported_versions[1:]:
            assert _handshake(host, port, version) == (version, "contents of b.txt")


def test_cache_hints_come_from_the_serve_settings(procs: Any) -> None:
    hints = {"tools/list": {"ttl-ms": 60000, "cache-scope": "public"},
             "server/discover": {"ttl-ms": 5000}}
    with served({"cache_hints": hints}, procs) as (host, port):
        discovered, listed, _ = anyio.run(_modern, f"http://{host}:{port}/mcp")
    assert (listed.ttl_ms, listed.cache_scope) == (60000, "public")
    assert (discovered.ttl_ms, discovered.cache_scope) == (5000, "private")


@pytest.mark.parametrize(("hints", "extra", "says"), [
    ({"prompts/list": {"ttl-ms": 1}}, {}, "no cache hints for 'prompts/list'"),
    ({"tools/list": {"ttl-ms": -1}}, {}, "ttl-ms"),
    ({"tools/list": {"ttl-ms": 1, "cache-scope": "shared"}}, {}, "cache-scope"),
    ({"tools/list": {"ttlMs": 1}}, {}, "ttlMs"),
    ({"tools/list": {"ttl-ms": 1, "cache-scope": "public"}},
     {"auth": "bearer", "tokens": [{"name": "r", "env": "T", "tools": ["files-*"]}]},
     "cache-scope = 'public'"),
])
def test_cache_hint_settings_are_checked(hints: dict[str, Any], extra: dict[str, Any],
                                         says: str) -> None:
    with pytest.raises(ConfigError, match="MCP serve options") as caught:
        ServeOptions.resolve({"cache-hints": hints, **extra})
    assert says in str(caught.value)


def test_public_tools_list_is_fine_when_every_client_sees_every_tool() -> None:
    options = ServeOptions.resolve({
        "cache-hints": {"tools/list": {"ttl-ms": 1, "cache-scope": "public"}},
        "auth": "bearer", "tokens": [{"name": "all", "env": "T"}]})
    assert options.cache_hints["tools/list"].cache_scope == "public"


@pytest.mark.parametrize(("value", "says"), [(None, "it is not set"), ("short", "shorter")])
def test_a_request_state_key_must_be_set_and_long_enough(
        monkeypatch: pytest.MonkeyPatch, value: str | None, says: str) -> None:
    from toolregistry import ToolRegistry
    from toolregistry_mcp import build_server

    monkeypatch.delenv("STATE_KEY_FOR_TEST", raising=False)
    if value is not None:
        monkeypatch.setenv("STATE_KEY_FOR_TEST", value)
    with pytest.raises(ConfigError, match="request-state-key-env = 'STATE_KEY_FOR_TEST'") as e:
        build_server(ToolRegistry(), request_state_key_env="STATE_KEY_FOR_TEST")
    assert says in str(e.value)
