"""Deferred tools with Anthropic's own tool search, on recorded turns.

* ``registry.get_schemas("anthropic", include_deferred=False)`` -> ``tools=``: the tools sent
  as usual, then the BM25 tool search tool, then every deferred tool with
  ``defer_loading: true`` (Claude reads a deferred definition only once its search loads it);
* the response's content -> ``registry.execute_tool_calls``: the ``server_tool_use`` and
  ``tool_search_tool_result`` blocks are the provider's own work, not calls: skipped, and the
  tools they loaded count as found (``undiscovered_calls="refuse"`` lets ``refund_order`` run);
* ``registry.build_tool_call_messages(...)`` -> the assistant message with the search blocks
  echoed before the ``tool_use`` blocks, then the ``tool_result`` blocks.

No network, no API key: ``Replay`` stands in for ``Anthropic().messages.create``, checks each
request against the SDK's request type and answers with the recorded responses of
``recorded/deferral_anthropic.json`` (built with the SDK's types by
``recorded/build_recordings.py``), parsed into ``anthropic.types.Message``.
Needs: toolregistry, toolregistry-discovery, anthropic.
Run: ``python examples/deferral_anthropic.py``
"""

from __future__ import annotations

from typing import Any

from _replay import Replay, answered_anthropic, typed_dict_validator
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from shop_tools import build_registry, recording

API_FORMAT = "anthropic"


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = Anthropic().messages.create
        recording("deferral_anthropic"),
        parse=Message.model_validate,
        validate=typed_dict_validator(MessageCreateParamsNonStreaming),
        asked=lambda r: [b.id for b in r.content if b.type == "tool_use"],
        answered=answered_anthropic,
    )
    tools = registry.get_schemas(API_FORMAT, include_deferred=False)
    print("tools sent:", [(t["name"], t.get("defer_loading", False)) for t in tools])
    messages: list[Any] = [{"role": "user",
                            "content": "My order A7 arrived broken. Please refund it."}]

    for _turn in range(5):
        response = create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages,
                          tools=tools)
        blocks = [b for b in response.content if b.type != "text"]
        if not blocks:
            print("assistant:", "".join(b.text for b in response.content if b.type == "text"))
            break
        print("model output:", [b.type for b in response.content])
        calls = registry.parse_tool_calls(blocks)  # the search blocks are no calls
        results = registry.execute_tool_calls(blocks)
        for call, result in zip(calls, results):
            print(f"{call.name}({call.arguments}) -> {result.text}")
        print("found by the provider's search:", registry.revealed_tools)
        echo, tool_results = registry.build_tool_call_messages(blocks, results,
                                                               api_format=API_FORMAT)
        print("echoed:", [b["type"] for b in echo["content"]])
        # The echo carries the search and the calls; sending the response's own content as
        # the assistant turn instead keeps its text (and signed thinking) too.
        messages += [echo, tool_results]
    else:
        raise RuntimeError("the model kept asking for tools")
    registry.close()


if __name__ == "__main__":
    main()
