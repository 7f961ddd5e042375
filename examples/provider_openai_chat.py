"""The whole tool loop with OpenAI Chat Completions.

Schemas and the tool prompt go out, tool calls come in, results go back:

* ``render_tool_prompt(registry, context)`` -> the tool part of the system prompt
  (``<tool_best_practices>`` and ``<deferred_tools>``);
* ``registry.get_schemas("openai-chat", include_deferred=False)`` -> ``tools=``;
* ``tool_choice(..., "openai-chat", registry=registry)`` -> ``tool_choice=``;
* ``registry.execute_tool_calls(message.tool_calls)`` -> one result per call;
* ``registry.build_tool_call_messages(...)`` -> the assistant and ``tool`` messages, ids matched
  (images a tool returned follow in a user message: tool messages carry text only).

No network, no API key: ``Replay`` stands in for ``OpenAI().chat.completions.create``, checks
each request against the SDK's request type and answers with recorded responses (parsed into
``openai.types.chat.ChatCompletion``).
Needs: toolregistry, openai.  Run: ``python examples/provider_openai_chat.py``
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _replay import Replay, answered_chat, typed_dict_validator
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from weather_tools import build_registry

from toolregistry.prompt import render_tool_prompt
from toolregistry.tool_choice import tool_choice

API_FORMAT = "openai-chat"
MODEL = "gpt-4.1"


def _completion(n: int, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1764400000 + n,
            "model": MODEL, "choices": [{"index": 0, "finish_reason": finish,
                                         "message": {"role": "assistant", **message}}]}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


# What the model answered, turn by turn: two calls at once, then a forced chart, then text.
RECORDED = [
    _completion(1, {"content": None, "tool_calls": [
        _call("call_tokyo", "get_weather", {"city": "Tokyo"}),
        _call("call_paris", "get_weather", {"city": "Paris"}),
    ]}, "tool_calls"),
    _completion(2, {"content": None, "tool_calls": [
        _call("call_chart", "make_chart", {"data": "Tokyo 22\nParis 17", "title": "Now"}),
    ]}, "tool_calls"),
    _completion(3, {"content": "Tokyo is sunny at 22°C, Paris cloudy at 17°C; the chart "
                               "shows Tokyo warmer."}, "stop"),
]


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = OpenAI().chat.completions.create
        RECORDED,
        parse=ChatCompletion.model_validate,
        validate=typed_dict_validator(CompletionCreateParamsNonStreaming),
        asked=lambda r: [c.id for c in r.choices[0].message.tool_calls or []],
        answered=answered_chat,
    )

    system = "You are a concise weather assistant.\n\n" + render_tool_prompt(
        registry, {"workspace": str(Path.cwd())})
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Weather in Tokyo and Paris, and chart it please."},
    ]
    # Turn 2 forces the chart; the others let the model decide.
    choices = ["auto", "make_chart", "auto"]

    for turn in range(5):  # a bound on model calls, as every tool loop needs
        choice = tool_choice(choices[min(turn, 2)], API_FORMAT, registry=registry)
        response = create(model=MODEL, messages=messages, tools=tools, tool_choice=choice)
        message = response.choices[0].message
        if not message.tool_calls:
            print("assistant:", message.content)
            break
        results = registry.execute_tool_calls(message.tool_calls)
        for call, result in zip(message.tool_calls, results):
            print(f"{call.function.name}({call.function.arguments}) -> {result.text}"
                  f"{f' + {len(result.images)} image(s)' if result.images else ''}")
        messages.extend(registry.build_tool_call_messages(message.tool_calls, results,
                                                          api_format=API_FORMAT))
    else:
        raise RuntimeError("the model kept asking for tools")

    print("\n--- system prompt ---\n" + system)
    print("--- tools sent:", [t["function"]["name"] for t in tools])
    print("--- last request's messages:", [m["role"] for m in create.requests[-1]["messages"]])
    registry.close()


if __name__ == "__main__":
    main()
