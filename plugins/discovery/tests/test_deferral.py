"""discover_tools with the kernel's deferral: left out where the provider searches deferred
tools itself, and what it returns counts as revealed (appended to the next tool list, callable
when undiscovered calls are refused)."""

from __future__ import annotations

import json
from typing import Any

from toolregistry import ToolMetadata, ToolRegistry


def _registry(**settings: Any) -> ToolRegistry:
    reg = ToolRegistry(tool_discovery=True, **settings)

    def get_weather(city: str) -> str:
        """Current weather conditions for a city."""
        return f"sunny in {city}"

    def compress_file(path: str) -> str:
        """Compress a file into a zip archive."""
        return f"{path}.zip"

    def send_email(to: str, body: str) -> str:
        """Send an email message to a recipient."""
        return f"sent to {to}"

    reg.register(get_weather)
    reg.register(compress_file, metadata=ToolMetadata(defer=True))
    reg.register(send_email, metadata=ToolMetadata(defer=True))
    return reg


def _names(schemas: list[dict[str, Any]]) -> list[str]:
    return [s["function"]["name"] if "function" in s else s.get("name") or s["type"]
            for s in schemas]


def _discover(reg: ToolRegistry, query: str) -> list[dict[str, Any]]:
    call = {"id": "call_d", "type": "function",
            "function": {"name": "discover_tools", "arguments": json.dumps({"query": query})}}
    (result,) = reg.execute_tool_calls([call])
    assert not result.is_error, result.text
    found: list[dict[str, Any]] = json.loads(result.text)
    return found


def test_discover_tools_gives_way_to_the_providers_search() -> None:
    reg = _registry()
    assert _names(reg.get_schemas("anthropic", include_deferred=False)) == [
        "get_weather", "tool_search_tool_bm25", "compress_file", "send_email"]
    assert _names(reg.get_schemas("openai-chat", include_deferred=False)) == [
        "discover_tools", "get_weather"]


def test_what_discover_tools_finds_is_appended_to_the_next_turn() -> None:
    reg = _registry()
    turn1 = reg.get_schemas("openai-chat", include_deferred=False)
    found = _discover(reg, "send_email")
    assert [f["name"] for f in found] == ["send_email"] and "schema" in found[0]
    turn2 = reg.get_schemas("openai-chat", include_deferred=False)
    assert turn2[:2] == turn1 and _names(turn2) == ["discover_tools", "get_weather",
                                                    "send_email"]
    _discover(reg, "zip archive")
    turn3 = reg.get_schemas("openai-chat", include_deferred=False)
    assert turn3[:3] == turn2 and _names(turn3)[3:] == ["compress_file"]
    assert reg.revealed_tools == ["send_email", "compress_file"]


def test_refused_calls_name_discover_tools_and_run_once_discovered() -> None:
    reg = _registry(undiscovered_calls="refuse")
    call = {"id": "call_z", "type": "function",
            "function": {"name": "compress_file", "arguments": '{"path": "a.txt"}'}}
    (refused,) = reg.execute_tool_calls([call])
    assert refused.error_kind == "undiscovered"
    assert "call 'discover_tools' to find it first" in refused.text
    _discover(reg, "compress a file into a zip")
    (result,) = reg.execute_tool_calls([call])
    assert (result.is_error, result.text) == (False, "a.txt.zip")
