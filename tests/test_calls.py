"""Provider-native tool calls, as the SDKs build them (objects and plain dicts), into ToolCall."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolregistry import ToolCall, ToolRegistry
from toolregistry._calls import CallParseError, parse_arguments, parse_call

ARGS = {"city": "東京", "days": 2}
ARGS_JSON = json.dumps(ARGS, ensure_ascii=False)


def openai_chat_call() -> Any:
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    return ChatCompletionMessageFunctionToolCall(
        id="call_chat", type="function", function=Function(name="forecast", arguments=ARGS_JSON))


def openai_chat_call_from_response() -> Any:
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-x",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "call_chat", "type": "function",
                            "function": {"name": "forecast", "arguments": ARGS_JSON}}]}}],
    })
    tool_calls = completion.choices[0].message.tool_calls
    assert tool_calls is not None
    return tool_calls[0]


def openai_responses_call() -> Any:
    from openai.types.responses import ResponseFunctionToolCall

    return ResponseFunctionToolCall(type="function_call", id="fc_item", call_id="call_resp",
                                    name="forecast", arguments=ARGS_JSON, status="completed")


def anthropic_call() -> Any:
    from anthropic.types import ToolUseBlock

    return ToolUseBlock(type="tool_use", id="toolu_1", name="forecast", input=dict(ARGS))


def anthropic_call_from_message() -> Any:
    from anthropic.types import Message

    message = Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "forecast", "input": ARGS}],
    })
    return message.content[1]


def gemini_function_call() -> Any:
    from google.genai import types

    return types.FunctionCall(name="forecast", args=dict(ARGS), id="gem_1")


def gemini_part() -> Any:
    from google.genai import types

    return types.Part(function_call=types.FunctionCall(name="forecast", args=dict(ARGS),
                                                       id="gem_1"),
                      thought_signature=b"sig")


def gemini_part_without_id() -> Any:
    from google.genai import types

    return types.Part.from_function_call(name="forecast", args=dict(ARGS))


SDK_CALLS = {
    "openai-chat": (openai_chat_call, "call_chat"),
    "openai-chat-from-response": (openai_chat_call_from_response, "call_chat"),
    "openai-responses": (openai_responses_call, "call_resp"),
    "anthropic": (anthropic_call, "toolu_1"),
    "anthropic-from-message": (anthropic_call_from_message, "toolu_1"),
    "gemini-function-call": (gemini_function_call, "gem_1"),
    "gemini-part": (gemini_part, "gem_1"),
}


def _expected_format(key: str) -> str:
    return "gemini" if key.startswith("gemini") else key.removesuffix(
        "-from-response").removesuffix("-from-message")


@pytest.mark.parametrize("key", sorted(SDK_CALLS))
def test_sdk_objects_are_recognised(key: str) -> None:
    make, call_id = SDK_CALLS[key]
    call = parse_call(make())
    assert call.format == _expected_format(key)
    assert call.name == "forecast"
    assert call.id == call_id
    assert call.arguments == ARGS


@pytest.mark.parametrize("key", sorted(SDK_CALLS))
@pytest.mark.parametrize("exclude_none", [False, True])
def test_the_same_calls_as_plain_dicts(key: str, exclude_none: bool) -> None:
    make, call_id = SDK_CALLS[key]
    data = make().model_dump(mode="json", exclude_none=exclude_none, by_alias=True)
    call = parse_call(data)
    assert (call.format, call.name, call.id, call.arguments) == (
        _expected_format(key), "forecast", call_id, ARGS)


def test_gemini_rest_camel_case_and_missing_id() -> None:
    call = parse_call({"functionCall": {"name": "forecast", "args": ARGS}})
    assert (call.format, call.id, call.arguments) == ("gemini", None, ARGS)
    call = parse_call(gemini_part_without_id())
    assert (call.format, call.name, call.id) == ("gemini", "forecast", None)


def test_gemini_thought_signature_is_kept() -> None:
    assert parse_call(gemini_part()).extra["thought_signature"] == b"sig"


def test_langchain_tool_call_dict() -> None:
    call = parse_call({"name": "forecast", "args": ARGS, "id": "lc_1", "type": "tool_call"})
    assert (call.format, call.id, call.arguments) == ("langchain", "lc_1", ARGS)


def test_registry_forms() -> None:
    call = parse_call(ToolCall(name="forecast", raw_arguments=ARGS_JSON))
    assert call.arguments == ARGS and call.format == "registry"
    call = parse_call({"name": "forecast", "arguments": ARGS_JSON, "id": "x"})
    assert (call.format, call.id, call.arguments) == ("registry", "x", ARGS)
    assert parse_call({"name": "ping"}).arguments == {}


def test_a_responses_call_is_never_taken_for_another_format() -> None:
    # It has name + arguments (like a registry dict) and an item id besides the call id.
    for obj in (openai_responses_call(),
                openai_responses_call().model_dump(mode="json"),
                {"type": "function_call", "id": "fc_item", "call_id": "call_resp",
                 "name": "forecast", "arguments": ARGS_JSON},
                {"call_id": "call_resp", "name": "forecast", "arguments": ARGS_JSON}):
        call = parse_call(obj)
        assert call.format == "openai-responses"
        assert call.id == "call_resp"  # the id the output must answer, not the item id
    assert parse_call(openai_responses_call()).extra["item_id"] == "fc_item"


def test_the_registry_parses_lists_of_mixed_formats(registry: ToolRegistry) -> None:
    calls = [make() for make, _ in SDK_CALLS.values()]
    parsed = registry.parse_tool_calls(calls)
    assert [c.id for c in parsed] == [cid for _, cid in SDK_CALLS.values()]


@pytest.mark.parametrize("raw, expected", [
    (None, {}), ("", {}), ("  ", {}), ("null", {}), ({"a": 1}, {"a": 1}),
    ('{"a": 1}', {"a": 1}), (b'{"a": 1}', {"a": 1}),
    ('"{\\"a\\": 1}"', {"a": 1}),  # double-encoded by the model
])
def test_accepted_argument_forms(raw: Any, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw, ToolCall(name="t")) == expected


def test_mapping_arguments_are_copied() -> None:
    original = {"a": 1}
    parsed = parse_arguments(original, ToolCall(name="t"))
    parsed["b"] = 2
    assert original == {"a": 1}


@pytest.mark.parametrize("raw, fragment", [
    ('{"a": 1', "not valid JSON"),
    ("[1, 2]", "got an array"),
    ("42", "got a number"),
    ('"text"', "got a string"),
    ("true", "got a boolean"),
    ([1, 2], "got an array"),
    ("[" * 100_000, "nested too deeply"),
])
def test_malformed_arguments(raw: Any, fragment: str) -> None:
    with pytest.raises(CallParseError, match=fragment) as info:
        parse_arguments(raw, ToolCall(name="t"))
    assert info.value.kind == "malformed_arguments"


@pytest.mark.parametrize("obj", [
    None, 3, "a string", ["a", "list"], {"foo": 1}, {"type": "text", "text": "hello"},
    {"type": "function"}, {"function": {"arguments": "{}"}}, {"name": 5, "arguments": "{}"},
    object(),
])
def test_malformed_calls(obj: Any) -> None:
    with pytest.raises(CallParseError) as info:
        parse_call(obj, 7)
    assert info.value.kind == "malformed_call"
    assert "#7" in str(info.value)


def test_a_call_object_that_breaks_on_inspection() -> None:
    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("boom")

    with pytest.raises(CallParseError):
        parse_call(Hostile())
