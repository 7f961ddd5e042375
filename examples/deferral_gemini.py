"""Deferred tools the registry way (``discover_tools``) with Gemini, on recorded turns.

Gemini has no tool search of its own, so the loop is that of ``deferral_openai_chat.py``:
``get_schemas("gemini", include_deferred=False)`` sends the usual tools and
``discover_tools`` as function declarations, the model's ``discover_tools`` call runs like any
other and its answer carries the found tools' declarations, and the next turn's declarations
have them appended. The model turn sent back is the response's own content (Gemini signs its
function calls and wants the signatures back).

No network, no API key: ``Replay`` stands in for ``genai.Client().models.generate_content``,
checks each request with the SDK's pydantic types and answers with the recorded responses of
``recorded/deferral_gemini.json`` (built with the SDK's types by
``recorded/build_recordings.py``), parsed into ``google.genai.types.GenerateContentResponse``.
Needs: toolregistry, toolregistry-discovery, google-genai.
Run: ``python examples/deferral_gemini.py``
"""

from __future__ import annotations

from typing import Any

from _replay import Replay, answered_gemini, validate_gemini
from google.genai import types
from shop_tools import build_registry, recording

API_FORMAT = "gemini"


def main() -> None:
    registry = build_registry()
    generate = Replay(  # in a real application: generate = genai.Client().models.generate_content
        recording("deferral_gemini"),
        parse=types.GenerateContentResponse.model_validate,
        validate=validate_gemini,
        asked=lambda r: [c.name for c in r.function_calls or []],
        answered=answered_gemini,
    )
    summaries = "\n".join(f"- {s['name']}: {s['description']}"
                          for s in registry.get_deferred_summaries())
    system = ("You are a shop's support assistant. More tools, found with discover_tools:\n"
              + summaries)
    contents: list[Any] = [{"role": "user", "parts": [
        {"text": "My order A7 arrived broken. Please refund it."}]}]

    for _turn in range(5):
        declarations = registry.get_schemas(API_FORMAT, include_deferred=False)  # every turn
        print("declarations sent:", [d["name"] for d in declarations])
        functions = [types.FunctionDeclaration.model_validate(d) for d in declarations]
        config = types.GenerateContentConfig(
            system_instruction=system, tools=[types.Tool(function_declarations=functions)])
        response = generate(model="gemini-2.5-flash", contents=contents, config=config)
        calls = response.function_calls
        if not calls:
            print("model:", response.text)
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.args}) -> {result.text[:70]}")
        print("found by discover_tools:", registry.revealed_tools)
        _echo, function_responses = registry.build_tool_call_messages(calls, results,
                                                                      api_format=API_FORMAT)
        contents += [response.candidates[0].content, function_responses]
    else:
        raise RuntimeError("the model kept asking for tools")
    registry.close()


if __name__ == "__main__":
    main()
