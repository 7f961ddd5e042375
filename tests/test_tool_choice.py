"""tool_choice: one vocabulary into each provider's value (kernel only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ToolNotFoundError
from toolregistry.tool_choice import TOOL_CHOICE_FORMATS, tool_choice


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry("choice-test")

    @reg.register
    def get_weather(city: str) -> str:
        """Weather."""
        return city

    @reg.register
    def get_time(zone: str) -> str:
        """Time."""
        return zone

    yield reg
    reg.close()


EXPECTED: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "auto": "auto", "none": "none", "required": "required",
        "get_weather": {"type": "function", "function": {"name": "get_weather"}},
    },
    "openai-responses": {
        "auto": "auto", "none": "none", "required": "required",
        "get_weather": {"type": "function", "name": "get_weather"},
    },
    "anthropic": {
        "auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"},
        "get_weather": {"type": "tool", "name": "get_weather"},
    },
    "gemini": {
        "auto": {"function_calling_config": {"mode": "AUTO"}},
        "none": {"function_calling_config": {"mode": "NONE"}},
        "required": {"function_calling_config": {"mode": "ANY"}},
        "get_weather": {"function_calling_config": {
            "mode": "ANY", "allowed_function_names": ["get_weather"]}},
    },
    "langchain": {
        "auto": "auto", "none": "none", "required": "any", "get_weather": "get_weather",
    },
    "bedrock-converse": {  # Converse has no "none": leave toolConfig out instead
        "auto": {"auto": {}}, "none": ValueError, "required": {"any": {}},
        "get_weather": {"tool": {"name": "get_weather"}},
    },
}


@pytest.mark.parametrize("api_format", TOOL_CHOICE_FORMATS)
@pytest.mark.parametrize("value", ["auto", "none", "required", "get_weather"])
def test_every_value_in_every_format(api_format: str, value: str,
                                     registry: ToolRegistry) -> None:
    expected = EXPECTED[api_format][value]
    if expected is ValueError:
        with pytest.raises(ValueError, match=f"{api_format} has no tool choice {value!r}"):
            tool_choice(value, api_format, registry=registry)
        return
    assert tool_choice(value, api_format) == expected
    assert tool_choice(value, api_format, registry=registry) == expected


def test_default_format_is_openai_chat() -> None:
    assert tool_choice("required") == "required"


def test_any_and_case_are_accepted() -> None:
    assert tool_choice("any", "anthropic") == {"type": "any"}
    assert tool_choice("AUTO", "gemini") == {"function_calling_config": {"mode": "AUTO"}}
    assert tool_choice(" none ", "openai-chat") == "none"


def test_format_aliases() -> None:
    assert tool_choice("auto", "claude") == {"type": "auto"}
    assert tool_choice("x", "responses") == {"type": "function", "name": "x"}
    assert tool_choice("auto", "google") == {"function_calling_config": {"mode": "AUTO"}}
    assert tool_choice("required", "LangChain") == "any"


def test_results_are_fresh_objects() -> None:
    first = tool_choice("get_weather", "gemini")
    first["function_calling_config"]["allowed_function_names"].append("other")
    assert tool_choice("get_weather", "gemini")["function_calling_config"][
        "allowed_function_names"] == ["get_weather"]


def test_unknown_tool_names_close_matches(registry: ToolRegistry) -> None:
    with pytest.raises(ToolNotFoundError) as info:
        tool_choice("get_wether", "anthropic", registry=registry)
    message = str(info.value)
    assert "'get_wether'" in message
    assert "did you mean 'get_weather'" in message
    assert "'auto', 'none', 'required'" in message


def test_unknown_tool_without_close_match(registry: ToolRegistry) -> None:
    with pytest.raises(ToolNotFoundError, match="no tool named 'zzz'") as info:
        tool_choice("zzz", "openai-chat", registry=registry)
    assert "did you mean" not in str(info.value)


def test_disabled_tool_is_refused(registry: ToolRegistry) -> None:
    registry.disable("get_time", reason="clock broken")
    with pytest.raises(ValueError, match=r"'get_time' is disabled .*\(clock broken\)"):
        tool_choice("get_time", "openai-chat", registry=registry)


def test_without_registry_any_name_passes() -> None:
    assert tool_choice("not_checked", "anthropic") == {"type": "tool", "name": "not_checked"}


def test_bad_format() -> None:
    with pytest.raises(ValueError, match=r"unknown api_format 'bedrock'.*openai-chat"):
        tool_choice("auto", "bedrock")
    with pytest.raises(ValueError, match="'mcp' format has no tool choice"):
        tool_choice("auto", "mcp")


def test_bad_values() -> None:
    with pytest.raises(ValueError, match="empty value"):
        tool_choice("  ", "openai-chat")
    with pytest.raises(TypeError, match="got dict"):
        tool_choice({"type": "auto"}, "openai-chat")  # type: ignore[arg-type]
