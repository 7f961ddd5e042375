"""``discover_tools`` called through a served registry answers with MCP tool definitions
(``inputSchema``), the dialect of its caller, not OpenAI chat schemas (the mcp and discovery
plugins meet through the kernel's caller-format seam; the SDK's own client calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from toolregistry import ToolMetadata, ToolRegistry
from toolregistry.types import answering_in
from toolregistry_mcp import build_server


def registry_with_discovery(tmp_path: Path) -> ToolRegistry:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n", encoding="utf-8")
    registry = ToolRegistry(config=config, tool_discovery=True)

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"sunny in {city}"

    def convert_currency(amount: float, to: str) -> float:
        """Convert an amount of money into another currency."""
        return amount

    registry.register(get_weather)
    registry.register(convert_currency, metadata=ToolMetadata(defer=True))
    return registry


def test_discover_tools_over_mcp_answers_with_mcp_definitions(tmp_path: Path) -> None:
    registry = registry_with_discovery(tmp_path)

    async def main() -> tuple[Any, Any]:
        async with Client(build_server(registry), mode="legacy") as client:
            exact = await client.call_tool("discover_tools", {"query": "get_weather"})
            fuzzy = await client.call_tool("discover_tools", {"query": "currency money"})
            return exact, fuzzy

    try:
        exact, fuzzy = anyio.run(main)
    finally:
        registry.close()
    for answer in (exact, fuzzy):
        assert not answer.is_error, answer.content[0].text
    (found,) = [d for d in json.loads(exact.content[0].text) if d["name"] == "get_weather"]
    assert found["schema"]["name"] == "get_weather" and "function" not in found["schema"]
    assert found["schema"]["inputSchema"]["properties"]["city"]["type"] == "string"
    (deferred,) = [d for d in json.loads(fuzzy.content[0].text)
                   if d["name"] == "convert_currency"]
    assert "inputSchema" in deferred["schema"] and "function" not in deferred["schema"]


def test_calls_by_name_answer_in_the_format_the_caller_declares(tmp_path: Path) -> None:
    registry = registry_with_discovery(tmp_path)
    try:
        plain = registry.invoke("discover_tools", {"query": "get_weather"})
        with answering_in("anthropic"):
            anthropic = registry.invoke("discover_tools", {"query": "get_weather"})
        after = registry.invoke("discover_tools", {"query": "get_weather"})
    finally:
        registry.close()
    assert plain.value[0]["schema"]["type"] == "function"          # openai-chat by default
    assert "input_schema" in anthropic.value[0]["schema"]            # the declared dialect
    assert after.value[0]["schema"] == plain.value[0]["schema"]      # only inside the block
