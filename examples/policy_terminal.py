"""A terminal agent that asks you before it deletes anything (toolregistry-policy), with the
Anthropic Messages API.

Reading is allowed, deleting outside ``/tmp`` is denied, deleting under ``/tmp`` waits for
your answer at the terminal (``y`` / ``n`` / ``e`` to edit the arguments): the terminal
handler shows the tool, the arguments, why approval is needed and the model's
``toolcall_reason`` (think is on). The audit trail is printed at the end.

No network, no API key: ``Replay`` stands in for ``Anthropic().messages.create``.
Needs: toolregistry, toolregistry-policy, toolregistry-think, anthropic.
Run: ``python examples/policy_terminal.py`` (it reads your answers from standard input).
"""

from __future__ import annotations

from typing import Any

from _replay import Replay, typed_dict_validator
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

import toolregistry_policy as tp
from toolregistry import ToolMetadata, ToolRegistry

API_FORMAT = "anthropic"
MODEL = "claude-sonnet-4-5"
WHY = "the user asked to clean up old files"


def _message(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 300 + n, "output_tokens": 30}}


def _use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name,
            "input": {**arguments, "toolcall_reason": WHY}}


RECORDED = [
    _message(1, [_use("toolu_ls", "list_files", {"folder": "/tmp/old"})], "tool_use"),
    _message(2, [_use("toolu_rm1", "delete_file", {"path": "/tmp/old/a.log"}),
                 _use("toolu_rm2", "delete_file", {"path": "/home/me/notes.txt"})], "tool_use"),
    _message(3, [{"type": "text", "text": "Cleaned up what you allowed."}], "end_turn"),
]


def build_registry() -> ToolRegistry:
    registry = ToolRegistry(think_augment=True)

    @registry.register(metadata=ToolMetadata(read_only_hint=True))
    def list_files(folder: str) -> list[str]:
        """List the files of a folder."""
        return [f"{folder}/a.log"]

    @registry.register
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    tp.configure(registry, handler="terminal", rules=[
        tp.Rule("allow", annotations={"readOnlyHint": True}, name="reads"),
        tp.Rule("ask", tools=["delete_file"], arguments={"path": {"inside": ["/tmp"]}},
                reason="deleting is forever", name="ask-delete"),
        tp.Rule("deny", tools=["delete_file"], reason="only files under /tmp may be deleted",
                name="tmp-only"),
    ])
    return registry


def main() -> None:
    registry = build_registry()
    create = Replay(  # in a real application: create = Anthropic().messages.create
        RECORDED,
        parse=Message.model_validate,
        validate=typed_dict_validator(MessageCreateParamsNonStreaming),
        asked=lambda r: [b.id for b in r.content if b.type == "tool_use"],
        answered=lambda r: [b["tool_use_id"] for b in r["messages"][-1]["content"]
                            if isinstance(b, dict) and b.get("type") == "tool_result"],
    )
    messages: list[Any] = [{"role": "user", "content": "Clean up my old files."}]
    tools = registry.get_schemas(API_FORMAT)
    for _ in range(5):
        response = create(model=MODEL, max_tokens=1024, messages=messages, tools=tools)
        calls = [b for b in response.content if b.type == "tool_use"]
        if not calls:
            print("assistant:", "".join(b.text for b in response.content if b.type == "text"))
            break
        results = registry.execute_tool_calls(calls)
        for call, result in zip(calls, results):
            print(f"{call.name} -> {result.outcome}: {result.text}")
        _echo, tool_results = registry.build_tool_call_messages(calls, results,
                                                                api_format=API_FORMAT)
        messages += [{"role": "assistant", "content": response.content}, tool_results]
    print("audit:")
    for record in tp.get_policy(registry).audit.query():
        print(f"  {record.tool} {record.call_id} {record.decision} rule={record.rule} "
              f"approver={record.approver}")
    registry.close()


if __name__ == "__main__":
    main()
