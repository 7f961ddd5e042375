"""The whole tool loop with the OpenAI Responses API.

* ``render_tool_prompt(registry, context)`` -> ``instructions=`` (the tool part of it);
* ``registry.get_schemas("openai-responses", include_deferred=False)`` -> ``tools=``;
  deferred tools go out with ``defer_loading`` and the hosted ``tool_search`` tool
  (the ``deferral`` setting);
* ``tool_choice(..., "openai-responses", registry=registry)`` -> ``tool_choice=``;
* the ``function_call`` items of ``response.output`` -> ``registry.execute_tool_calls``;
* ``registry.build_tool_call_messages(...)`` -> the ``function_call`` items echoed and their
  ``function_call_output`` items, ``call_id`` matched (images as ``input_image`` parts).

With reasoning models, send the response's own output items back instead of the echo (they
carry the reasoning items), or chain with ``previous_response_id=response.id`` and send only
the ``function_call_output`` items.

No network, no API key: ``Replay`` stands in for ``OpenAI().responses.create``, checks each
request against the SDK's request type and answers with recorded responses (parsed into
``openai.types.responses.Response``).
Needs: toolregistry, openai.  Run: ``python examples/provider_openai_responses.py``
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _replay import Replay, answered_responses, typed_dict_validator
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from weather_tools import build_registry

from toolregistry.prompt import render_tool_prompt
from toolregistry.tool_choice import tool_choice

API_FORMAT = "openai-responses"
MODEL = "gpt-4.1"


def _response(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"resp_{n}", "object": "response", "created_at": 1764400000 + n,
            "model": MODEL, "status": "completed", "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


RECORDED = [
    _response(1, [_call("call_tokyo", "get_weather", {"city": "Tokyo"}),
                  _call("call_paris", "get_weather", {"city": "Paris"})]),
    _response(2, [_call("call_chart", "make_chart", {"data": "Tokyo 22\nParis 17"})]),
    _response(3, [{"type": "message", "id": "msg_3", "role": "assistant",
                   "status": "completed", "content": [{
                       "type": "output_text", "annotations": [],
                       "text": "Tokyo: sunny, 22°C. Paris: cloudy, 17°C. Chart attached."}]}]),
]


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = OpenAI().responses.create
        RECORDED,
        parse=Response.model_validate,
        validate=typed_dict_validator(ResponseCreateParamsNonStreaming),
        asked=lambda r: [i.call_id for i in r.output if i.type == "function_call"],
        answered=answered_responses,
    )

    instructions = "You are a concise weather assistant.\n\n" + render_tool_prompt(
        registry, {"workspace": str(Path.cwd())})
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    items: list[Any] = [{"role": "user", "content": "Weather in Tokyo and Paris, charted."}]
    choices = ["required", "make_chart", "auto"]

    for turn in range(5):
        choice = tool_choice(choices[min(turn, 2)], API_FORMAT, registry=registry)
        response = create(model=MODEL, instructions=instructions, input=items, tools=tools,
                          tool_choice=choice)
        calls = [i for i in response.output if i.type == "function_call"]
        if not calls:
            print("assistant:", response.output_text)
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.arguments}) -> {result.text}")
        items.extend(registry.build_tool_call_messages(calls, results, api_format=API_FORMAT))
    else:
        raise RuntimeError("the model kept asking for tools")

    print("--- tools sent:", [t.get("name", t["type"]) for t in tools])
    print("--- last request's items:",
          [i.get("type", i.get("role")) for i in create.requests[-1]["input"]])
    registry.close()


if __name__ == "__main__":
    main()
