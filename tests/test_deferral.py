"""Deferred tools the provider's way: native tool search where the format has it (Anthropic,
OpenAI Responses), the registry's own reveal elsewhere, a stable order across turns, and what a
call to a deferred tool nobody discovered does. Emitted definitions and echoed items are checked
against the provider SDKs' own types."""

from __future__ import annotations

from typing import Any

import anthropic.types as anthropic_types
import openai.types.responses as responses_types
import pytest
from pydantic import TypeAdapter

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry.tool import SEARCH_TOOL_TAG, ToolMetadata


def _keys_of(typed_dict: Any) -> frozenset[str]:
    return frozenset(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def _valid(typed_dict: Any, value: dict[str, Any]) -> None:
    """``value`` is a ``typed_dict`` by the SDK's own type, and has no key the type lacks
    (pydantic ignores unknown keys of a TypedDict)."""
    TypeAdapter(typed_dict).validate_python(value)
    assert set(value) <= _keys_of(typed_dict), set(value) - _keys_of(typed_dict)


def _registry(**settings: Any) -> ToolRegistry:
    reg = ToolRegistry(**settings)

    def weather(city: str) -> str:
        """Get the weather for a city."""
        return f"sunny in {city}"

    def deploy(service: str) -> str:
        """Deploy a service."""
        return f"deployed {service}"

    def rollback(service: str) -> str:
        """Roll a service back."""
        return f"rolled back {service}"

    def translate(text: str) -> str:
        """Translate a text."""
        return text[::-1]

    reg.register(weather)
    reg.register(deploy, metadata=ToolMetadata(defer=True))
    reg.register(rollback, metadata=ToolMetadata(defer=True))
    reg.register(translate, metadata=ToolMetadata(defer=True))
    return reg


def _names(schemas: list[dict[str, Any]]) -> list[str]:
    return [s.get("name") or s.get("function", {}).get("name") or s["type"] for s in schemas]


# --- item 1: native deferral ---------------------------------------------------------------

def test_anthropic_gets_defer_loading_and_its_tool_search() -> None:
    reg = _registry()
    search = reg.register(lambda q: q, name="find_tools",
                          metadata=ToolMetadata(custom_tags={SEARCH_TOOL_TAG}))
    assert search is not None
    tools = reg.get_schemas("anthropic", include_deferred=False)
    # the registry's own search is left out: the provider's takes its place
    assert _names(tools) == ["weather", "tool_search_tool_bm25", "deploy", "rollback",
                             "translate"]
    assert [t.get("defer_loading") for t in tools] == [None, None, True, True, True]
    for tool in tools:
        union = TypeAdapter(anthropic_types.ToolUnionParam)
        union.validate_python(tool)
    _valid(anthropic_types.ToolSearchToolBm25_20251119Param, tools[1])
    for tool in (tools[0], *tools[2:]):
        _valid(anthropic_types.ToolParam, tool)


def test_openai_responses_gets_tool_search_and_namespaces() -> None:
    reg = _registry()

    def restart(pod: str) -> str:
        """Restart a pod."""
        return pod

    def scale(pod: str, replicas: int) -> str:
        """Scale a deployment."""
        return pod

    reg.register(restart, namespace="k8s", metadata=ToolMetadata(defer=True))
    reg.register(scale, namespace="k8s", metadata=ToolMetadata(defer=True))
    tools = reg.get_schemas("openai-responses", deferral="native")
    assert _names(tools) == ["weather", "tool_search", "deploy", "rollback", "translate",
                             "k8s"]
    _valid(responses_types.ToolSearchToolParam, tools[1])
    for tool in (tools[0], *tools[2:5]):
        _valid(responses_types.FunctionToolParam, tool)
    assert all(t["defer_loading"] for t in tools[2:5]) and "defer_loading" not in tools[0]
    namespace = tools[5]
    _valid(responses_types.NamespaceToolParam, namespace)
    from openai.types.responses.namespace_tool_param import ToolFunction

    assert [t["name"] for t in namespace["tools"]] == [
        reg.get_tool_schema(n, "openai-responses")["name"] for n in reg.list_tools()[-2:]]
    for inner in namespace["tools"]:
        _valid(ToolFunction, inner)
        assert inner["defer_loading"] is True
    from openai.types.responses import ToolParam

    TypeAdapter(list[ToolParam]).validate_python(tools)
    fmt = reg.formats.get("openai-responses")
    assert [fmt.read_definition(t).name for t in tools] == _names(tools)  # tooling reads all


def test_formats_without_native_search_get_the_registry_way() -> None:
    reg = _registry()
    for fmt in ("openai-chat", "gemini", "mcp", "bedrock-converse"):
        assert len(reg.get_schemas(fmt, include_deferred=False)) == 1, fmt
    with pytest.raises(ValueError, match=r"'openai-chat' format has no native tool search"
                                         r".*anthropic"):
        reg.get_schemas("openai-chat", deferral="native")


def test_the_choice_per_registry_and_per_call() -> None:
    reg = _registry(deferral="registry")
    assert _names(reg.get_schemas("anthropic", include_deferred=False)) == ["weather"]
    assert len(reg.get_schemas("anthropic", deferral="auto")) == 5
    assert _names(reg.get_schemas("anthropic")) == ["weather", "deploy", "rollback",
                                                    "translate"]
    native = _registry(deferral="native")
    with pytest.raises(ValueError, match=r"deferral setting \(from argument\)"):
        native.get_schemas("gemini", include_deferred=False)
    with pytest.raises(ValueError, match="include_deferred=True sends every tool"):
        reg.get_schemas("anthropic", include_deferred=True, deferral="native")
    with pytest.raises(ValueError, match="unknown deferral 'lazy'"):
        reg.get_schemas("anthropic", deferral="lazy")
    with pytest.raises(ConfigError, match="deferral must be one of"):
        ToolRegistry(deferral="lazy")  # type: ignore[arg-type]


def test_no_search_tool_without_deferred_tools() -> None:
    reg = ToolRegistry()
    reg.register(lambda: "x", name="only")
    assert _names(reg.get_schemas("anthropic", include_deferred=False)) == ["only"]


def _anthropic_turn(reg: ToolRegistry) -> list[Any]:
    """An Anthropic response's content: the server-side tool search, then a call of what it
    found (SDK objects, as the client returns them)."""
    from anthropic.types import Message

    message = Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [
            {"type": "text", "text": "Let me look for a deploy tool."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25",
             "input": {"query": "deploy"}},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": {"type": "tool_search_tool_search_result",
                         "tool_references": [{"type": "tool_reference",
                                              "tool_name": "deploy"}]}},
            {"type": "tool_use", "id": "toolu_1", "name": "deploy",
             "input": {"service": "api"}},
        ]})
    return [b for b in message.content if b.type != "text"]


def test_anthropic_search_blocks_pass_through_and_reveal() -> None:
    reg = _registry(undiscovered_calls="refuse")
    content = _anthropic_turn(reg)
    assert [c.name for c in reg.parse_tool_calls(content)] == ["deploy"]
    reg.forget_revealed()
    results = reg.execute_tool_calls(content)
    assert [(r.name, r.text, r.is_error) for r in results] == [("deploy", "deployed api", False)]
    assert reg.revealed_tools == ["deploy"]
    messages = reg.build_tool_call_messages(content, results, api_format="anthropic")
    assert [b["type"] for b in messages[0]["content"]] == [
        "server_tool_use", "tool_search_tool_result", "tool_use"]
    assert messages[1]["content"][0]["tool_use_id"] == "toolu_1"
    for message in messages:
        TypeAdapter(anthropic_types.MessageParam).validate_python(message)
    _valid(anthropic_types.ServerToolUseBlockParam, messages[0]["content"][0])
    _valid(anthropic_types.ToolSearchToolResultBlockParam, messages[0]["content"][1])


def test_openai_responses_search_items_pass_through_and_reveal() -> None:
    from openai.types.responses import Response

    reg = _registry(undiscovered_calls="refuse")
    response = Response.model_validate({
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt",
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "output": [
            {"type": "tool_search_call", "id": "ts_1", "call_id": None, "execution": "server",
             "status": "completed", "arguments": {"query": "roll back"}},
            {"type": "tool_search_output", "id": "tso_1", "call_id": None,
             "execution": "server", "status": "completed",
             "tools": [{"type": "function", "name": "rollback", "defer_loading": True,
                        "parameters": {"type": "object"}}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "rollback",
             "arguments": '{"service": "api"}', "status": "completed"},
        ]})
    results = reg.execute_tool_calls(response.output)
    assert [(r.name, r.text) for r in results] == [("rollback", "rolled back api")]
    assert reg.revealed_tools == ["rollback"]
    items = reg.build_tool_call_messages(response.output, results,
                                         api_format="openai-responses")
    assert [i["type"] for i in items] == ["tool_search_call", "tool_search_output",
                                          "function_call", "function_call_output"]
    from openai.types.responses import ResponseInputItemParam
    from openai.types.responses.response_input_item_param import ToolSearchCall

    TypeAdapter(list[ResponseInputItemParam]).validate_python(items)
    _valid(ToolSearchCall, items[0])
    _valid(responses_types.ResponseToolSearchOutputItemParamParam, items[1])


# --- item 2: a stable order, revealed tools appended --------------------------------------

def test_revealed_tools_are_appended_in_reveal_order_across_turns() -> None:
    reg = _registry(deferral="registry")
    turn1 = reg.get_schemas("openai-chat", include_deferred=False)
    assert _names(turn1) == ["weather"]
    reg.reveal_tools(["translate"])
    turn2 = reg.get_schemas("openai-chat", include_deferred=False)
    assert turn2[:1] == turn1 and _names(turn2) == ["weather", "translate"]
    reg.reveal_tools(["deploy", "translate", "no_such_tool"])
    turn3 = reg.get_schemas("openai-chat", include_deferred=False)
    # deploy was registered before translate, but came later: it goes last, never between
    assert turn3[:2] == turn2 and _names(turn3) == ["weather", "translate", "deploy"]
    assert reg.get_schemas("openai-chat", include_deferred=False) == turn3  # cached, same
    reg.forget_revealed()
    assert reg.get_schemas("openai-chat", include_deferred=False) == turn1


def test_native_order_is_the_same_every_turn() -> None:
    reg = _registry()
    first = reg.get_schemas("anthropic", include_deferred=False)
    reg.reveal_tools(["translate"])  # the provider appends what it found; we change nothing
    assert reg.get_schemas("anthropic", include_deferred=False) == first


# --- item 4: calls to undiscovered deferred tools ------------------------------------------

def test_undiscovered_calls_run_by_default() -> None:
    reg = _registry()
    result = reg.invoke("deploy", {"service": "db"})
    assert (result.is_error, result.text) == (False, "deployed db")
    assert reg.revealed_tools == []


def test_undiscovered_calls_refused_until_revealed() -> None:
    reg = _registry(undiscovered_calls="refuse")
    call = {"type": "tool_use", "id": "toolu_9", "name": "deploy", "input": {"service": "db"}}
    (result,) = reg.execute_tool_calls([call])
    assert result.is_error and result.error_kind == "undiscovered"
    assert result.text == ("Error: tool 'deploy' is deferred and was not discovered in this "
                           "conversation: find it with the tool search first, then call it "
                           "as its definition says")
    reg.register(lambda query: [], name="find_tools",
                 metadata=ToolMetadata(custom_tags={SEARCH_TOOL_TAG}))
    (result,) = reg.execute_tool_calls([call])
    assert "call 'find_tools' to find it first" in result.text
    assert reg.invoke("weather", {"city": "Oslo"}).text == "sunny in Oslo"  # not deferred
    reg.reveal_tools(["deploy"])
    (result,) = reg.execute_tool_calls([call])
    assert (result.is_error, result.text) == (False, "deployed db")


def test_undiscovered_calls_revealed_and_run() -> None:
    reg = _registry(undiscovered_calls="reveal", deferral="registry")
    assert reg.invoke("rollback", {"service": "db"}).text == "rolled back db"
    assert reg.revealed_tools == ["rollback"]
    assert _names(reg.get_schemas(include_deferred=False)) == ["weather", "rollback"]
