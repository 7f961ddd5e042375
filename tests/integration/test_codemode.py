"""Programs from run_code meet every other plugin: think stripping, MCP and OpenAPI tools,
discovery of deferred tools, spooling of long output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolregistry_codemode
from toolregistry import Tool, ToolMetadata, ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
@pytest.fixture
def registry(api_url: str) -> Iterator[ToolRegistry]:
    reg = ToolRegistry(think_augment=True, tool_discovery=True, default_timeout=20)
    received: list[dict[str, Any]] = []
    reg.plugin_state("test")["received"] = received

    @reg.register
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        received.append({"city": city})
        return f"Sunny in {city}"

    def pet_food(kind: str) -> str:
        """Which food suits a kind of pet."""
        return {"cat": "fish", "dog": "meat"}.get(kind, "seeds")

    reg.register(Tool.from_function(pet_food, metadata=ToolMetadata(defer=True,
                                                                     search_hint="feed eat")))
    reg.register_from_mcp(str(EXAMPLES / "demo_mcp_server.py"), namespace="notes")
    reg.register_from_openapi(str(EXAMPLES / "demo_api.yaml"), base_url=api_url,
                              namespace="pets")
    toolregistry_codemode.enable_code_mode(reg)
    yield reg
    reg.close()


def test_mcp_and_openapi_tools_are_typed_functions(registry: ToolRegistry) -> None:
    description = registry["run_code"].description
    assert "async def notes_read_note(title: str) -> " in description
    assert "async def pets_getPet(petId: int) -> Any:" in description
    assert "toolcall_reason" not in description
    code = ("import asyncio\n"
            "note, pet = await asyncio.gather(notes_read_note(title='welcome'), pets_getPet(1))\n"
            "pets = await pets_listPets(limit=5)\n"
            "{'note': note, 'first': pet['name'], 'tags': sorted(p['tag'] for p in pets)}")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert json.loads(result.text) == {"note": "Hello from the MCP server.", "first": "Tama",
                                       "tags": ["cat", "dog"]}
    assert [c["tool"] for c in result.metadata["calls"]] == [
        "notes-read_note", "pets-getPet", "pets-listPets"]


def test_remote_errors_reach_the_program(registry: ToolRegistry) -> None:
    code = ("try:\n    await notes_read_note(title='nope')\nexcept RuntimeError as e:\n"
            "    print('mcp:', e)\nawait pets_getPet(petId=999)")
    result = registry.invoke("run_code", {"code": code})
    assert result.is_error
    assert "mcp: notes_read_note() failed (remote)" in result.text
    assert "line 5" in result.text and "HTTP 404" in result.text


def test_think_reason_is_stripped_from_calls_made_by_programs(registry: ToolRegistry) -> None:
    schema = registry.get_schemas()
    run = next(s for s in schema if s["function"]["name"] == "run_code")
    assert "toolcall_reason" in run["function"]["parameters"]["properties"]
    result = registry.invoke("run_code", {
        "code": "await call_tool('get_weather', {'city': 'Oslo', 'toolcall_reason': 'asked'})",
        "toolcall_reason": "the user wants the weather"})
    assert result.ok, result.text
    assert result.reason == "the user wants the weather"
    assert registry.plugin_state("test")["received"] == [{"city": "Oslo"}]


def test_deferred_tools_are_found_with_discovery_inside_a_program(registry: ToolRegistry
                                                                  ) -> None:
    description = registry["run_code"].description
    assert "pet_food" not in description
    assert "find them with discover_tools(query=...)" in description
    code = ("found = await discover_tools(query='food for a pet')\n"
            "name = found[0]['name']\n"
            "print(name)\n"
            "await call_tool(name, {'kind': 'cat'})")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert result.text == 'pet_food\nresult: "fish"'


def test_long_output_goes_to_the_spool(registry: ToolRegistry) -> None:
    result = registry.invoke("run_code", {"code": "print('word ' * 60000)"})
    assert result.ok
    spool = result.metadata.get("spool")
    assert spool and spool["handle"], result.metadata
    assert len(result.text) < 200_000
    page = registry.invoke("read_tool_output", {"handle": spool["handle"], "limit": 1})
    assert page.ok and "word" in page.text
    assert len(result.value.output) == len("word " * 60000) + 1  # the application has it all


def test_a_program_gets_the_whole_value_of_a_spooled_call(registry: ToolRegistry) -> None:
    def big_log() -> str:
        """A long log."""
        return "".join(f"line {i} ok\n" for i in range(30_000))

    registry.register(Tool.from_function(big_log, metadata=ToolMetadata(too_long_to_file=True)))
    model_view = registry.invoke("big_log")
    assert model_view.metadata.get("spool"), "the model's own call is spooled"
    result = registry.invoke("run_code", {"code": "len((await big_log()).splitlines())"})
    assert result.ok and result.text == "30000"  # the program read it all; the model reads 5 chars
