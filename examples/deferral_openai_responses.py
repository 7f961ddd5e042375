"""Deferred tools with OpenAI's hosted tool search (Responses API), on recorded turns.

* ``registry.get_schemas("openai-responses", include_deferred=False)`` -> ``tools=``: the
  tools sent as usual, ``{"type": "tool_search"}``, then every deferred tool with
  ``defer_loading: true`` (a namespace's deferred tools would be grouped in one ``namespace``
  tool);
* ``response.output`` -> ``registry.execute_tool_calls``: the ``tool_search_call`` and
  ``tool_search_output`` items are the provider's own work: skipped, and the tools the search
  loaded count as found (``undiscovered_calls="refuse"`` lets ``refund_order`` run);
* ``registry.build_tool_call_messages(...)`` -> the input items to send back: the search items
  echoed before the ``function_call`` items, then the ``function_call_output`` items.

No network, no API key: ``Replay`` stands in for ``OpenAI().responses.create``, checks each
request against the SDK's request type and answers with the recorded responses of
``recorded/deferral_openai_responses.json`` (built with the SDK's types by
``recorded/build_recordings.py``), parsed into ``openai.types.responses.Response``.
Needs: toolregistry, toolregistry-discovery, openai.
Run: ``python examples/deferral_openai_responses.py``
"""

from __future__ import annotations

from typing import Any

from _replay import Replay, answered_responses, typed_dict_validator
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from shop_tools import build_registry, recording

API_FORMAT = "openai-responses"


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = OpenAI().responses.create
        recording("deferral_openai_responses"),
        parse=Response.model_validate,
        validate=typed_dict_validator(ResponseCreateParamsNonStreaming),
        asked=lambda r: [i.call_id for i in r.output if i.type == "function_call"],
        answered=answered_responses,
    )
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    print("tools sent:", [(t.get("name", t["type"]), t.get("defer_loading", False))
                          for t in tools])
    items: list[Any] = [{"role": "user",
                         "content": "My order A7 arrived broken. Please refund it."}]

    for _turn in range(5):
        response = create(model="gpt-5", input=items, tools=tools)
        output = [i for i in response.output if i.type != "message"]
        if not output:
            print("assistant:", response.output_text)
            break
        print("model output:", [i.type for i in response.output])
        calls = registry.parse_tool_calls(output)  # the search items are no calls
        results = registry.execute_tool_calls(output)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.arguments}) -> {result.text}")
        print("found by the provider's search:", registry.revealed_tools)
        answer = registry.build_tool_call_messages(output, results, api_format=API_FORMAT)
        print("sent back:", [i["type"] for i in answer])
        items += answer
    else:
        raise RuntimeError("the model kept asking for tools")
    registry.close()


if __name__ == "__main__":
    main()
