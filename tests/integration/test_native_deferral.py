"""Deferred tools of a real MCP server (mcp-server-time over stdio) the providers' way: grouped
in an OpenAI Responses namespace behind the hosted tool search, the provider's search items in
the model's output passed through and the call they lead to run against the server; and the
registry's way for OpenAI chat, where ``discover_tools`` reveals them at the end of the list.
The mcp and discovery plugins meet only through the kernel (defer, reveal, the search tag)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.responses import Response, ResponseInputItemParam, ToolParam
from pydantic import TypeAdapter

from toolregistry import ToolRegistry

pytest.importorskip("mcp_server_time")


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry(tool_discovery=True, undiscovered_calls="refuse")

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"sunny in {city}"

    reg.register(get_weather)
    reg.register_from_mcp(
        {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        namespace="clock", defer=True)
    try:
        yield reg
    finally:
        reg.close()


def test_openai_responses_namespace_search_and_call(registry: ToolRegistry) -> None:
    tools = registry.get_schemas("openai-responses", include_deferred=False)
    TypeAdapter(list[ToolParam]).validate_python(tools)
    names = [t.get("name", t["type"]) for t in tools]
    assert "get_weather" in names and names[-2:] == ["tool_search", "clock"]
    (namespace,) = [t for t in tools if t["type"] == "namespace"]
    inner = [t["name"] for t in namespace["tools"]]
    assert sorted(inner) == ["clock-convert_time", "clock-get_current_time"]
    assert all(t["defer_loading"] for t in namespace["tools"])

    response = Response.model_validate({
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt",
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "output": [
            {"type": "tool_search_call", "id": "ts_1", "execution": "server",
             "status": "completed", "arguments": {"query": "current time"}},
            {"type": "tool_search_output", "id": "tso_1", "execution": "server",
             "status": "completed",
             "tools": [{"type": "namespace", "name": "clock", "description": "d",
                        "tools": [{"type": "function", "name": "clock-get_current_time",
                                   "defer_loading": True}]}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1",
             "namespace": "clock", "name": "clock-get_current_time",
             "arguments": '{"timezone": "Asia/Tokyo"}', "status": "completed"},
        ]})
    (result,) = registry.execute_tool_calls(response.output)
    assert result.ok, result.text
    assert json.loads(result.text)["timezone"] == "Asia/Tokyo"
    assert registry.revealed_tools == ["clock-get_current_time"]
    items = registry.build_tool_call_messages(response.output, [result],
                                              api_format="openai-responses")
    TypeAdapter(list[ResponseInputItemParam]).validate_python(items)
    assert [i["type"] for i in items] == ["tool_search_call", "tool_search_output",
                                          "function_call", "function_call_output"]
    # the other tool of the namespace was never found: refused, it did not run
    (refused,) = registry.execute_tool_calls([{
        "type": "function_call", "call_id": "call_2", "name": "clock-convert_time",
        "arguments": json.dumps({"source_timezone": "UTC", "time": "12:00",
                                 "target_timezone": "Asia/Tokyo"})}])
    assert refused.error_kind == "undiscovered"


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_openai_chat_discovers_and_appends(registry: ToolRegistry) -> None:
    turn1 = registry.get_schemas("openai-chat", include_deferred=False)
    assert {"discover_tools", "get_weather"} <= set(_names(turn1))
    assert not [n for n in _names(turn1) if n.startswith("clock-")]
    call = {"id": "call_1", "type": "function",
            "function": {"name": "clock-convert_time", "arguments": json.dumps(
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})}}
    (refused,) = registry.execute_tool_calls([call])
    assert "call 'discover_tools' to find it first" in refused.text
    (found,) = registry.execute_tool_calls([{
        "id": "call_2", "type": "function",
        "function": {"name": "discover_tools",
                     "arguments": '{"query": "clock-convert_time"}'}}])
    assert json.loads(found.text)[0]["name"] == "clock-convert_time"
    turn2 = registry.get_schemas("openai-chat", include_deferred=False)
    assert turn2[:len(turn1)] == turn1 and _names(turn2)[len(turn1):] == ["clock-convert_time"]
    (converted,) = registry.execute_tool_calls([call])
    assert converted.ok and "Asia/Tokyo" in converted.text
