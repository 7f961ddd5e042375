"""The execution log on the shared store: calls of several worker processes in one database,
shown by ``toolregistry log`` from any of them (a real PostgreSQL, and a SQLite store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
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
