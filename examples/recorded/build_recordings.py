"""Writes the recorded turns of the deferral examples, built with each provider SDK's types.

Every response is constructed from the SDK's own response models (``anthropic.types.Message``
and its blocks, ``openai.types.responses.Response`` and its items, ``ChatCompletion``,
``google.genai.types.GenerateContentResponse``), which check each field as they are built,
then written as the JSON the SDK serialises it to. The examples read the JSON files back into
the same types; ``tests/integration/test_deferral_examples.py`` checks that the files are what
this script builds. Run it after changing a recording:

    python examples/recorded/build_recordings.py
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
USER_ASKS = "My order A7 arrived broken. Please refund it."


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return out


def anthropic_turns() -> list[dict[str, Any]]:
    """Anthropic Messages with the BM25 tool search tool: the order looked up, then a server
    side search that loads ``refund_order`` and a call of it in the same turn, then text."""
    from anthropic.types import (
        Message,
        ServerToolUseBlock,
        TextBlock,
        ToolReferenceBlock,
        ToolSearchToolResultBlock,
        ToolSearchToolSearchResultBlock,
        ToolUseBlock,
        Usage,
    )

    def message(n: int, content: list[Any], stop: Any) -> dict[str, Any]:
        return _dump(Message(id=f"msg_0{n}", type="message", role="assistant",
                             model="claude-sonnet-4-5", content=content, stop_reason=stop,
                             stop_sequence=None,
                             usage=Usage(input_tokens=900 + 40 * n, output_tokens=60)))

    return [
        message(1, [TextBlock(type="text", text="Let me look at order A7 first."),
                    ToolUseBlock(type="tool_use", id="toolu_order", name="get_order",
                                 input={"order_id": "A7"})], "tool_use"),
        message(2, [
            TextBlock(type="text", text="The teapot was delivered; I'll find the refund tool."),
            ServerToolUseBlock(type="server_tool_use", id="srvtoolu_search",
                               name="tool_search_tool_bm25", input={"query": "refund order"}),
            ToolSearchToolResultBlock(
                type="tool_search_tool_result", tool_use_id="srvtoolu_search",
                content=ToolSearchToolSearchResultBlock(
                    type="tool_search_tool_search_result",
                    tool_references=[ToolReferenceBlock(type="tool_reference",
                                                        tool_name="refund_order")])),
            ToolUseBlock(type="tool_use", id="toolu_refund", name="refund_order",
                         input={"order_id": "A7", "reason": "arrived broken"}),
        ], "tool_use"),
        message(3, [TextBlock(type="text", text="Done: 34.00 EUR for the broken teapot (order "
                                                "A7) is on its way back to your card.")],
                "end_turn"),
    ]


def openai_responses_turns() -> list[dict[str, Any]]:
    """OpenAI Responses with the hosted ``tool_search``: the same conversation."""
    from openai.types.responses import (
        FunctionTool,
        Response,
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseToolSearchCall,
        ResponseToolSearchOutputItem,
    )

    def response(n: int, output: list[Any]) -> dict[str, Any]:
        return _dump(Response(id=f"resp_0{n}", object="response", created_at=1764900000 + n,
                              model="gpt-5", status="completed", output=output,
                              parallel_tool_calls=True, tool_choice="auto", tools=[]))

    def call(call_id: str, name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(type="function_call", id=f"fc_{call_id}",
                                        call_id=call_id, name=name, status="completed",
                                        arguments=json.dumps(arguments))

    refund_schema: dict[str, object] = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["order_id", "reason"],
    }
    return [
        response(1, [call("call_order", "get_order", {"order_id": "A7"})]),
        response(2, [
            ResponseToolSearchCall(type="tool_search_call", id="ts_01", call_id=None,
                                   execution="server", status="completed",
                                   arguments={"query": "refund order"}),
            ResponseToolSearchOutputItem(
                type="tool_search_output", id="tso_01", call_id=None, execution="server",
                status="completed",
                tools=[FunctionTool(type="function", name="refund_order",
                                    description="Refund an order to the customer's card.",
                                    parameters=refund_schema, strict=False,
                                    defer_loading=True)]),
            call("call_refund", "refund_order", {"order_id": "A7", "reason": "arrived broken"}),
        ]),
        response(3, [ResponseOutputMessage(
            type="message", id="msg_03", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", annotations=[],
                                        text="Done: 34.00 EUR for order A7 is on its way "
                                             "back to your card.")])]),
    ]


def openai_chat_turns() -> list[dict[str, Any]]:
    """OpenAI Chat Completions, the registry way: the order looked up and ``discover_tools``
    asked in one turn, then ``refund_order`` (appended to the tool list), then text."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.chat.chat_completion_message_function_tool_call import (
        ChatCompletionMessageFunctionToolCall,
        Function,
    )

    def completion(n: int, message: ChatCompletionMessage, finish: Any) -> dict[str, Any]:
        return _dump(ChatCompletion(id=f"chatcmpl-0{n}", object="chat.completion",
                                    created=1764900000 + n, model="gpt-4.1",
                                    choices=[Choice(index=0, finish_reason=finish,
                                                    message=message)]))

    def calls(*items: tuple[str, str, dict[str, Any]]) -> ChatCompletionMessage:
        return ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id=call_id, type="function",
                function=Function(name=name, arguments=json.dumps(arguments)))
            for call_id, name, arguments in items])

    return [
        completion(1, calls(("call_order", "get_order", {"order_id": "A7"}),
                            ("call_search", "discover_tools",
                             {"query": "refund an order", "top_k": 1})), "tool_calls"),
        completion(2, calls(("call_refund", "refund_order",
                             {"order_id": "A7", "reason": "arrived broken"})), "tool_calls"),
        completion(3, ChatCompletionMessage(role="assistant", content=(
            "Done: 34.00 EUR for order A7 is on its way back to your card.")), "stop"),
    ]


def gemini_turns() -> list[dict[str, Any]]:
    """Gemini, the registry way, as for OpenAI Chat Completions (signed function calls)."""
    from google.genai import types

    def response(parts: list[types.Part]) -> dict[str, Any]:
        return _dump(types.GenerateContentResponse(
            candidates=[types.Candidate(index=0, finish_reason=types.FinishReason.STOP,
                                        content=types.Content(role="model", parts=parts))],
            model_version="gemini-2.5-flash"))

    def call(name: str, args: dict[str, Any], signature: bytes | None = None) -> types.Part:
        return types.Part(function_call=types.FunctionCall(name=name, args=args),
                          thought_signature=signature)

    return [
        response([call("get_order", {"order_id": "A7"}, b"recorded-signature-1"),
                  call("discover_tools", {"query": "refund an order", "top_k": 1})]),
        response([call("refund_order", {"order_id": "A7", "reason": "arrived broken"},
                       b"recorded-signature-2")]),
        response([types.Part(text="Done: 34.00 EUR for order A7 is on its way back to your "
                                  "card.")]),
    ]


BUILDERS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "deferral_anthropic": anthropic_turns,
    "deferral_openai_responses": openai_responses_turns,
    "deferral_openai_chat": openai_chat_turns,
    "deferral_gemini": gemini_turns,
}


def text(turns: list[dict[str, Any]]) -> str:
    """A recording as written: indented JSON, one file per example."""
    return json.dumps(turns, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    for name, build in BUILDERS.items():
        (HERE / f"{name}.json").write_text(text(build()), encoding="utf-8")
        print(f"wrote recorded/{name}.json")


if __name__ == "__main__":
    main()
