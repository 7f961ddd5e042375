"""Deferred tools the registry way (``discover_tools``) with OpenAI Chat Completions, on
recorded turns. Chat Completions has no tool search of its own; the same loop serves every
format without one (``gemini``: ``deferral_gemini.py``; ``bedrock-converse``, ``mcp``).

* ``registry.get_schemas("openai-chat", include_deferred=False)`` -> ``tools=``: the tools
  sent as usual and ``discover_tools``; the deferred tools are left out, and the system prompt
  says what they are (``get_deferred_summaries()``);
* the model calls ``discover_tools`` like any tool: ``execute_tool_calls`` runs it, its answer
  carries the found tools' definitions, and they count as found (``undiscovered_calls="refuse"``
  lets ``refund_order`` run);
* the next ``get_schemas`` appends the found tools after the others: the start of the list,
  and so the provider's prompt cache, stays the same;
* ``registry.build_tool_call_messages(...)`` -> the assistant message and the tool messages.

No network, no API key: ``Replay`` stands in for ``OpenAI().chat.completions.create``, checks
each request against the SDK's request type and answers with the recorded responses of
``recorded/deferral_openai_chat.json`` (built with the SDK's types by
``recorded/build_recordings.py``), parsed into ``openai.types.chat.ChatCompletion``.
Needs: toolregistry, toolregistry-discovery, openai.
Run: ``python examples/deferral_openai_chat.py``
"""

from __future__ import annotations

from typing import Any

from _replay import Replay, answered_chat, typed_dict_validator
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from shop_tools import build_registry, recording

API_FORMAT = "openai-chat"


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = OpenAI().chat.completions.create
        recording("deferral_openai_chat"),
        parse=ChatCompletion.model_validate,
        validate=typed_dict_validator(CompletionCreateParamsNonStreaming),
        asked=lambda r: [c.id for c in r.choices[0].message.tool_calls or []],
        answered=answered_chat,
    )
    summaries = "\n".join(f"- {s['name']}: {s['description']}"
                          for s in registry.get_deferred_summaries())
    system = ("You are a shop's support assistant. More tools, found with discover_tools:\n"
              + summaries)
    messages: list[Any] = [{"role": "system", "content": system},
                           {"role": "user",
                            "content": "My order A7 arrived broken. Please refund it."}]

    for _turn in range(5):
        tools = registry.get_schemas(API_FORMAT, include_deferred=False)  # every turn
        print("tools sent:", [t["function"]["name"] for t in tools])
        response = create(model="gpt-4.1", messages=messages, tools=tools)
        message = response.choices[0].message
        if not message.tool_calls:
            print("assistant:", message.content)
            break
        results = registry.execute_tool_calls(message.tool_calls)
        for call, result in zip(message.tool_calls, results):
            print(f"{call.function.name}({call.function.arguments}) -> {result.text[:70]}")
        print("found by discover_tools:", registry.revealed_tools)
        messages += registry.build_tool_call_messages(message.tool_calls, results,
                                                      api_format=API_FORMAT)
    else:
        raise RuntimeError("the model kept asking for tools")
    registry.close()


if __name__ == "__main__":
    main()
