"""Provider-only fields of a tool definition from its metadata: Anthropic's ``input_examples``
and ``allowed_callers`` (programmatic tool calling), checked against the SDK's own type."""

from __future__ import annotations

from typing import Any

import anthropic.types as anthropic_types
import pytest
from pydantic import TypeAdapter

from toolregistry import ToolRegistry
from toolregistry.decorators import tool
from toolregistry.tool import ToolMetadata


def test_anthropic_input_examples_and_allowed_callers_from_tool() -> None:
    @tool(input_examples=[{"city": "Tokyo"}, {"city": "Paris", "unit": "f"}],
          allowed_callers=["direct", "code_execution_20260120"])
    def weather(city: str, unit: str = "c") -> str:
        """Get the weather for a city."""
        return city

    reg = ToolRegistry()
    reg.register(weather)
    (definition,) = reg.get_schemas("anthropic")
    assert definition["input_examples"] == [{"city": "Tokyo"}, {"city": "Paris", "unit": "f"}]
    assert definition["allowed_callers"] == ["direct", "code_execution_20260120"]
    TypeAdapter(anthropic_types.ToolParam).validate_python(definition)
    keys = anthropic_types.ToolParam.__required_keys__ | anthropic_types.ToolParam.__optional_keys__
    assert set(definition) <= keys
    # other providers' definitions are unchanged
    (chat,) = reg.get_schemas("openai-chat")
    assert "input_examples" not in chat["function"] and "allowed_callers" not in chat


def test_left_out_when_not_set_and_updated_with_the_metadata() -> None:
    reg = ToolRegistry()
    reg.register(lambda city: city, name="echo")
    (definition,) = reg.get_schemas("anthropic")
    assert "input_examples" not in definition and "allowed_callers" not in definition
    reg.update_tool_metadata("echo", input_examples=[{"city": "Oslo"}])
    (definition,) = reg.get_schemas("anthropic")
    assert definition["input_examples"] == [{"city": "Oslo"}]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("input_examples", ["Tokyo"], r"input_examples\[0\] must be a mapping"),
    ("allowed_callers", ["direct", ""], "allowed_callers must be non-empty strings"),
])
def test_bad_values_are_named(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolMetadata(**{field: value})


def test_metadata_with_examples_stays_hashable() -> None:
    meta = ToolMetadata(input_examples={"a": 1})
    assert meta.input_examples == ({"a": 1},)
    assert hash(meta) == hash(ToolMetadata(input_examples=[{"a": 2}]))
