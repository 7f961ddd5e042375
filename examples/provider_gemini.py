"""The whole tool loop with Gemini (the ``google-genai`` SDK).

* ``render_tool_prompt(registry, context)`` -> ``system_instruction=`` (the tool part of it);
* ``registry.get_schemas("gemini", include_deferred=False)`` -> function declarations;
* ``tool_choice(..., "gemini", registry=registry)`` -> the whole ``tool_config=``;
* ``response.function_calls`` -> ``registry.execute_tool_calls``;
* ``registry.build_tool_call_messages(...)`` -> ``[model echo, user content of
  function_response parts]`` (images a tool returned as ``inline_data`` parts).

The model turn sent back is the response's own content: Gemini signs its function calls
(``thought_signature``) and wants the signatures back; the registry supplies the responses.

No network, no API key: ``Replay`` stands in for ``genai.Client().models.generate_content``,
checks each request with the SDK's pydantic types and answers with recorded responses (parsed
into ``google.genai.types.GenerateContentResponse``).
Needs: toolregistry, google-genai.  Run: ``python examples/provider_gemini.py``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _replay import Replay, answered_gemini, validate_gemini
from google.genai import types
from weather_tools import build_registry

from toolregistry.prompt import render_tool_prompt
from toolregistry.tool_choice import tool_choice

API_FORMAT = "gemini"
MODEL = "gemini-2.5-flash"


def _response(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"index": 0, "finish_reason": "STOP",
                            "content": {"role": "model", "parts": parts}}],
            "model_version": MODEL}


def _call(name: str, args: dict[str, Any], signature: bytes | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"function_call": {"name": name, "args": args}}
    if signature is not None:
        part["thought_signature"] = signature
    return part


RECORDED = [
    _response([_call("get_weather", {"city": "Tokyo"}, signature=b"recorded-signature-1"),
               _call("get_weather", {"city": "Paris"})]),
    _response([_call("make_chart", {"data": "Tokyo 22\nParis 17", "title": "Today"},
                     signature=b"recorded-signature-2")]),
    _response([{"text": "Tokyo is sunny at 22°C and Paris cloudy at 17°C."}]),
]


def main() -> None:
    registry = build_registry()
    generate = Replay(  # in a real application: generate = genai.Client().models.generate_content
        RECORDED,
        parse=types.GenerateContentResponse.model_validate,
        validate=validate_gemini,
        asked=lambda r: [c.name for c in r.function_calls or []],
        answered=answered_gemini,
    )

    system = "You are a concise weather assistant.\n\n" + render_tool_prompt(
        registry, {"workspace": str(Path.cwd())})
    declarations = registry.get_schemas(API_FORMAT, include_deferred=False)
    functions = [types.FunctionDeclaration.model_validate(d) for d in declarations]
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Weather in Tokyo and Paris, "
                                                               "charted."}]}]
    choices = ["auto", "make_chart", "auto"]

    for turn in range(5):
        config = types.GenerateContentConfig(
            system_instruction=system,
            tools=[types.Tool(function_declarations=functions)],
            tool_config=types.ToolConfig.model_validate(
                tool_choice(choices[min(turn, 2)], API_FORMAT, registry=registry)),
        )
        response = generate(model=MODEL, contents=contents, config=config)
        calls = response.function_calls
        if not calls:
            print("model:", response.text)
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.args}) -> {result.text}")
        _echo, function_responses = registry.build_tool_call_messages(calls, results,
                                                                      api_format=API_FORMAT)
        contents.append(response.candidates[0].content)  # keeps the thought signatures
        contents.append(function_responses)
    else:
        raise RuntimeError("the model kept asking for tools")

    print("--- declarations sent:", [d["name"] for d in declarations])
    print("--- tool_config per turn:",
          [r["config"].tool_config.function_calling_config.mode.value for r in generate.requests])
    registry.close()


if __name__ == "__main__":
    main()
