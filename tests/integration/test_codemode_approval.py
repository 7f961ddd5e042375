"""A code-mode program whose tool call the policy plugin holds for a person's approval: the
``run_code`` call answers pending (the policy's ``approval_required`` and approval id), the
program's state is kept (pydantic-monty's dump of the paused sandbox), and once a person
decides on the policy's queue the program goes on from that call -- approved (as asked, or
with the person's arguments) the call runs once, denied it raises with their reason -- in this
process or in another one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolregistry_codemode
import toolregistry_policy as tp
from toolregistry import ToolRegistry, ToolResult
from toolregistry.plugin import hookimpl
from toolregistry.types import Decision

SENT: list[str] = []

PROGRAM = textwrap.dedent("""\
    total = await add(a=40, b=2)
    print('total', total)
    try:
        answer = await send_mail(to='ceo@example.com', body=f'total {total}')
    except PermissionError as e:
        answer = 'not sent: ' + str(e)
    print(answer)
    await add(a=total, b=1)
""")


def _mail_registry(plugins: tuple[Any, ...] = ()) -> ToolRegistry:
    """``send_mail`` (held by the policy for a person) and ``add``, with code mode on."""
    SENT.clear()
    reg = ToolRegistry(default_timeout=20, plugins=plugins)

    @reg.register
    def send_mail(to: str, body: str) -> str:
        """Send an email message to someone."""
        SENT.append(to)
        return f"sent to {to}"

    @reg.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"], reason="mail leaves")])
    toolregistry_codemode.enable_code_mode(reg)
    return reg


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = _mail_registry()
    yield reg
    reg.close()


def _run_code(registry: ToolRegistry, code: str = PROGRAM, call_id: str = "toolu_1"
              ) -> ToolResult:
    (result,) = registry.execute_tool_calls([{"id": call_id, "name": "run_code",
                                             "arguments": {"code": code}}])
    return result


def test_approved_the_program_goes_on_and_the_call_runs_once(registry: ToolRegistry) -> None:
    held = _run_code(registry)
    assert held.pending and held.error_kind == "approval_required", held.text
    policy = tp.get_policy(registry)
    [waiting] = policy.pending()
    assert held.approval.id == waiting.id and waiting.tool == "send_mail"
    assert dict(waiting.request.arguments) == {"to": "ceo@example.com", "body": "total 42"}
    assert SENT == [] and "total 42" in held.text

    mode = toolregistry_codemode.get_code_mode(registry)
    assert mode is not None
    assert mode.resume(held).pending  # nobody decided: still waiting, nothing ran
    policy.approve(waiting.id, approver="ann")
    done = mode.resume(held)
    assert done.ok, done.text
    assert done.call_id == "toolu_1"
    assert done.text == "total 42\nsent to ceo@example.com\nresult: 43"
    assert SENT == ["ceo@example.com"]
    assert [c["outcome"] for c in done.metadata["calls"]] == ["ok", "ok", "ok"]
    assert policy.get(waiting.id).status == "done"
    # resumed again: the policy's queue says it was used; nothing runs twice
    with pytest.raises(tp.ApprovalError, match="used already"):
        mode.resume(held)
    assert SENT == ["ceo@example.com"]


def test_approved_with_changed_arguments(registry: ToolRegistry) -> None:
    held = _run_code(registry)
    policy = tp.get_policy(registry)
    policy.approve(held.approval.id, approver="ann",
                   arguments={"to": "cfo@example.com", "body": "total 42"})
    mode = toolregistry_codemode.get_code_mode(registry)
    assert mode is not None
    done = mode.resume(held.value.paused.to_dict())
    assert done.ok, done.text
    assert "sent to cfo@example.com" in done.text and SENT == ["cfo@example.com"]


def test_denied_the_call_raises_with_the_reason(registry: ToolRegistry) -> None:
    held = _run_code(registry)
    tp.get_policy(registry).deny(held.approval.id, "not to the CEO", approver="ann")
    mode = toolregistry_codemode.get_code_mode(registry)
    assert mode is not None
    done = mode.resume(held.approval.id)
    assert done.ok, done.text
    assert "not sent: send_mail() failed (denied)" in done.text
    assert "not to the CEO" in done.text and done.text.endswith("result: 43")
    assert SENT == []
    assert [c["outcome"] for c in done.metadata["calls"]] == ["ok", "denied", "ok"]



class Person:
    """Another authorizing plugin (no queue of its own): holds every ``add`` call until a person
    decides it, by call id, when the call comes again."""

    def __init__(self) -> None:
        self.decided: dict[str, Decision] = {}

    @hookimpl
    def authorize(self, tool: Any, call: Any) -> Decision | None:
        if tool.name != "add":
            return None
        return self.decided.get(call.id) or Decision.pending("sums need a person", rule="ask")


def test_calls_held_by_the_policy_and_by_another_plugin_resume_together() -> None:
    """The policy resumes the call it queued; the call another plugin held (an approval id the
    policy never issued) is asked again, not refused as an unknown approval."""
    person = Person()
    reg = _mail_registry(plugins=(person,))
    try:
        mode = toolregistry_codemode.get_code_mode(reg)
        assert mode is not None
        code = ("import asyncio\n"
                "sent, total = await asyncio.gather(send_mail(to='ann@example.com', body='hi'),"
                " add(a=40, b=2))\n"
                "print(sent, total)\n")
        held = _run_code(reg, code, "toolu_9")
        assert held.pending and held.error_kind == "approval_required", held.text
        paused = held.value.paused
        by_tool = {h.tool: h for h in paused.held}
        assert set(by_tool) == {"send_mail", "add"}
        policy = tp.get_policy(reg)
        assert by_tool["send_mail"].approval.id in policy
        assert by_tool["add"].approval.id not in policy and 42 not in policy  # type: ignore[operator]

        assert mode.resume(held).pending  # nobody decided either: still waiting, nothing ran
        assert SENT == []
        policy.approve(by_tool["send_mail"].approval.id, approver="ann")
        person.decided[by_tool["add"].call_id] = Decision.allow(rule="person")
        done = mode.resume(held)
        assert done.ok, done.text
        assert done.text == "sent to ann@example.com 42"
        assert SENT == ["ann@example.com"]
        assert policy.get(by_tool["send_mail"].approval.id).status == "done"
    finally:
        reg.close()

RESUMER = '''
import json, sys
from toolregistry import ToolRegistry
import toolregistry_codemode
import toolregistry_policy as tp
import mailtools

registry = ToolRegistry(config=sys.argv[1])
registry.register(mailtools.send_mail)
registry.register(mailtools.add)
mode = toolregistry_codemode.enable_code_mode(registry)
policy = tp.get_policy(registry)
[waiting] = policy.pending()
policy.approve(waiting.id, approver="ops")
with open(sys.argv[2], encoding="utf-8") as fh:
    paused = json.load(fh)
result = mode.resume(paused)
print(json.dumps({"id": waiting.id, "call_id": result.call_id, "outcome": result.outcome,
                  "text": result.text, "pid": __import__("os").getpid()}))
registry.close()
'''

TOOLS = '''
import os

def send_mail(to: str, body: str) -> str:
    """Send an email message to someone."""
    with open(os.environ["SENT_FILE"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()} {to}\\n")
    return f"sent to {to}"

def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


def test_the_program_goes_on_in_another_process(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mailtools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "resume.py").write_text(RESUMER, encoding="utf-8")
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
        registry.register(mailtools.add)
        toolregistry_codemode.enable_code_mode(registry)
        held = _run_code(registry)
        assert held.pending, held.text
        saved = tmp_path / "paused.json"
        saved.write_text(json.dumps(held.value.paused.to_dict()), encoding="utf-8")
        out = subprocess.run([sys.executable, str(tmp_path / "resume.py"),
                              str(tmp_path / "pyproject.toml"), str(saved)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, check=False,
                             env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert out.returncode == 0, out.stdout + out.stderr
        # the answer is the last line (log events may come before it on stdout)
        answer = json.loads(out.stdout.strip().splitlines()[-1])
        assert answer["id"] == held.approval.id and answer["call_id"] == "toolu_1"
        assert answer["outcome"] == "ok", (answer["text"], out.stdout, out.stderr)
        assert answer["text"] == "total 42\nsent to ceo@example.com\nresult: 43"
        assert sent.read_text().split() == [str(answer["pid"]), "ceo@example.com"]
        # this process's copy of the paused program: the approval was used in the other one
        mode = toolregistry_codemode.get_code_mode(registry)
        assert mode is not None
        with pytest.raises(tp.ApprovalError, match="used already"):
            mode.resume(held)
        assert len(sent.read_text().splitlines()) == 1
    finally:
        registry.close()


RUNNER = '''
import json, sys
from toolregistry import ToolRegistry
import toolregistry_codemode
import mailtools

registry = ToolRegistry(config=sys.argv[1])
registry.register(mailtools.send_mail)
registry.register(mailtools.add)
toolregistry_codemode.enable_code_mode(registry)
with open(sys.argv[2], encoding="utf-8") as fh:
    code = fh.read()
(result,) = registry.execute_tool_calls([{"id": "toolu_1", "name": "run_code",
                                          "arguments": {"code": code}}])
paused = result.value.paused
print(json.dumps({"pending": result.pending, "text": result.text,
                  "approval": result.approval.id if result.approval else None,
                  "paused": paused.to_dict() if paused else None}))
registry.close()
'''


def test_programs_in_fresh_processes_get_calls_of_their_own(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Two processes share one SQLite approvals store: a program run in a fresh process waits
    for an approval of its own, never runs on the one a person gave another program, and that
    program's resume then runs its call once."""
    (tmp_path / "mailtools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "run.py").write_text(RUNNER, encoding="utf-8")
    (tmp_path / "program.py").write_text(PROGRAM, encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text(textwrap.dedent("""
        [tool.toolregistry.plugins.policy]
        store = "approvals.db"
        rules = [{ tools = ["send_*"], decision = "ask" }]
    """), encoding="utf-8")
    sent = tmp_path / "sent.txt"
    sent.touch()
    monkeypatch.setenv("SENT_FILE", str(sent))
    monkeypatch.syspath_prepend(str(tmp_path))
    import mailtools

    def run_in_a_fresh_process() -> dict[str, Any]:
        out = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(config),
                              str(tmp_path / "program.py")], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, check=False,
                             env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert out.returncode == 0, out.stdout + out.stderr
        answer: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return answer

    first = run_in_a_fresh_process()
    assert first["pending"], first["text"]
    registry = ToolRegistry(config=config)
    try:
        registry.register(mailtools.send_mail)
        registry.register(mailtools.add)
        mode = toolregistry_codemode.enable_code_mode(registry)
        policy = tp.get_policy(registry)
        policy.approve(first["approval"], approver="ann")

        second = run_in_a_fresh_process()
        assert second["pending"], second["text"]  # not run on the first program's approval
        assert second["approval"] != first["approval"]
        assert sent.read_text() == ""
        call_ids = {h["call_id"] for run in (first, second) for h in run["paused"]["held"]}
        assert len(call_ids) == 2

        done = mode.resume(first["paused"])
        assert done.ok, done.text
        assert done.text == "total 42\nsent to ceo@example.com\nresult: 43"
        assert len(sent.read_text().splitlines()) == 1
        assert [a.id for a in policy.pending()] == [second["approval"]]

        third = run_in_a_fresh_process()  # later programs wait as well, they are not refused
        assert third["pending"], third["text"]
        assert third["approval"] not in (first["approval"], second["approval"])
    finally:
        registry.close()


GATHERED = textwrap.dedent("""\
    import asyncio
    a, n, b = await asyncio.gather(send_mail(to='a@example.com', body='1'), add(a=40, b=2),
                                   send_mail(to='b@example.com', body='2'))
    print(a, n, b)
""")


@pytest.fixture
def cpu_hogs() -> Iterator[None]:
    """A few busy processes, so that the sandbox, the tools and the event loop wait for a CPU
    at any point (stopped at the end)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)


def test_a_pause_holds_every_gathered_held_call_under_load(cpu_hogs: None) -> None:
    """Two held calls gathered with an allowed one, round after round under CPU load: every
    pause holds both held calls, the allowed call runs once, and the resume delivers every
    result (nothing runs twice, no approval is used up for nothing)."""
    added: list[int] = []
    reg = _mail_registry()
    reg.unregister("add")

    @reg.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        added.append(a + b)
        return a + b

    try:
        mode = toolregistry_codemode.get_code_mode(reg)
        assert mode is not None
        policy = tp.get_policy(reg)
        deadline = time.monotonic() + 25.0
        rounds = 0
        while rounds < 60 and (rounds < 8 or time.monotonic() < deadline):
            rounds += 1
            added.clear()
            SENT.clear()
            held = _run_code(reg, GATHERED, f"toolu_{rounds}")
            assert held.pending, (rounds, held.text)
            paused = held.value.paused
            assert sorted(h.tool for h in paused.held) == ["send_mail", "send_mail"], rounds
            assert added == [42] and SENT == [], rounds
            for h in paused.held:
                policy.approve(h.approval.id, approver="ann")
            done = mode.resume(held)
            assert done.ok, (rounds, done.text)
            assert done.text == "sent to a@example.com 42 sent to b@example.com", rounds
            assert added == [42] and sorted(SENT) == ["a@example.com", "b@example.com"], rounds
            assert [c["outcome"] for c in done.metadata["calls"]] == ["ok"] * 3, rounds
    finally:
        reg.close()


def test_a_resume_that_cannot_answer_its_held_calls_runs_none_of_them(
        registry: ToolRegistry) -> None:
    """A paused run whose state does not wait on exactly its held calls is refused before any
    of them is decided: the approved calls do not run, their approvals stay usable."""
    code = ("import asyncio\n"
            "a, b = await asyncio.gather(send_mail(to='a@example.com', body='1'),"
            " send_mail(to='b@example.com', body='2'))\n"
            "print(a, b)\n")
    held = _run_code(registry, code, "toolu_2")
    assert held.pending, held.text
    saved = held.value.paused.to_dict()
    assert len(saved["held"]) == 2
    policy = tp.get_policy(registry)
    for h in saved["held"]:
        policy.approve(h["approval"]["id"], approver="ann")
    mode = toolregistry_codemode.get_code_mode(registry)
    assert mode is not None
    with pytest.raises(RuntimeError, match="waits on 2 calls, but 1 were held"):
        mode.resume({**saved, "held": saved["held"][:1]})
    assert SENT == []
    assert [a.status for a in policy.approvals()] == ["approved", "approved"]
    done = mode.resume(saved)
    assert done.ok, done.text
    assert done.text == "sent to a@example.com sent to b@example.com"
    assert sorted(SENT) == ["a@example.com", "b@example.com"]
