"""Approvals on the store every worker and host shares (a real PostgreSQL): a call held by
one process is decided and resumed by another, and runs exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry, ToolResult

TOOLS = '''
def send_mail(to: str, body: str) -> str:
    """Send a mail."""
    with open(__import__("os").environ["SENT_FILE"], "a") as fh:
        fh.write(to + "\\n")
    return f"sent to {to}"
'''

DECIDER = '''
import json, sys
from toolregistry import ToolRegistry, ToolResult
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

MAIL = {"to": "a@example.com", "body": "x"}


def _held(result: ToolResult) -> str:
    """The approval id of a held call."""
    assert result.pending and result.approval is not None, result.text
    return result.approval.id


def _send(to: str, body: str, ran: list[str]) -> str:
    ran.append(to)
    return "ok"


def test_a_decision_on_another_host_runs_the_call_once(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mailtools.py").write_text(TOOLS, encoding="utf-8")
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
    import mailtools  # type: ignore[import-not-found]

    registry = ToolRegistry(config=cfg)
    try:
        registry.register(mailtools.send_mail)
        [pending] = registry.execute_tool_calls([{"id": "m1", "name": "send_mail",
                                                  "arguments": MAIL}])
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
                                              "arguments": MAIL}])
        assert _held(again[0]) != held
        # ... and the call sent again finds its open approval, whichever worker it reaches.
        assert _held(registry.execute_tool_calls([{"id": "m1", "name": "send_mail",
                                                   "arguments": MAIL}])[0]) == _held(again[0])
        assert sent.read_text().splitlines() == ["a@example.com"]
    finally:
        registry.close()


def test_two_resumers_race_and_one_runs(postgres_url: str) -> None:
    ran: list[str] = []
    regs = []
    try:
        for _ in range(2):
            reg = ToolRegistry(store=postgres_url)
            reg.register(lambda to, body: _send(to, body, ran), name="send_mail")
            tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"])])
            regs.append(reg)
        [pending] = regs[0].execute_tool_calls([{"id": "c1", "name": "send_mail",
                                                 "arguments": MAIL}])
        held = _held(pending)
        assert [a.id for a in tp.get_policy(regs[1]).pending()] == [held]
        tp.get_policy(regs[1]).approve(held)
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def resume(reg: ToolRegistry) -> None:
            barrier.wait()
            try:
                outcomes.append(tp.get_policy(reg).resume([held])[0].outcome)
            except tp.ApprovalError:
                outcomes.append("refused")

        threads = [threading.Thread(target=resume, args=(r,)) for r in regs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["ok", "refused"]
        assert ran == ["a@example.com"]
    finally:
        for reg in regs:
            reg.close()


def test_a_sqlite_store_url_keeps_approvals_in_that_file(tmp_path: Path) -> None:
    reg = ToolRegistry(store=f"sqlite:///{tmp_path}/state.db")
    try:
        reg.register(lambda to, body: "ok", name="send_mail")
        tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"])])
        [pending] = reg.execute_tool_calls([{"id": "c1", "name": "send_mail",
                                             "arguments": MAIL}])
        store = tp.get_policy(reg).store
        assert isinstance(store, tp.SQLiteStore) and store.path == tmp_path / "state.db"
        assert store.get(_held(pending)) is not None
    finally:
        reg.close()
