"""The execution log on the shared store: calls of several worker processes in one database,
shown by ``toolregistry log`` from any of them (a real PostgreSQL, and a SQLite store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.plugin import StoreURL, parse_store_url
from toolregistry_inspector import ExecutionLog, execution_log, query_log

# One worker: a registry from the configuration, three calls, the log flushed.
WORKER = textwrap.dedent("""
    import sys
    from toolregistry import ToolRegistry
    from toolregistry_inspector import execution_log

    config, name = sys.argv[1], sys.argv[2]
    reg = ToolRegistry(name=name, config=config)
    reg.register(lambda x: x, name="echo")
    reg.register(lambda: 1 / 0, name="crash")
    for i in range(3):
        reg.invoke("echo", {"x": i}, call_id=f"{name}-{i}")
    reg.invoke("crash", {}, call_id=f"{name}-crash")
    execution_log(reg).flush()
    reg.close()
""")


def _project(tmp_path: Path, store: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f'[tool.toolregistry]\nstore = "{store}"\n',
                                           encoding="utf-8")
    (folder / "worker.py").write_text(WORKER, encoding="utf-8")
    return folder


def _toolregistry(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("toolregistry")
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def _every_worker_shows_in_one_log(tmp_path: Path, store: str) -> None:
    folder = _project(tmp_path, store)
    workers = [subprocess.Popen([sys.executable, "worker.py", "pyproject.toml", name],
                                cwd=folder, stderr=subprocess.PIPE, text=True)
               for name in ("w1", "w2")]
    for proc in workers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    out = _toolregistry(folder, "log", "--json", "-n", "100")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(r["call_id"] for r in rows) == sorted(
        f"{w}-{i}" for w in ("w1", "w2") for i in ("0", "1", "2", "crash"))
    assert {r["arguments"]["x"] for r in rows if r["tool"] == "echo"} == {"<int>"}
    out = _toolregistry(folder, "log", "--json", "--tool", "cr*", "--registry", "w2")
    assert [json.loads(line)["call_id"] for line in out.stdout.splitlines()] == ["w2-crash"]
    out = _toolregistry(folder, "log", "--outcome", "error")
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 2


def test_toolregistry_log_shows_every_worker_on_postgres(tmp_path: Path,
                                                         postgres_url: str) -> None:
    _every_worker_shows_in_one_log(tmp_path, postgres_url)


def test_toolregistry_log_shows_every_worker_on_a_sqlite_store(tmp_path: Path) -> None:
    _every_worker_shows_in_one_log(tmp_path, "sqlite:///state/shared.db")
    assert (tmp_path / "project" / "state" / "shared.db").is_file()


def test_log_db_still_wins_over_the_store(tmp_path: Path, postgres_url: str) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(f'[tool.toolregistry]\nstore = "{postgres_url}"\n'
                   '[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n',
                   encoding="utf-8")
    reg = ToolRegistry(config=cfg)
    try:
        log = execution_log(reg)
        assert log is not None and log.db == tmp_path / "calls.sqlite"
    finally:
        reg.close()


def test_globs_and_retention_on_postgres(postgres_url: str) -> None:
    url = parse_store_url(postgres_url)
    reg = ToolRegistry(name="globs", store=postgres_url)
    try:
        for name in ("srv-a", "srv-b", "srvxc", "other"):
            reg.register(lambda: "ok", name=name)
            reg.invoke(name, {}, call_id=name)
        log = execution_log(reg)
        assert log is not None and log.store == url and log.db is None
        log.flush()
    finally:
        reg.close()
    assert [e.call_id for e in query_log(url, tool="srv-*")] == ["srv-a", "srv-b"]
    assert [e.call_id for e in query_log(postgres_url, tool="srv?[bc]")] == ["srv-b", "srvxc"]
    assert [e.call_id for e in query_log(url, limit=1)] == ["other"]
    ExecutionLog(10, db=url, max_rows=2).close()  # retention runs when the writer stops
    assert [e.call_id for e in query_log(url)] == ["srvxc", "other"]


def test_an_unreachable_log_store_is_named(tmp_path: Path) -> None:
    import socket

    pytest.importorskip("psycopg", reason="the postgres store needs psycopg 3")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Exception, match=rf"postgresql://u:\*\*\*@127.0.0.1:{port}/x cannot be"):
        ExecutionLog(10, db=StoreURL(f"postgresql://u:pw@127.0.0.1:{port}/x"))


def test_the_live_inspector_reads_a_postgres_log(tmp_path: Path, postgres_url: str) -> None:
    import httpx

    from toolregistry_inspector import serve
    from toolregistry_inspector._reads import durations, get_entry, read_log

    folder = _project(tmp_path, postgres_url)
    worker = subprocess.run([sys.executable, "worker.py", "pyproject.toml", "agent"], cwd=folder,
                            capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0, worker.stderr
    reg = ToolRegistry(name="inspector", config=folder / "pyproject.toml")
    server = serve(reg, port=0, token="test-token-0123456789", block=False, quiet=True)
    try:
        log = execution_log(reg)
        assert log is not None and log.db is None
        seen = read_log(log)  # the agent's calls, though this process made none
        assert [e.call_id for e in seen] == ["agent-0", "agent-1", "agent-2", "agent-crash"]
        assert seen[0].result == [{"type": "text", "text": "<str, 1 chars>"}]
        assert [e.call_id for e in read_log(log, before=seen[2].seq)] == ["agent-0", "agent-1"]
        assert read_log(log, until=seen[0].time) == []
        assert sorted((t, ok) for t, _, ok in durations(log)) == [
            ("crash", False), ("echo", True), ("echo", True), ("echo", True)]
        assert get_entry(log, seen[3].seq) == seen[3]
        assert get_entry(log, seen[3].seq + 1) is None
        assert server is not None
        with httpx.Client(base_url=server.base_url, timeout=30) as login:
            location = login.get("/tools?token=test-token-0123456789").headers["location"]
        with httpx.Client(base_url=server.base_url + location[: -len("/tools")],
                          timeout=30) as client:
            api = client.get("/api/log").json()["entries"]
            assert [e["call_id"] for e in api] == [e.call_id for e in seen]
            page = client.get(f"/calls/{seen[3].seq}")
            assert page.status_code == 200 and "agent-crash" in page.text
            assert "pw" not in client.get("/log").text.replace(postgres_url, "")
    finally:
        if server is not None:
            server.close()
        reg.close()


def test_a_postgres_log_made_before_results_were_kept_gets_the_column(
        postgres_url: str) -> None:
    from toolregistry.plugin import open_store

    url = parse_store_url(postgres_url)
    old = open_store(url)
    try:  # the table as the first version of the schema made it, with one call
        old.ensure_schema("inspector-log", 1, (
            "CREATE TABLE inspector_calls (seq BIGSERIAL PRIMARY KEY, time DOUBLE PRECISION "
            "NOT NULL, registry TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, arguments TEXT "
            "NOT NULL, outcome TEXT NOT NULL, duration DOUBLE PRECISION NOT NULL, reason TEXT, "
            "error TEXT, approval TEXT, spool TEXT, format TEXT NOT NULL)",))
        with old.transaction() as tx:
            tx.execute("INSERT INTO inspector_calls (time, registry, tool, call_id, arguments, "
                       "outcome, duration, format) VALUES (?, 'old', 'echo', 'old-1', '{}', "
                       "'ok', 0.1, 'registry')", (time.time(),))
    finally:
        old.close()
    reg = ToolRegistry(name="new", store=postgres_url)
    reg.register(lambda x: x, name="echo")
    try:
        reg.invoke("echo", {"x": "hi"}, call_id="new-1")
        log = execution_log(reg)
        assert log is not None
        log.flush()
    finally:
        reg.close()
    first, second = query_log(url)
    assert (first.call_id, first.result) == ("old-1", None)
    assert (second.call_id, second.result) == ("new-1", [{"type": "text",
                                                          "text": "<str, 2 chars>"}])
