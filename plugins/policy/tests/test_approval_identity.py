"""Which call an approval belongs to: every held call gets an approval of its own; an approval
runs only the call it was given for (the same tool, arguments, call id and caller); a later
identical request is asked again; two approvals that share a model's call id resume into
their own slots, each audited under its own approval."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry
from toolregistry.types import ApprovalRequest, calling_for

SENT: list[tuple[str, str]] = []
MAIL = {"to": "ceo@example.com", "body": "hi"}


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    SENT.clear()
    reg = ToolRegistry()

    @reg.register
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        SENT.append((to, body))
        return f"sent to {to}"

    tp.configure(reg, rules=[tp.Rule("ask", tools=["send_*"], reason="mail leaves")])
    yield reg
    reg.close()


def test_calls_without_a_call_id_each_get_their_own_approval(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    first = registry.invoke("send_mail", MAIL)
    second = registry.invoke("send_mail", MAIL)
    assert first.pending and second.pending
    assert first.approval.id != second.approval.id
    assert [a.id for a in policy.pending()] == [first.approval.id, second.approval.id]
    policy.approve(first.approval.id, approver="ann")
    # Nothing ties an identical call without a call id or a caller to the approved one.
    third = registry.invoke("send_mail", MAIL)
    assert third.pending and third.approval.id not in (first.approval.id, second.approval.id)
    assert SENT == []
    [ran] = policy.resume([first.approval.id])
    assert ran.text == "sent to ceo@example.com" and SENT == [("ceo@example.com", "hi")]
    # A later identical request is asked again, not refused for good.
    later = registry.invoke("send_mail", MAIL)
    assert later.pending, later.text
    assert policy.get(second.approval.id).status == "pending"


def test_an_approval_runs_only_for_the_caller_it_was_given_for(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    with calling_for("client-a"):
        asked = registry.invoke("send_mail", MAIL)
        assert registry.invoke("send_mail", MAIL).approval.id == asked.approval.id  # re-sent
    assert asked.approval.caller == "client-a"
    policy.approve(asked.approval.id, approver="ann")
    with calling_for("client-b"):
        other = registry.invoke("send_mail", MAIL)
    assert other.pending and other.approval.id != asked.approval.id and SENT == []
    assert registry.invoke("send_mail", MAIL).pending  # no caller: not client A's call
    with calling_for("client-a"):
        ran = registry.invoke("send_mail", MAIL)
        assert ran.ok and ran.text == "sent to ceo@example.com"
        later = registry.invoke("send_mail", MAIL)
    assert later.pending and later.approval.id != asked.approval.id, later.text
    assert SENT == [("ceo@example.com", "hi")]
    assert policy.get(asked.approval.id).status == "done"
    assert policy.get(other.approval.id).status == "pending"


def test_a_re_sent_call_id_runs_once_then_is_asked_again(registry: ToolRegistry) -> None:
    """The stateless loop: the same call (same call id) sent again after the decision runs
    on its approval once; sent once more, it is a new request for a person."""
    policy = tp.get_policy(registry)
    call = [{"id": "call_1", "name": "send_mail", "arguments": MAIL}]
    [held] = registry.execute_tool_calls(call)
    assert registry.execute_tool_calls(call)[0].approval.id == held.approval.id
    policy.approve(held.approval.id)
    assert registry.execute_tool_calls(call)[0].ok
    [again] = registry.execute_tool_calls(call)
    assert again.pending and again.approval.id != held.approval.id, again.text
    assert SENT == [("ceo@example.com", "hi")]


def test_two_approvals_sharing_a_call_id_resume_into_their_own_slots(
        registry: ToolRegistry) -> None:
    """Two turns both used ``call_1``: resumed together, each slot gets its own call's result
    and each run is audited under its own approval."""
    policy = tp.get_policy(registry)
    [a] = registry.execute_tool_calls(
        [{"id": "call_1", "name": "send_mail", "arguments": {"to": "a@example.com", "body": "1"}}])
    [b] = registry.execute_tool_calls(
        [{"id": "call_1", "name": "send_mail", "arguments": {"to": "b@example.com", "body": "2"}}])
    assert a.approval.id != b.approval.id
    policy.approve(a.approval.id, approver="ann")
    policy.approve(b.approval.id, approver="bob")
    final = policy.resume([a, b])
    assert [r.text for r in final] == ["sent to a@example.com", "sent to b@example.com"]
    assert [r.call_id for r in final] == ["call_1", "call_1"]
    assert sorted(SENT) == [("a@example.com", "1"), ("b@example.com", "2")]
    for approval, approver, to in ((a, "ann", "a@example.com"), (b, "bob", "b@example.com")):
        ran = [(r.decision, r.approver) for r in policy.audit.query(
            approval_id=approval.approval.id) if r.decision == "allow"]
        assert ran == [("allow", approver)]
        done = policy.get(approval.approval.id)
        assert done.status == "done" and done.result == f"sent to {to}"


def test_a_store_file_from_before_keys_is_used_and_asks_again(registry: ToolRegistry,
                                                               tmp_path: Path) -> None:
    """A SQLite file written before approvals had keys (a call that ran under the id its
    tool, call id and arguments gave): opened again, the same request is asked, not
    refused for good, and the file gains what new approvals need."""
    path = tmp_path / "approvals.db"
    old_id = ApprovalRequest.stable_id("send_mail", "call_1", MAIL)
    done = tp.Approval(ApprovalRequest(old_id, "send_mail", MAIL, "call_1"), status="done",
                       outcome="ok")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE approvals (id TEXT PRIMARY KEY, status TEXT NOT NULL, "
                   "created REAL NOT NULL, data TEXT NOT NULL)")
        db.execute("INSERT INTO approvals VALUES (?, ?, ?, ?)",
                   (old_id, "done", done.created, json.dumps(done.to_dict())))
    db.close()
    tp.configure(registry, store=path)
    call = [{"id": "call_1", "name": "send_mail", "arguments": MAIL}]
    [asked] = registry.execute_tool_calls(call)
    assert asked.pending and asked.approval.id != old_id, asked.text
    assert registry.execute_tool_calls(call)[0].approval.id == asked.approval.id
    assert tp.get_policy(registry).get(old_id).status == "done"
