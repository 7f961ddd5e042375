"""Approval: deferred (pending results, the approvals store, approve / deny / edit, resume,
whose call an approval is, another process deciding), blocking (sync, async and failing
handlers, the terminal handler), on every call path, and the answer messages of every
provider format."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry, ToolResult
from toolregistry.types import ApprovalRequest, calling_for

SENT: list[tuple[str, str]] = []


@pytest.fixture
def registry() -> ToolRegistry:
    SENT.clear()
    reg = ToolRegistry()

    @reg.register
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        SENT.append((to, body))
        return f"sent to {to}"

    @reg.register
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    tp.configure(reg, rules=[tp.Rule("ask", tools=["send_*"], reason="mail leaves the company",
                                     name="ask-mail")])
    yield reg
    reg.close()


CALLS = [
    {"id": "c1", "name": "send_mail", "arguments": {"to": "ceo@example.com", "body": "hi"}},
    {"id": "c2", "name": "add", "arguments": {"a": 1, "b": 2}},
    {"id": "c3", "name": "send_mail", "arguments": {"to": "all@example.com", "body": "hey"}},
]


def test_pending_then_approve_and_resume_runs_once(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    results = registry.execute_tool_calls(CALLS)
    assert [r.outcome for r in results] == ["approval_required", "ok", "approval_required"]
    assert SENT == []
    first, _, third = results
    assert first.approval.message == "mail leaves the company"
    assert first.approval.rule == "ask-mail"
    assert [a.id for a in policy.pending()] == [first.approval.id, third.approval.id]

    policy.approve(first.approval.id, approver="ann")
    policy.deny(third.approval.id, "not to everyone", approver="bob")
    final = policy.resume(results)
    assert [r.outcome for r in final] == ["ok", "ok", "denied"]
    assert final[0].text == "sent to ceo@example.com" and final[0].call_id == "c1"
    assert final[1] is results[1]
    assert "not to everyone" in final[2].text and final[2].call_id == "c3"
    assert SENT == [("ceo@example.com", "hi")]
    assert policy.get(first.approval.id).status == "done"
    assert policy.get(first.approval.id).outcome == "ok"

    with pytest.raises(tp.ApprovalError, match="used already"):
        policy.resume([first.approval.id])
    with pytest.raises(tp.ApprovalError, match="unknown approval id 'apr_nope'"):
        policy.resume(["apr_nope"])
    assert SENT == [("ceo@example.com", "hi")]
    audit = policy.audit.query(approval_id=first.approval.id)
    assert [(r.decision, r.approver) for r in audit] == [("ask", None), ("approve", "ann"),
                                                          ("allow", "ann")]


def test_undecided_stays_pending_and_a_bad_item_runs_nothing(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    results = registry.execute_tool_calls(CALLS)
    policy.approve(results[0].approval.id)
    again = policy.resume([results[0], results[2]])
    assert [r.outcome for r in again] == ["ok", "approval_required"]
    assert again[1].approval == results[2].approval
    with pytest.raises(tp.ApprovalError):  # one unknown id: nothing of the batch runs
        policy.resume([results[2], "apr_unknown"])
    with pytest.raises(tp.ApprovalError, match="given twice"):
        policy.resume([results[2], results[2].approval.id])


def test_edited_arguments_are_checked_and_used(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    results = registry.execute_tool_calls(CALLS[:1])
    approval_id = results[0].approval.id
    with pytest.raises(ValueError, match="invalid"):
        policy.approve(approval_id, arguments={"to": 5})
    policy.approve(approval_id, arguments={"to": "cfo@example.com", "body": "hi"},
                   approver="ann")
    with pytest.raises(tp.ApprovalError, match="already approved by ann"):
        policy.deny(approval_id)
    [result] = policy.resume(results)
    assert SENT == [("cfo@example.com", "hi")]
    assert result.text.startswith("(A person approved this call with changed arguments")
    assert result.metadata["approval"] == {"id": approval_id, "approver": "ann", "edited": True}


def test_a_stateless_loop_runs_the_same_batch_again(registry: ToolRegistry) -> None:
    """The same calls again after the decision: the approved one runs once, the denied one
    gets the reason, and a third run is asked again (nothing runs twice)."""
    policy = tp.get_policy(registry)
    results = registry.execute_tool_calls(CALLS)
    assert results[0].approval.id == registry.execute_tool_calls(CALLS)[0].approval.id
    assert len(policy.pending()) == 2
    policy.approve(results[0].approval.id)
    policy.deny(results[2].approval.id, "no")
    second = registry.execute_tool_calls(CALLS)
    assert [r.outcome for r in second] == ["ok", "ok", "denied"]
    third = registry.execute_tool_calls(CALLS)
    assert [r.outcome for r in third] == ["approval_required", "ok", "approval_required"]
    assert {r.approval.id for r in third if r.approval} & {
        results[0].approval.id, results[2].approval.id} == set()
    assert SENT == [("ceo@example.com", "hi")]


def test_every_call_path_defers(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    args = {"to": "x@example.com", "body": "b"}
    assert registry.invoke("send_mail", args).pending
    assert asyncio.run(registry.ainvoke("send_mail", args, call_id="a1")).pending
    assert registry.execute_tool_calls(CALLS[:1])[0].pending
    results = asyncio.run(registry.aexecute_tool_calls(CALLS[2:]))
    assert results[0].pending
    policy.approve(results[0].approval.id)
    final = asyncio.run(policy.aresume(results))
    assert final[0].text == "sent to all@example.com"
    assert SENT == [("all@example.com", "hey")]


def test_pending_results_in_every_provider_format(registry: ToolRegistry) -> None:
    """Answer messages built from pending results answer every call, ids matched, and say
    that the call waits; after resuming, they carry the real results."""
    policy = tp.get_policy(registry)
    results = registry.execute_tool_calls(CALLS)
    formats = registry.formats.names("messages")
    assert len(formats) >= 5
    for fmt in formats:
        text = json.dumps(registry.build_tool_call_messages(CALLS, results, api_format=fmt),
                          default=str)
        assert text.count("waits for a person's approval") == 2, fmt
        assert "c1" in text and "c3" in text, fmt
    policy.approve(results[0].approval.id)
    policy.approve(results[2].approval.id)
    final = policy.resume(results)
    for fmt in formats:
        text = json.dumps(registry.build_tool_call_messages(CALLS, final, api_format=fmt),
                          default=str)
        assert "sent to ceo@example.com" in text and "sent to all@example.com" in text, fmt
        assert "waits for" not in text, fmt


def test_another_plugin_denying_leaves_nothing_pending() -> None:
    from toolregistry.plugin import hookimpl
    from toolregistry.types import Decision

    class NoMail:
        @hookimpl
        def authorize(self, tool, call):
            return Decision.deny("mail is off today") if tool.name == "send_mail" else None

    registry = ToolRegistry(plugins=[NoMail()])
    try:
        registry.register(lambda to, body: "sent", name="send_mail")
        tp.configure(registry, rules=[tp.Rule("ask", tools=["send_*"])])
        result = registry.invoke("send_mail", {"to": "a@example.com", "body": "x"})
        assert result.outcome == "denied" and "mail is off today" in result.text
        assert tp.get_policy(registry).pending() == []
    finally:
        registry.close()


def test_listeners_see_the_queue(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    seen: list[tuple[str, str]] = []
    stop = policy.subscribe(lambda a: seen.append((a.tool, a.status)))
    results = registry.execute_tool_calls(CALLS[:1])
    policy.approve(results[0].approval.id)
    policy.resume(results)
    stop()
    registry.execute_tool_calls(CALLS[2:])
    assert seen == [("send_mail", "pending"), ("send_mail", "approved"),
                    ("send_mail", "running"), ("send_mail", "done")]


def test_approvals_serialize(registry: ToolRegistry) -> None:
    results = registry.execute_tool_calls(CALLS[:1])
    approval = tp.get_policy(registry).get(results[0].approval.id)
    data = json.loads(json.dumps(approval.to_dict()))
    assert tp.Approval.from_dict(data) == approval
    request = ApprovalRequest.from_dict(json.loads(json.dumps(results[0].approval.to_dict())))
    tp.get_policy(registry).approve(request.id)
    assert tp.get_policy(registry).resume([request.to_dict()])[0].text == \
        "sent to ceo@example.com"


# -- whose call an approval is: every held call its own; re-sent only by the same caller --

MAIL = {"to": "ceo@example.com", "body": "hi"}


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


# -- another process decides -------------------------------------------------------------

TOOLS_MODULE = '''
SENT = []

def send_mail(to: str, body: str) -> str:
    """Send a mail."""
    with open(__import__("os").environ["SENT_FILE"], "a") as fh:
        fh.write(to + "\\n")
    return f"sent to {to}"
'''

DECIDER = '''
import json, sys
from toolregistry import ToolRegistry
import toolregistry_policy as tp
import mailtools

registry = ToolRegistry(config=sys.argv[1])
registry.register(mailtools.send_mail)
policy = tp.get_policy(registry)
[waiting] = policy.pending()
policy.approve(waiting.id, approver="ops")
[result] = policy.resume([waiting.id])
print(json.dumps({"id": waiting.id, "outcome": result.outcome, "text": result.text}))
registry.close()
'''


def test_a_decision_in_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mailtools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    (tmp_path / "decide.py").write_text(DECIDER, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.toolregistry.plugins.policy]
        store = "approvals.db"
        rules = [{ tools = ["send_*"], decision = "ask" }]
    """), encoding="utf-8")
    sent = tmp_path / "sent.txt"
    monkeypatch.setenv("SENT_FILE", str(sent))
    monkeypatch.syspath_prepend(str(tmp_path))
    import mailtools  # type: ignore[import-not-found]

    registry = ToolRegistry(config=tmp_path / "pyproject.toml")
    try:
        registry.register(mailtools.send_mail)
        [pending] = registry.execute_tool_calls(
            [{"id": "m1", "name": "send_mail", "arguments": {"to": "a@example.com", "body": "x"}}])
        assert pending.pending and (tmp_path / "approvals.db").exists()
        out = subprocess.run([sys.executable, str(tmp_path / "decide.py"),
                              str(tmp_path / "pyproject.toml")], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=True,
                             env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
        answer = json.loads(out.stdout)
        assert answer == {"id": pending.approval.id, "outcome": "ok",
                          "text": "sent to a@example.com"}
        policy = tp.get_policy(registry)
        assert policy.get(pending.approval.id).status == "done"
        with pytest.raises(tp.ApprovalError, match="used already"):
            policy.resume([pending])
        # The same call again in this process: it ran elsewhere, so this is a new request
        # (asked again, not run on the used approval, not refused for good).
        again = registry.execute_tool_calls(
            [{"id": "m1", "name": "send_mail", "arguments": {"to": "a@example.com", "body": "x"}}])
        assert again[0].pending and again[0].approval.id != pending.approval.id
        assert sent.read_text().splitlines() == ["a@example.com"]
    finally:
        registry.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_two_resumers_race_and_one_runs(tmp_path: Path, kind: str,
                                        request: pytest.FixtureRequest) -> None:
    # A SQLite store object both registries are given, or a PostgreSQL store (the kernel's
    # `store`) each opens on its own, as two hosts would.
    store = tp.SQLiteStore(tmp_path / "a.db") if kind == "sqlite" else None
    url = request.getfixturevalue("postgres_url") if kind == "postgresql" else None
    regs = []
    try:
        for _ in range(2):
            reg = ToolRegistry(store=url)
            reg.register(lambda to, body: SENT.append((to, body)) or "ok", name="send_mail")
            tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"])], store=store)
            regs.append(reg)
        SENT.clear()
        [pending] = regs[0].execute_tool_calls(CALLS[:1])
        tp.get_policy(regs[1]).approve(pending.approval.id)
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def resume(reg: ToolRegistry) -> None:
            barrier.wait()
            try:
                outcomes.append(tp.get_policy(reg).resume([pending.approval.id])[0].outcome)
            except tp.ApprovalError:
                outcomes.append("refused")

        threads = [threading.Thread(target=resume, args=(r,)) for r in regs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["ok", "refused"]
        assert len(SENT) == 1
    finally:
        for reg in regs:
            reg.close()
        if store is not None:
            store.close()


# -- a shared store: approvals every worker and host sees ---------------------------------

MAIL_TO = {"to": "a@example.com", "body": "x"}


def _held(result: ToolResult) -> str:
    """The approval id of a held call."""
    assert result.pending and result.approval is not None, result.text
    return result.approval.id


def _send(to: str, body: str, ran: list[str]) -> str:
    ran.append(to)
    return "ok"


def test_a_decision_on_another_host_runs_the_call_once(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mailtools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    (tmp_path / "decide.py").write_text(DECIDER, encoding="utf-8")
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        store = "{postgres_url}"
        [tool.toolregistry.plugins.policy]
        rules = [{{ tools = ["send_*"], decision = "ask" }}]
    """), encoding="utf-8")
    sent = tmp_path / "sent.txt"
    monkeypatch.setenv("SENT_FILE", str(sent))
    monkeypatch.syspath_prepend(str(tmp_path))
    import mailtools

    registry = ToolRegistry(config=cfg)
    try:
        registry.register(mailtools.send_mail)
        [pending] = registry.execute_tool_calls([{"id": "m1", "name": "send_mail",
                                                  "arguments": MAIL_TO}])
        held = _held(pending)
        policy = tp.get_policy(registry)
        assert isinstance(policy.store, tp.ServerStore)
        out = subprocess.run([sys.executable, str(tmp_path / "decide.py"), str(cfg)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"id": held, "outcome": "ok",
                                          "text": "sent to a@example.com"}
        assert policy.get(held).status == "done"
        with pytest.raises(tp.ApprovalError, match="used already"):
            policy.resume([pending])
        again = registry.execute_tool_calls([{"id": "m1", "name": "send_mail",
                                              "arguments": MAIL_TO}])
        assert _held(again[0]) != held
        # ... and the call sent again finds its open approval, whichever worker it reaches.
        assert _held(registry.execute_tool_calls([{"id": "m1", "name": "send_mail",
                                                   "arguments": MAIL_TO}])[0]) == _held(again[0])
        assert sent.read_text().splitlines() == ["a@example.com"]
    finally:
        registry.close()


def test_a_sqlite_store_url_keeps_approvals_in_that_file(tmp_path: Path) -> None:
    reg = ToolRegistry(store=f"sqlite:///{tmp_path}/state.db")
    try:
        reg.register(lambda to, body: "ok", name="send_mail")
        tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"])])
        [pending] = reg.execute_tool_calls([{"id": "c1", "name": "send_mail",
                                             "arguments": MAIL_TO}])
        store = tp.get_policy(reg).store
        assert isinstance(store, tp.SQLiteStore) and store.path == tmp_path / "state.db"
        assert store.get(_held(pending)) is not None
    finally:
        reg.close()


# -- blocking ------------------------------------------------------------------------------

def test_blocking_sync_handler(registry: ToolRegistry) -> None:
    asked: list[ApprovalRequest] = []

    def handler(request: ApprovalRequest) -> object:
        asked.append(request)
        if request.arguments["to"].startswith("ceo"):
            return tp.Verdict.approve(approver="ann")
        return False

    policy = tp.configure(registry, handler=handler)
    results = registry.execute_tool_calls(CALLS)
    assert [r.outcome for r in results] == ["ok", "ok", "denied"]
    assert "a person declined it" in results[2].text
    assert [a.tool for a in asked] == ["send_mail", "send_mail"]
    assert SENT == [("ceo@example.com", "hi")]
    assert policy.pending() == []
    assert [r.decision for r in policy.audit.query(tool="send_mail")] == [
        "approve", "allow", "reject", "deny"]  # the person's answer, then the call's


def test_blocking_async_handler_on_both_apis(registry: ToolRegistry) -> None:
    async def handler(request: ApprovalRequest) -> tp.Verdict:
        await asyncio.sleep(0.01)
        return tp.Verdict.deny("not today", approver="bot")

    tp.configure(registry, handler=handler)
    args = {"to": "x@example.com", "body": "b"}
    assert "not today" in registry.invoke("send_mail", args).text
    result = asyncio.run(registry.ainvoke("send_mail", args))
    assert result.outcome == "denied" and "not today" in result.text
    assert SENT == []


def test_blocking_edit_approves_the_changed_call_once(registry: ToolRegistry) -> None:
    tp.configure(registry, handler=lambda r: tp.Verdict.approve({"to": "safe@example.com",
                                                                 "body": r.arguments["body"]}))
    first = registry.invoke("send_mail", {"to": "ceo@example.com", "body": "hi"})
    assert first.outcome == "denied" and '"to": "safe@example.com"' in first.text
    tp.configure(registry, handler=lambda r: False)  # the changed call is approved already
    again = registry.invoke("send_mail", {"to": "safe@example.com", "body": "hi"})
    assert again.outcome == "ok"
    assert registry.invoke("send_mail", {"to": "safe@example.com", "body": "hi"}).outcome == \
        "denied"  # once
    assert SENT == [("safe@example.com", "hi")]


def test_a_failing_or_slow_handler_denies(registry: ToolRegistry) -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("approval service down")

    tp.configure(registry, handler=broken)
    result = registry.invoke("send_mail", {"to": "x@example.com", "body": "b"})
    assert result.outcome == "denied" and "approval service down" in result.text

    release = threading.Event()
    tp.configure(registry, handler=lambda r: release.wait(5), handler_timeout=0.2)
    result = registry.invoke("send_mail", {"to": "x@example.com", "body": "b"})
    release.set()
    assert result.outcome == "denied" and "within 0.2 s" in result.text

    tp.configure(registry, handler=lambda r: "yes")
    assert "returns True, False or a Verdict" in registry.invoke(
        "send_mail", {"to": "x@example.com", "body": "b"}).text
    assert SENT == []


TERMINAL_AGENT = '''
from toolregistry import ToolRegistry
import toolregistry_policy as tp

registry = ToolRegistry(think_augment=False)

@registry.register
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"

tp.configure(registry, handler="terminal",
             rules=[tp.Rule("ask", tools=["delete"], reason="deleting is forever")])
for path in ("/tmp/a", "/tmp/b", "/tmp/c"):
    print(registry.invoke("delete", {"path": path}, call_id=path[-1]).text, flush=True)
registry.close()
'''


def test_terminal_handler(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(TERMINAL_AGENT, encoding="utf-8")
    answers = "y\nn\nnot that one\nmaybe\ne\n{bad\ne\n{\"path\": \"/tmp/safe\"}\n"
    out = subprocess.run([sys.executable, str(script)], input=answers, capture_output=True,
                         text=True, timeout=60, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "deleted /tmp/a"
    assert "not that one" in lines[1]
    assert "call 'delete' again with exactly these arguments" in lines[2]
    assert '"path": "/tmp/safe"' in lines[2]
    prompt = out.stderr
    assert "The model wants to call 'delete' (call a):" in prompt
    assert '"path": "/tmp/a"' in prompt and "approval needed: deleting is forever" in prompt
    assert "Please answer y, n or e." in prompt and "That is not JSON" in prompt


def test_other_plugins_find_the_queue_without_importing_this_one() -> None:
    registry = ToolRegistry()
    try:
        registry.register(lambda to: "sent", name="send_mail")
        policy = registry.plugin_state("policy").get("policy")
        assert policy is tp.get_policy(registry)
        tp.configure(registry, rules=[tp.Rule("ask", tools=["send_mail"])])
        registry.invoke("send_mail", {"to": "x"})
        assert [a.to_dict()["request"]["tool"] for a in policy.pending()] == ["send_mail"]
    finally:
        registry.close()
