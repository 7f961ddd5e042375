"""Deferred approval in a web application's loop (toolregistry-policy), with the Anthropic
Messages API.

* request 1: the model asks for two calls; ``add`` runs, ``send_mail`` needs a person's
  approval, so its result is pending. The application keeps the turn (the model's calls, the
  finished results, the pending approvals) as JSON and answers "waiting for approval";
* an admin page, in another process, lists the approvals queue and approves the mail with a
  changed recipient (the queue is a SQLite file every process's policy names);
* request 2: a fresh process resumes the approved call (it runs once, through the registry)
  and answers the model with every call of the turn, ids matched.

No network, no API key: ``Replay`` stands in for ``Anthropic().messages.create`` and checks
that every tool call is answered. Needs: toolregistry, toolregistry-policy, anthropic.
Run: ``python examples/policy_deferred.py``
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from _replay import Replay, plain, typed_dict_validator
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

import toolregistry_policy as tp
from toolregistry import ToolRegistry, ToolResult

API_FORMAT = "anthropic"
MODEL = "claude-sonnet-4-5"
OUTBOX: list[str] = []


def _message(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 300 + n, "output_tokens": 30}}


RECORDED = [
    _message(1, [{"type": "text", "text": "Sending the report and adding up."},
                 {"type": "tool_use", "id": "toolu_mail", "name": "send_mail",
                  "input": {"to": "ceo@example.com", "body": "Q3 report attached"}},
                 {"type": "tool_use", "id": "toolu_add", "name": "add",
                  "input": {"a": 1200, "b": 345}}], "tool_use"),
    _message(2, [{"type": "text", "text": "Sent to the CFO as approved; the total is 1545."}],
             "end_turn"),
]


def build_registry(store: Path) -> ToolRegistry:
    """What every process of the application builds: the tools and the policy."""
    registry = ToolRegistry()

    @registry.register
    def send_mail(to: str, body: str) -> str:
        """Send an email."""
        OUTBOX.append(to)
        return f"sent to {to}"

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    tp.configure(registry, store=store, rules=[
        tp.Rule("ask", tools=["send_*"], reason="mail leaves the company", name="ask-mail")])
    return registry


def first_request(create: Replay, store: Path, saved: Path) -> None:
    registry = build_registry(store)
    messages: list[Any] = [{"role": "user", "content": "Mail the Q3 report; and 1200 + 345?"}]
    response = create(model=MODEL, max_tokens=1024, messages=messages,
                      tools=registry.get_schemas(API_FORMAT))
    calls = [b for b in response.content if b.type == "tool_use"]
    results = registry.execute_tool_calls(calls)
    for call, result in zip(calls, results):
        print(f"request 1: {call.name}({call.input}) -> {result.outcome}")
    saved.write_text(json.dumps({
        "messages": [*messages, {"role": "assistant", "content": plain(response.content)}],
        "calls": plain(calls),
        "finished": {r.call_id: [r.text, r.is_error] for r in results if not r.pending},
        "waiting": [r.approval.to_dict() for r in results if r.pending],
    }))
    registry.close()


def admin_page(store: Path) -> None:
    registry = build_registry(store)
    policy = tp.get_policy(registry)
    for approval in policy.pending():
        print(f"admin: {approval.tool} {dict(approval.request.arguments)} "
              f"({approval.request.message})")
        policy.approve(approval.id, approver="ann",
                       arguments={**approval.request.arguments, "to": "cfo@example.com"})
    registry.close()


def second_request(create: Replay, store: Path, saved: Path) -> None:
    registry = build_registry(store)
    state = json.loads(saved.read_text())
    resumed = {r.call_id: r for r in tp.get_policy(registry).resume(state["waiting"])}
    results = [resumed.get(call["id"]) or ToolResult(call["id"], call["name"],
                                                     *state["finished"][call["id"]])
               for call in state["calls"]]
    for call, result in zip(state["calls"], results):
        print(f"request 2: {call['name']} -> {result.outcome}: {result.text.splitlines()[-1]}")
    _echo, tool_results = registry.build_tool_call_messages(state["calls"], results,
                                                            api_format=API_FORMAT)
    response = create(model=MODEL, max_tokens=1024, messages=[*state["messages"], tool_results],
                      tools=registry.get_schemas(API_FORMAT))
    print("assistant:", "".join(b.text for b in response.content if b.type == "text"))
    try:
        tp.get_policy(registry).resume(state["waiting"])
    except tp.ApprovalError as exc:
        print("resumed twice:", exc)
    registry.close()


def main() -> None:
    create = Replay(  # in a real application: create = Anthropic().messages.create
        RECORDED,
        parse=Message.model_validate,
        validate=typed_dict_validator(MessageCreateParamsNonStreaming),
        asked=lambda r: [b.id for b in r.content if b.type == "tool_use"],
        answered=lambda r: [b["tool_use_id"] for b in r["messages"][-1]["content"]
                            if isinstance(b, dict) and b.get("type") == "tool_result"],
    )
    with tempfile.TemporaryDirectory() as folder:
        store, saved = Path(folder) / "approvals.db", Path(folder) / "turn.json"
        first_request(create, store, saved)
        admin_page(store)
        second_request(create, store, saved)
    assert OUTBOX == ["cfo@example.com"], OUTBOX
    print("outbox:", OUTBOX)


if __name__ == "__main__":
    main()
