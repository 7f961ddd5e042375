"""Answer messages per provider, checked against the SDKs' own param types (issue 4)."""

from __future__ import annotations

import base64
import collections.abc
import json
import types
import typing
from typing import Any

import pytest
import typing_extensions

from toolregistry import Image, ToolRegistry, ToolResult
from toolregistry.errors import ToolCallError

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

# --- a strict structural check of TypedDict params ----------------------------------------------
# pydantic's TypeAdapter ignores unknown keys of a TypedDict and validates Iterable fields
# lazily, so it would pass a misspelt key or a bad nested block: check the shape exactly.

_WRAPPERS = {typing_extensions.Required, typing_extensions.NotRequired,
             typing_extensions.ReadOnly, typing.Required, typing.NotRequired}
_SEQUENCES = {list, tuple, collections.abc.Iterable, collections.abc.Sequence,
              typing.Iterable, typing.Sequence}


def conforms(value: Any, tp: Any, path: str = "$") -> None:
    """Raise AssertionError (with the path) when ``value`` is not a valid ``tp``."""
    origin = typing.get_origin(tp)
    if origin in _WRAPPERS or origin is typing.Annotated:
        return conforms(value, typing.get_args(tp)[0], path)
    if tp is typing.Any or tp is object:
        return None
    if typing_extensions.is_typeddict(tp):
        assert isinstance(value, dict), f"{path}: expected {tp.__name__}, got {value!r}"
        hints = typing.get_type_hints(tp, include_extras=True)
        unknown = set(value) - set(hints)
        assert not unknown, f"{path}: {tp.__name__} has no keys {unknown}"
        # Computed from the hints: with postponed annotations __required_keys__ misses
        # Required[...] on total=False dicts.
        required = {k for k, h in hints.items()
                    if typing.get_origin(h) in (typing_extensions.Required, typing.Required)
                    or (tp.__total__ and typing.get_origin(h) not in (
                        typing_extensions.NotRequired, typing.NotRequired))}
        missing = required - set(value)
        assert not missing, f"{path}: {tp.__name__} needs {missing}"
        for key, item in value.items():
            conforms(item, hints[key], f"{path}.{key}")
        return None
    if origin in (typing.Union, types.UnionType):
        failures = []
        for arm in typing.get_args(tp):
            try:
                conforms(value, arm, path)
                return None
            except AssertionError as exc:
                failures.append(str(exc))
        raise AssertionError(f"{path}: matches no arm of {tp}: {failures}")
    if origin is typing.Literal or origin is typing_extensions.Literal:
        assert value in typing.get_args(tp), f"{path}: {value!r} not in {typing.get_args(tp)}"
        return None
    if origin in _SEQUENCES:
        assert isinstance(value, (list, tuple)), f"{path}: expected a list, got {value!r}"
        (item_tp, *_) = typing.get_args(tp) or (typing.Any,)
        for i, item in enumerate(value):
            conforms(item, item_tp, f"{path}[{i}]")
        return None
    if origin in (dict, collections.abc.Mapping):
        assert isinstance(value, dict), f"{path}: expected a dict"
        return None
    if tp is type(None):
        assert value is None, f"{path}: expected None"
        return None
    if isinstance(tp, type):
        if tp is float:
            assert isinstance(value, (int, float)), f"{path}: expected a number"
        else:
            assert isinstance(value, tp) and not (tp is int and isinstance(value, bool)), \
                f"{path}: expected {tp.__name__}, got {value!r}"
        return None
    raise AssertionError(f"{path}: cannot check type {tp!r}")


def test_the_checker_catches_mistakes() -> None:
    from openai.types.chat import ChatCompletionMessageParam

    with pytest.raises(AssertionError):
        conforms({"role": "tool", "tool_call_id": "x", "content": "a", "bogus": 1},
                 ChatCompletionMessageParam)
    with pytest.raises(AssertionError):
        conforms({"role": "tool", "content": "a"}, ChatCompletionMessageParam)


# --- a registry and a turn with every kind of result -------------------------------------------

@pytest.fixture
def reg(registry: ToolRegistry) -> ToolRegistry:
    @registry.register
    def weather(city: str) -> dict[str, Any]:
        """Weather."""
        return {"city": city, "temp": 21}

    @registry.register
    def chart(title: str) -> tuple[str, Image]:
        """Chart."""
        return f"chart of {title}", Image.from_bytes(PNG)

    @registry.register
    def photo() -> Image:
        """A photo by URL."""
        return Image.from_url("https://example.test/p.jpg")

    @registry.register
    def broken() -> str:
        """Fails."""
        raise ToolCallError("service unavailable", kind="remote")

    return registry


CALLS: list[tuple[str, dict[str, object]]] = [("weather", {"city": "東京"}), ("chart", {"title": "sales"}), ("photo", {}),
         ("broken", {})]


def run_turn(reg: ToolRegistry, calls: list[Any]) -> list[ToolResult]:
    results = reg.execute_tool_calls(calls)
    assert len(results) == len(calls)
    return results


# --- OpenAI chat --------------------------------------------------------------------------------

def openai_chat_calls() -> list[Any]:
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    return [ChatCompletionMessageFunctionToolCall(
        id=f"call_{i}", type="function", function=Function(name=n, arguments=json.dumps(a)))
        for i, (n, a) in enumerate(CALLS)]


def test_openai_chat(reg: ToolRegistry) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    calls = openai_chat_calls()
    messages = reg.build_tool_call_messages(calls, run_turn(reg, calls), api_format="openai-chat")
    for message in messages:
        conforms(message, ChatCompletionMessageParam)
    assistant, *tools, user = messages
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_0", "call_1", "call_2", "call_3"]
    assert [m["tool_call_id"] for m in tools] == ["call_0", "call_1", "call_2", "call_3"]
    assert json.loads(tools[0]["content"]) == {"city": "東京", "temp": 21}
    assert tools[3]["content"].startswith("Error: ")  # no error flag in this API: the text says
    assert "image(s) follow" in tools[1]["content"]
    # Tool messages carry text only: the images follow in one user message.
    assert user["role"] == "user"
    urls = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    assert urls[0].startswith("data:image/png;base64,") and urls[1] == "https://example.test/p.jpg"


# --- OpenAI responses ---------------------------------------------------------------------------

def test_openai_responses(reg: ToolRegistry) -> None:
    from openai.types.responses import ResponseFunctionToolCall, ResponseInputItemParam

    calls = [ResponseFunctionToolCall(type="function_call", id=f"fc_{i}", call_id=f"call_{i}",
                                      name=n, arguments=json.dumps(a))
             for i, (n, a) in enumerate(CALLS)]
    items = reg.build_tool_call_messages(calls, run_turn(reg, calls),
                                         api_format="openai-responses")
    for item in items:
        conforms(item, ResponseInputItemParam)
    outputs = [i for i in items if i["type"] == "function_call_output"]
    assert [i["call_id"] for i in items[:4]] == [o["call_id"] for o in outputs] == [
        "call_0", "call_1", "call_2", "call_3"]
    assert outputs[1]["output"][0] == {"type": "input_text", "text": "chart of sales"}
    assert outputs[1]["output"][1]["type"] == "input_image"
    assert outputs[3]["output"].startswith("Error: ")


# --- Anthropic ----------------------------------------------------------------------------------

def test_anthropic(reg: ToolRegistry) -> None:
    from anthropic.types import MessageParam, ToolUseBlock

    calls = [ToolUseBlock(type="tool_use", id=f"toolu_{i}", name=n, input=a)
             for i, (n, a) in enumerate(CALLS)]
    assistant, user = reg.build_tool_call_messages(calls, run_turn(reg, calls),
                                                   api_format="anthropic")
    conforms(assistant, MessageParam)
    conforms(user, MessageParam)
    assert [b["id"] for b in assistant["content"]] == [f"toolu_{i}" for i in range(4)]
    blocks = user["content"]
    assert [b["tool_use_id"] for b in blocks] == [f"toolu_{i}" for i in range(4)]
    assert [b.get("is_error", False) for b in blocks] == [False, False, False, True]
    # Images go inside the tool_result.
    assert blocks[1]["content"][1]["source"]["type"] == "base64"
    assert blocks[2]["content"] == [{"type": "image", "source": {
        "type": "url", "url": "https://example.test/p.jpg"}}]


# --- Gemini -------------------------------------------------------------------------------------

def test_gemini_with_ids(reg: ToolRegistry) -> None:
    from google.genai import types as gt

    calls = [gt.Part(function_call=gt.FunctionCall(id=f"g{i}", name=n, args=a),
                     thought_signature=b"sig" if i == 0 else None)
             for i, (n, a) in enumerate(CALLS)]
    model, user = reg.build_tool_call_messages(calls, run_turn(reg, calls), api_format="gemini")
    model_content = gt.Content.model_validate(model)
    user_content = gt.Content.model_validate(user)
    parts = model_content.parts or []
    assert [p.function_call.id for p in parts if p.function_call] == ["g0", "g1", "g2", "g3"]
    assert parts[0].thought_signature == b"sig"
    user_parts = user_content.parts or []
    responses = [p.function_response for p in user_parts if p.function_response]
    assert [r.id for r in responses] == ["g0", "g1", "g2", "g3"]
    assert responses[0].response == {"output": {"city": "東京", "temp": 21}}
    assert responses[3].response is not None and "error" in responses[3].response
    inline = [p.inline_data for p in user_parts if p.inline_data]
    assert inline and inline[0].data == PNG and inline[0].mime_type == "image/png"
    assert [p.file_data.file_uri for p in user_parts if p.file_data] == [
        "https://example.test/p.jpg"]


def test_gemini_without_ids_matches_by_order(reg: ToolRegistry) -> None:
    from google.genai import types as gt

    calls = [gt.Part.from_function_call(name=n, args=a) for n, a in CALLS]
    results = run_turn(reg, calls)
    assert all(r.call_id for r in results)  # the application still gets ids to match
    model, user = reg.build_tool_call_messages(calls, results, api_format="gemini")
    gt.Content.model_validate(model)
    gt.Content.model_validate(user)
    assert all("id" not in p["function_call"] for p in model["parts"])
    responses = [p["function_response"] for p in user["parts"] if "function_response" in p]
    assert [r["name"] for r in responses] == [n for n, _ in CALLS]
    assert all("id" not in r for r in responses)


def test_gemini_content_rejects_unknown_fields() -> None:
    from google.genai import types as gt
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        gt.Content.model_validate({"role": "user", "parts": [{"bogus": 1}]})


# --- ids, order and malformed calls -------------------------------------------------------------

def test_results_out_of_order_are_refused(reg: ToolRegistry) -> None:
    calls = openai_chat_calls()[:2]
    results = run_turn(reg, calls)
    with pytest.raises(ValueError, match="keep results in the order"):
        reg.build_tool_call_messages(calls, results[::-1])
    with pytest.raises(ValueError, match="2 calls but 1 results"):
        reg.build_tool_call_messages(calls, results[:1])


def test_registry_calls_without_ids_get_the_results_ids(reg: ToolRegistry) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    calls = [{"name": "weather", "arguments": {"city": "Oslo"}}]
    results = run_turn(reg, calls)
    messages = reg.build_tool_call_messages(calls, results, api_format="openai-chat")
    for message in messages:
        conforms(message, ChatCompletionMessageParam)
    assert messages[0]["tool_calls"][0]["id"] == messages[1]["tool_call_id"] == results[0].call_id


def test_a_call_with_malformed_arguments_is_still_answered() -> None:
    from toolregistry._messages import build_messages

    calls = [{"id": "c1", "type": "function",
              "function": {"name": "weather", "arguments": '{"city": '}}]
    blocks = [{"type": "tool_use", "id": "t1", "name": "weather", "input": "x"}]
    registry = ToolRegistry()
    try:
        results = registry.execute_tool_calls(calls)
        block_results = registry.execute_tool_calls(blocks)
    finally:
        registry.close()
    assert results[0].error_kind == block_results[0].error_kind == "malformed_arguments"
    messages = build_messages(calls, results, "openai-chat")
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"city": '
    assert messages[1]["tool_call_id"] == "c1" and messages[1]["content"].startswith("Error:")
    anthropic = build_messages(blocks, block_results, "anthropic")
    assert anthropic[0]["content"][0]["input"] == {}
    assert anthropic[1]["content"][0] == {"type": "tool_result", "tool_use_id": "t1",
                                          "content": block_results[0].text, "is_error": True}


def test_unknown_format_is_an_error(reg: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="api_format"):
        reg.build_tool_call_messages([], [], api_format="mcp")
