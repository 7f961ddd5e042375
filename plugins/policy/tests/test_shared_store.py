"""The policy's state on the store every worker shares -- budgets and rate limits, the audit
trail: SQLite across processes of one host, and a real PostgreSQL across processes (as
workers on several hosts would be)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

# One worker: waits for the go file (so that every worker calls at once), then calls `send`
# from several threads and prints how many calls were allowed.
WORKER = textwrap.dedent("""
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path
    from toolregistry import ToolRegistry

    config, go, calls = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    reg = ToolRegistry(config=config)
    reg.register(lambda: "sent", name="send")
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.01)
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda _: reg.invoke("send", {}).outcome, range(calls)))
    reg.close()
    print(json.dumps(outcomes), flush=True)
""")


def _config(tmp_path: Path, store: str, budgets: str) -> Path:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(f'[tool.toolregistry]\nstore = "{store}"\n'
                   f"[tool.toolregistry.plugins.policy.budgets]\n{budgets}\n",
                   encoding="utf-8")
    return cfg


def _workers(tmp_path: Path, cfg: Path, processes: int, calls: int) -> list[list[str]]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": ""}
    procs = [subprocess.Popen([sys.executable, str(script), str(cfg), str(go), str(calls)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(processes)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == "ready", proc.communicate(timeout=60)
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _exactly_n_across_processes(tmp_path: Path, store: str) -> None:
    cfg = _config(tmp_path, store, 'tools = {send = {max-calls = 5}}')
    results = _workers(tmp_path, cfg, processes=2, calls=8)
    allowed = sum(outcome == "ok" for outcomes in results for outcome in outcomes)
    assert allowed == 5, results
    assert sum(o == "denied" for r in results for o in r) == 11


def test_a_budget_admits_exactly_n_calls_across_processes_on_postgres(
        tmp_path: Path, postgres_url: str) -> None:
    _exactly_n_across_processes(tmp_path, postgres_url)


def test_a_budget_admits_exactly_n_calls_across_processes_on_sqlite(tmp_path: Path) -> None:
    _exactly_n_across_processes(tmp_path, "sqlite:///shared.db")
    assert (tmp_path / "shared.db").exists()  # relative to the configuration file


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def _registry(store: str) -> ToolRegistry:
    reg = ToolRegistry(store=store)
    for name in ("search", "send"):
        reg.register(lambda: "ok", name=name)
    return reg


def test_two_registries_share_limits_costs_and_resets(store: str) -> None:
    budgets = {"tools": {"search": {"per-minute": 3}, "send": {"max-calls": 2}},
               "costs": {"search": 2}, "max-cost": 5}
    one, two = _registry(store), _registry(store)
    try:
        for reg in (one, two):
            tp.configure(reg, budgets=budgets)
        outcomes = [reg.invoke("search", {}).outcome for reg in (one, two, one)]
        # Cost 2 each against 5: the third search does not fit, whichever worker makes it.
        assert outcomes == ["ok", "ok", "denied"]
        assert "the cost budget is spent (4 of 5 used" in one.invoke("search", {}).text
        assert [reg.invoke("send", {}).outcome for reg in (two, one, two)] == \
            ["ok", "ok", "denied"]
        usage = tp.get_policy(one).budgets.usage()
        assert usage == {"calls": {"tool 'search'": 2, "tool 'send'": 2}, "cost": 4.0,
                         "max_cost": 5.0}
        tp.get_policy(two).budgets.reset()  # for every worker
        assert one.invoke("send", {}).outcome == "ok"
        assert tp.get_policy(one).budgets.usage()["calls"]["tool 'send'"] == 1
    finally:
        one.close()
        two.close()


def test_the_rate_limit_is_shared(store: str) -> None:
    one, two = _registry(store), _registry(store)
    try:
        for reg in (one, two):
            tp.configure(reg, budgets={"tools": {"search": {"per-minute": 2}}})
        assert [reg.invoke("search", {}).outcome for reg in (one, two, two)] == \
            ["ok", "ok", "denied"]
        text = one.invoke("search", {}).text
        assert "at most 2 calls per minute to tool 'search'; try again in" in text
    finally:
        one.close()
        two.close()


def test_a_call_another_plugin_stops_is_given_back(store: str) -> None:
    from toolregistry.plugin import hookimpl
    from toolregistry.types import Decision

    class Veto:
        __name__ = "veto"

        @hookimpl
        def authorize(self, registry: ToolRegistry, tool: object, call: object
                      ) -> Decision | None:
            return Decision.deny("vetoed", rule="veto") if getattr(tool, "name", "") == \
                "send" else None

    reg = ToolRegistry(store=store, plugins=[Veto()])
    try:
        reg.register(lambda: "ok", name="send")
        tp.configure(reg, budgets={"tools": {"send": {"max-calls": 1, "per-minute": 1}}})
        assert reg.invoke("send", {}).outcome == "denied"
        assert tp.get_policy(reg).budgets.usage()["calls"]["tool 'send'"] == 0
    finally:
        reg.close()


def test_an_unreachable_database_is_named_at_start(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="the postgres store needs psycopg 3")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = _config(tmp_path, f"postgresql://app:hunter2@127.0.0.1:{port}/tools",
                  "max-calls = 3")
    reg = ToolRegistry(config=cfg)
    try:
        # The policy starts with the first tool (what `toolregistry serve` does first).
        with pytest.raises(ConfigError) as info:
            reg.register(lambda: "ok", name="send")
    finally:
        reg.close()
    assert f"postgresql://app:***@127.0.0.1:{port}/tools cannot be reached" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_every_workers_decisions_are_queried_from_any(store: str) -> None:
    one, two = ToolRegistry(name="one", store=store), ToolRegistry(name="two", store=store)
    try:
        for reg in (one, two):
            reg.register(lambda: "ok", name="read")
            reg.register(lambda: "ok", name="delete")
            tp.configure(reg, audit_allowed=True,
                         rules=[tp.Rule("deny", tools=["delete"], name="no-delete")])
        one.invoke("read", {}, call_id="r1")
        two.invoke("delete", {}, call_id="d2")
        two.invoke("read", {}, call_id="r2")
        for reg in (one, two):
            records = tp.get_policy(reg).audit.query()
            assert [(r.call_id, r.decision, r.rule) for r in records] == [
                ("r1", "allow", "default"), ("d2", "deny", "no-delete"),
                ("r2", "allow", "default")]
        audit = tp.get_policy(one).audit
        assert [r.call_id for r in audit.query(decision="deny")] == ["d2"]
        assert [r.call_id for r in audit.query(tool="read", limit=1)] == ["r2"]
        assert audit.query(call_id="nothing") == []
        assert len(audit) == 1  # this process's records in memory
    finally:
        one.close()
        two.close()


def test_a_budget_store_gone_denies_with_the_reason(tmp_path: Path) -> None:
    from toolregistry.testing import PostgresCluster, _postgres_bindir

    bindir = _postgres_bindir()
    if bindir is None:
        pytest.skip("this test needs PostgreSQL's initdb and pg_ctl")
    cluster = PostgresCluster(bindir)
    reg = None
    try:
        reg = ToolRegistry(store=cluster.new_database().replace(
            "toolregistry@", "toolregistry:secret@"))
        reg.register(lambda: "ok", name="send")
        tp.configure(reg, budgets={"tools": {"send": {"max-calls": 5}}})
        assert reg.invoke("send", {}).outcome == "ok"
        cluster.stop()  # the server goes away under a running registry
        result = reg.invoke("send", {})
        assert result.outcome == "denied", result.text
        assert "the budget of 'send' cannot be counted: the store postgresql://" \
               "toolregistry:***@127.0.0.1" in result.text
        assert "secret" not in result.text
    finally:
        if reg is not None:
            reg.close()
        cluster.stop()
