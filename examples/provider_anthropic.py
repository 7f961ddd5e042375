"""The whole tool loop with the Anthropic Messages API.

* ``render_tool_prompt(registry, context)`` -> ``system=`` (the tool part of it);
* ``registry.get_schemas("anthropic", include_deferred=False)`` -> ``tools=``;
  deferred tools go out with ``defer_loading`` and Anthropic's tool search tool (the ``deferral`` setting);
* ``tool_choice(..., "anthropic", registry=registry)`` -> ``tool_choice=``;
* the ``tool_use`` blocks of ``response.content`` -> ``registry.execute_tool_calls``;
* ``registry.build_tool_call_messages(...)`` -> ``[assistant echo, user message of
  tool_result blocks]``, ``tool_use_id`` matched (images as base64 image blocks, errors
  flagged ``is_error``).

The assistant turn sent back is the response's own content (text and, with extended
thinking, signed thinking blocks must be kept); the registry supplies the tool results.

No network, no API key: ``Replay`` stands in for ``Anthropic().messages.create``, checks each
request against the SDK's request type and answers with recorded responses (parsed into
``anthropic.types.Message``).
Needs: toolregistry, anthropic.  Run: ``python examples/provider_anthropic.py``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _replay import Replay, answered_anthropic, typed_dict_validator
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from weather_tools import build_registry

from toolregistry.prompt import render_tool_prompt
from toolregistry.tool_choice import tool_choice

API_FORMAT = "anthropic"
MODEL = "claude-sonnet-4-5"


def _message(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 400 + n, "output_tokens": 40}}


def _use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


RECORDED = [
    _message(1, [{"type": "text", "text": "Checking both cities."},
                 _use("toolu_tokyo", "get_weather", {"city": "Tokyo"}),
                 _use("toolu_paris", "get_weather", {"city": "Paris"})], "tool_use"),
    _message(2, [_use("toolu_chart", "make_chart", {"data": "Tokyo 22\nParis 17",
                                                    "title": "Today"})], "tool_use"),
    _message(3, [{"type": "text", "text": "Tokyo is sunny (22°C), Paris cloudy (17°C)."}],
             "end_turn"),
]


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = Anthropic().messages.create
        RECORDED,
        parse=Message.model_validate,
        validate=typed_dict_validator(MessageCreateParamsNonStreaming),
        asked=lambda r: [b.id for b in r.content if b.type == "tool_use"],
        answered=answered_anthropic,
    )

    system = "You are a concise weather assistant.\n\n" + render_tool_prompt(
        registry, {"workspace": str(Path.cwd())})
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    messages: list[Any] = [{"role": "user", "content": "Weather in Tokyo and Paris, charted."}]
    choices = ["auto", "make_chart", "auto"]

    for turn in range(5):
        choice = tool_choice(choices[min(turn, 2)], API_FORMAT, registry=registry)
        response = create(model=MODEL, max_tokens=1024, system=system, messages=messages,
                          tools=tools, tool_choice=choice)
        calls = [b for b in response.content if b.type == "tool_use"]
        if not calls:
            print("assistant:", "".join(b.text for b in response.content if b.type == "text"))
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.input}) -> {result.text}")
        _echo, tool_results = registry.build_tool_call_messages(calls, results,
                                                                api_format=API_FORMAT)
        messages.append({"role": "assistant", "content": response.content})
        messages.append(tool_results)
    else:
        raise RuntimeError("the model kept asking for tools")

    print("--- tools sent:", [t["name"] for t in tools])
    print("--- tool_choice per turn:", [r["tool_choice"] for r in create.requests])
    registry.close()


if __name__ == "__main__":
    main()
