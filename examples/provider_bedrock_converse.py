"""The whole tool loop with the Amazon Bedrock Converse API (boto3 ``bedrock-runtime``).

* ``render_tool_prompt(registry, context)`` -> ``system=[{"text": ...}]`` (the tool part of it);
* ``registry.get_schemas("bedrock-converse", include_deferred=False)`` -> ``toolConfig.tools``;
* ``tool_choice(..., "bedrock-converse", registry=registry)`` -> ``toolConfig.toolChoice``;
* the ``toolUse`` blocks of ``response["output"]["message"]["content"]`` ->
  ``registry.execute_tool_calls``;
* ``registry.build_tool_call_messages(...)`` -> ``[assistant echo, user message of toolResult
  blocks]``, ``toolUseId`` matched (images as ``image`` blocks of bytes, errors flagged
  ``status: "error"``).

The assistant turn sent back is the response's own message; the registry supplies the results.

No network, no AWS account: ``Replay`` stands in for ``boto3.client("bedrock-runtime").converse``,
checks each request with botocore's own parameter validation against the bundled service model
(what boto3 does before it sends anything) and answers with recorded responses (plain dicts, as
boto3 returns them).
Needs: toolregistry, botocore.  Run: ``python examples/provider_bedrock_converse.py``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import botocore.session
from _replay import Replay
from botocore.validate import ParamValidator
from weather_tools import build_registry

from toolregistry.prompt import render_tool_prompt
from toolregistry.tool_choice import tool_choice

API_FORMAT = "bedrock-converse"
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
CONVERSE = botocore.session.get_session().get_service_model(
    "bedrock-runtime").operation_model("Converse").input_shape


def _response(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop, "usage": {"inputTokens": 400, "outputTokens": 40,
                                          "totalTokens": 440}}


def _use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": use_id, "name": name, "input": arguments}}


RECORDED = [
    _response([{"text": "Checking both cities."},
               _use("tooluse_tokyo", "get_weather", {"city": "Tokyo"}),
               _use("tooluse_paris", "get_weather", {"city": "Paris"})], "tool_use"),
    _response([_use("tooluse_chart", "make_chart", {"data": "Tokyo 22\nParis 17",
                                                    "title": "Today"})], "tool_use"),
    _response([{"text": "Tokyo is sunny (22°C), Paris cloudy (17°C)."}], "end_turn"),
]


def _validate(request: dict[str, Any]) -> None:
    report = ParamValidator().validate(request, CONVERSE)
    if report.has_errors():
        raise ValueError(report.generate_report())


def _answered(request: dict[str, Any]) -> list[str]:
    return [b["toolResult"]["toolUseId"] for b in request["messages"][-1]["content"]
            if "toolResult" in b]


def main() -> None:
    registry = build_registry()
    converse = Replay(  # in a real application: converse = boto3.client("bedrock-runtime").converse
        RECORDED,
        parse=lambda response: response,
        validate=_validate,
        asked=lambda r: [b["toolUse"]["toolUseId"] for b in r["output"]["message"]["content"]
                         if "toolUse" in b],
        answered=_answered,
    )

    system = "You are a concise weather assistant.\n\n" + render_tool_prompt(
        registry, {"workspace": str(Path.cwd())})
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    messages: list[Any] = [{"role": "user",
                            "content": [{"text": "Weather in Tokyo and Paris, charted."}]}]
    choices = ["auto", "make_chart", "auto"]

    for turn in range(5):
        choice = tool_choice(choices[min(turn, 2)], API_FORMAT, registry=registry)
        response = converse(modelId=MODEL, system=[{"text": system}], messages=messages,
                            toolConfig={"tools": tools, "toolChoice": choice},
                            inferenceConfig={"maxTokens": 1024})
        message = response["output"]["message"]
        calls = [block for block in message["content"] if "toolUse" in block]
        if not calls:
            print("assistant:", "".join(b.get("text", "") for b in message["content"]))
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            use = call["toolUse"]
            print(f"{use['name']}({use['input']}) -> {result.text}")
        _echo, tool_results = registry.build_tool_call_messages(calls, results,
                                                                api_format=API_FORMAT)
        messages.append(message)
        messages.append(tool_results)
    else:
        raise RuntimeError("the model kept asking for tools")

    print("--- tools sent:", [t["toolSpec"]["name"] for t in tools])
    print("--- toolChoice per turn:", [r["toolConfig"]["toolChoice"] for r in converse.requests])
    registry.close()


if __name__ == "__main__":
    main()
