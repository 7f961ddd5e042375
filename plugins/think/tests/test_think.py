"""toolregistry-think: injection, stripping, the two-layer setting, native parameters."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from toolregistry import Tool, ToolMetadata, ToolRegistry
from toolregistry.formats import API_FORMATS, BUILTIN
from toolregistry.testing import PluginContract
from toolregistry_think import DEFAULT_DESCRIPTION
from toolregistry_think._plugin import NativeReasonWarning

REASON = "The user asked about weather in Tokyo, so I should call get_weather with city=Tokyo."


class TestThinkContract(PluginContract):
    plugin_name = "think"
    registry_options = {"think_augment": True}


def params_of(definition: dict[str, Any], fmt: str) -> dict[str, Any]:
    params = BUILTIN.get(fmt).read_definition(definition).parameters
    assert params is not None, definition
    return params


def test_spec_example_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    registry = ToolRegistry(think_augment=True)

    @registry.register
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"Sunny in {city}"

    # The schema sent to the LLM includes "toolcall_reason"
    schema = registry.get_schemas()
    print(schema[0]["function"]["parameters"]["properties"].keys())
    assert capsys.readouterr().out.strip() == "dict_keys(['city', 'toolcall_reason'])"
    assert schema[0]["function"]["parameters"]["properties"]["toolcall_reason"] == {
        "type": "string", "description": "Why you chose this tool and what you expect from it."}
    assert schema[0]["function"]["parameters"]["required"] == ["city"]


def my_complex_function(query: str) -> str:
    """Complex."""
    return query


def my_simple_function(x: int) -> int:
    """Simple."""
    return x


def test_spec_per_tool_override_example() -> None:
    registry = ToolRegistry()  # think_augment=False by default in core

    # This tool always gets toolcall_reason, even though the registry default is off
    tool = Tool.from_function(
        my_complex_function,
        metadata=ToolMetadata(think_augment=True),
    )
    registry.register(tool)

    # This tool never gets toolcall_reason, even if registry is enabled later
    tool2 = Tool.from_function(
        my_simple_function,
        metadata=ToolMetadata(think_augment=False),
    )
    registry.register(tool2)

    def props() -> dict[str, list[str]]:
        return {s["function"]["name"]: list(s["function"]["parameters"]["properties"])
                for s in registry.get_schemas()}

    assert props() == {"my_complex_function": ["query", "toolcall_reason"],
                       "my_simple_function": ["x"]}
    registry.enable_think_augment()
    assert props()["my_simple_function"] == ["x"]
    registry.update_tool_metadata("my_simple_function", think_augment=True)
    registry.update_tool_metadata("my_complex_function", think_augment=False)
    assert props() == {"my_complex_function": ["query"],
                       "my_simple_function": ["x", "toolcall_reason"]}
    registry.update_tool_metadata("my_complex_function", think_augment=None)
    registry.disable_think_augment()
    assert props()["my_complex_function"] == ["query"]


@pytest.mark.parametrize("fmt", API_FORMATS)
def test_injected_in_every_format(fmt: str) -> None:
    reg = ToolRegistry(think_augment=True)
    reg.register(my_simple_function)
    reg.register(Tool(name="manual", parameters={"type": "object", "properties": {}},
                      callable=lambda: "ok"))

    class Cls:
        @staticmethod
        def method(a: str) -> str:
            return a

    reg.register_from_class(Cls)
    for definition in reg.get_schemas(fmt):
        props = params_of(definition, fmt)["properties"]
        assert props["toolcall_reason"]["type"] == "string"
        assert "toolcall_reason" not in params_of(definition, fmt).get("required", [])


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
def test_strict_schemas_make_it_required_and_nullable(fmt: str) -> None:
    reg = ToolRegistry(think_augment=True)
    reg.register(my_simple_function)
    params = params_of(reg.get_schemas(fmt, strict=True)[0], fmt)
    assert params["properties"]["toolcall_reason"]["type"] == ["string", "null"]
    assert "toolcall_reason" in params["required"]


def _calls(name: str, args: dict[str, Any]) -> list[Any]:
    import json

    return [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}},
        {"type": "function_call", "call_id": "c2", "name": name, "arguments": json.dumps(args)},
        {"type": "tool_use", "id": "c3", "name": name, "input": args},
        {"function_call": {"id": "c4", "name": name, "args": args}},
    ]


def test_stripped_on_every_path_and_kept_on_the_result() -> None:
    received: list[dict[str, Any]] = []

    def get_weather(city: str) -> str:
        """Weather."""
        received.append({"city": city})
        return f"Sunny in {city}"

    async def aget_weather(city: str) -> str:
        """Weather, async."""
        return f"Sunny in {city}"

    reg = ToolRegistry(think_augment=True)
    reg.register(get_weather)
    reg.register(aget_weather)
    args = {"city": "Tokyo", "toolcall_reason": REASON}
    with capture_logs() as logs:
        results = [reg.invoke("get_weather", dict(args), call_id="i1")]
        results += [asyncio.run(reg.ainvoke("aget_weather", dict(args)))]
        results += reg.execute_tool_calls(_calls("get_weather", args))
        results += asyncio.run(reg.aexecute_tool_calls(_calls("aget_weather", args)))
    assert all(r.ok and r.text == "Sunny in Tokyo" for r in results), results
    assert all(r.reason == REASON for r in results)
    events = [e for e in logs if e["event"] == "call.reason"]
    assert len(events) == len(results)
    assert events[0]["tool"] == "get_weather" and events[0]["call_id"] == "i1"
    assert {e["call_id"] for e in events} >= {"c1", "c2", "c3", "c4"}


def test_omitted_reason_and_reason_sent_to_a_tool_without_it() -> None:
    reg = ToolRegistry()
    reg.register(my_simple_function)  # think_augment off: not exposed, and not stripped
    result = reg.invoke("my_simple_function", {"x": 1, "toolcall_reason": "why not"})
    assert result.error_kind == "invalid_arguments"
    assert "toolcall_reason: unexpected argument" in result.text
    reg.enable_think_augment()  # on: the plans are recompiled, stripping applies at once
    result = reg.invoke("my_simple_function", {"x": 1, "toolcall_reason": "why not"})
    assert result.ok and result.text == "1" and result.reason == "why not"
    result = reg.invoke("my_simple_function", {"x": 2})
    assert result.ok and result.reason is None
    reg.update_tool_metadata("my_simple_function", think_augment=False)  # off for this tool
    result = reg.invoke("my_simple_function", {"x": 3, "toolcall_reason": "r"})
    assert result.error_kind == "invalid_arguments"


def test_a_reason_the_registry_asked_for_is_accepted_after_think_is_off() -> None:
    """Schemas handed out while think was on (an exported LangChain tool, an earlier turn's
    tool list) keep asking for the reason: the model's reason is stripped, not refused."""
    reg = ToolRegistry(think_augment=True)
    reg.register(my_simple_function)
    reg.register(my_complex_function, metadata=ToolMetadata(think_augment=True))
    reg.register(get_weather_never_shown)
    reg.get_schemas(names=["my_simple_function", "my_complex_function"])  # asked for it
    reg.disable_think_augment()
    reg.update_tool_metadata("my_complex_function", think_augment=False)
    assert all("toolcall_reason" not in s["function"]["parameters"]["properties"]
               for s in reg.get_schemas())
    args = {"x": 5, "toolcall_reason": REASON}
    result = reg.execute_tool_calls(_calls("my_simple_function", args))[0]
    assert result.ok and result.text == "5" and result.reason == REASON
    result = reg.invoke("my_complex_function", {"query": "q", "toolcall_reason": "r"})
    assert result.ok and result.reason == "r"
    # a tool whose schema never asked for a reason still refuses one
    result = reg.invoke("get_weather_never_shown", {"city": "x", "toolcall_reason": "r"})
    assert result.error_kind == "invalid_arguments"
    assert "toolcall_reason: unexpected argument" in result.text


def get_weather_never_shown(city: str) -> str:
    """Weather."""
    return city


def test_stripping_costs_nothing_for_tools_it_is_off_for() -> None:
    from toolregistry._hooks import Hooks

    reg = ToolRegistry()
    reg.register(my_simple_function)
    hooks: Hooks = reg.plugins.hooks
    assert hooks.for_tool(reg, reg["my_simple_function"]).pre_invoke is None
    reg.enable_think_augment()
    assert hooks.for_tool(reg, reg["my_simple_function"]).pre_invoke is not None


def test_injection_costs_nothing_for_tools_it_is_off_for() -> None:
    from toolregistry._hooks import Hooks

    reg = ToolRegistry()
    reg.register(my_simple_function)
    reg.register(my_complex_function, metadata=ToolMetadata(think_augment=True))
    hooks: Hooks = reg.plugins.hooks
    assert hooks.schema_hooks(reg, reg["my_simple_function"]) is None
    assert hooks.schema_hooks(reg, reg["my_complex_function"]) is not None
    # off: the tool's own schema goes out, neither copied nor transformed
    by_name = {s["function"]["name"]: s["function"]["parameters"] for s in reg.get_schemas()}
    assert by_name["my_simple_function"] is reg["my_simple_function"].parameters
    assert by_name["my_complex_function"] is not reg["my_complex_function"].parameters
    assert "toolcall_reason" in by_name["my_complex_function"]["properties"]
    reg.enable_think_augment()
    assert hooks.schema_hooks(reg, reg["my_simple_function"]) is not None
    params = reg.get_schemas()[0]["function"]["parameters"]
    assert params is not reg["my_simple_function"].parameters
    assert list(params["properties"]) == ["x", "toolcall_reason"]
    assert list(reg["my_simple_function"].parameters["properties"]) == ["x"]


def test_schema_first_tool_with_closed_schema() -> None:
    reg = ToolRegistry(think_augment=True)
    reg.register(Tool(name="closed", callable=lambda **kw: kw,
                      parameters={"type": "object", "properties": {"a": {"type": "integer"}},
                                  "additionalProperties": False, "required": ["a"]}))
    assert "toolcall_reason" in reg.get_parameters("closed")["properties"]
    result = reg.invoke("closed", {"a": 1, "toolcall_reason": "r"})
    assert result.ok and result.text == '{"a":1}'


def test_a_native_toolcall_reason_parameter_is_left_alone() -> None:
    reg = ToolRegistry(think_augment=True)

    def annotate(text: str, toolcall_reason: str) -> str:
        return f"{text}|{toolcall_reason}"

    with pytest.warns(NativeReasonWarning, match="declares its own 'toolcall_reason'"):
        reg.register(annotate)
    props = reg.get_parameters("annotate")["properties"]
    assert props["toolcall_reason"] == {"type": "string"}  # not replaced by the injected one
    result = reg.invoke("annotate", {"text": "a", "toolcall_reason": "mine"})
    assert result.ok and result.text == "a|mine" and result.reason is None


def test_description_from_the_plugin_table(tmp_path: Path) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(textwrap.dedent("""
        [tool.toolregistry]
        think-augment = true

        [tool.toolregistry.plugins.think]
        description = "Say why."
    """))
    reg = ToolRegistry(config=cfg)
    reg.register(my_simple_function)
    assert reg.get_parameters("my_simple_function")["properties"]["toolcall_reason"] == {
        "type": "string", "description": "Say why."}
    assert DEFAULT_DESCRIPTION != "Say why."


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "gemini"])
def test_required_from_the_plugin_table(tmp_path: Path, fmt: str) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(textwrap.dedent("""
        [tool.toolregistry]
        think-augment = true

        [tool.toolregistry.plugins.think]
        required = true
    """))
    with ToolRegistry(config=cfg) as reg:
        reg.register(my_simple_function)
        params = params_of(reg.get_schemas(fmt)[0], fmt)
        assert params["required"][-1] == "toolcall_reason"
        strict = params_of(reg.get_schemas("openai-chat", strict=True)[0], "openai-chat")
        assert strict["properties"]["toolcall_reason"]["type"] == "string"  # not nullable
        missing = reg.invoke("my_simple_function", {"x": 1})
        assert missing.is_error and "toolcall_reason is required" in missing.text
        ok = reg.invoke("my_simple_function", {"x": 1, "toolcall_reason": "why"})
        assert not ok.is_error and ok.reason == "why"


def test_blocked_by_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolregistry.errors import MissingPluginError

    monkeypatch.setenv("TOOLREGISTRY_DISABLE_PLUGINS", "think")
    with pytest.raises(MissingPluginError, match="blocked by configuration"):
        ToolRegistry(think_augment=True)
