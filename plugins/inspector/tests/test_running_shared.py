"""Calls in flight of other processes: an agent process writing to a shared log (a SQLite
file, or a PostgreSQL store) runs a slow tool that reports progress; another process sees
the call while it runs (``query_running``, the inspector's running page in a real browser),
with its progress, and no more once it ended or its process died; its Cancel there ends the
call in the agent's process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry_inspector import query_running, serve

TOKEN = "live-token-0123456789"
WAIT = 20_000  # ms: a loaded machine may be slow

# The agent: a registry from the configuration; many short calls (which never reach the
# running table), then one that reports progress and waits half way until ``release``
# exists.
AGENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from toolregistry import ToolContext, ToolRegistry
    from toolregistry_inspector import execution_log

    reg = ToolRegistry(name="agent", config=sys.argv[1])

    @reg.register
    def crunch(steps: int, ctx: ToolContext) -> str:
        for step in range(steps):
            ctx.report_progress(step, steps, f"step {step}")
            if step == steps // 2:
                ends = time.monotonic() + 60
                while not Path("release").exists() and time.monotonic() < ends:
                    time.sleep(0.02)
            time.sleep(0.01)
        return "done"

    reg.register(lambda x: x, name="echo")
    for i in range(200):
        reg.invoke("echo", {"x": i}, call_id=f"quick-{i}")
    result = reg.invoke("crunch", {"steps": 10}, call_id="agent-1")
    print(result.error_kind or "ok", "|", result.text, flush=True)
    execution_log(reg).flush()
    reg.close()
""")


def _project(tmp_path: Path, log_db: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        f'[tool.toolregistry.plugins.inspector]\nlog-db = "{log_db}"\n', encoding="utf-8")
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    return folder


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Callable[[str], tuple[Path, subprocess.Popen[str]]]]:
    started: list[subprocess.Popen[str]] = []

    def start(log_db: str) -> tuple[Path, subprocess.Popen[str]]:
        folder = _project(tmp_path, log_db)
        proc = subprocess.Popen([sys.executable, "agent.py", "pyproject.toml"], cwd=folder,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        return folder, proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _wait_for(read: Callable[[], list[dict[str, Any]]], want: Callable[[list[dict[str, Any]]], bool],
              proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        assert proc.poll() is None, proc.communicate()
        calls = read()
        if want(calls):
            return calls
        time.sleep(0.05)
    raise AssertionError(f"not seen in time: {read()}")


def _half_way(calls: list[dict[str, Any]]) -> bool:
    return any(c["call_id"] == "agent-1" and c["progress"] == 5 for c in calls)


def _shows_a_call_in_flight_until_it_ends(folder: Path, proc: subprocess.Popen[str],
                                          db: str) -> None:
    calls = _wait_for(lambda: query_running(db), _half_way, proc)
    assert len(calls) == 1, calls  # the 200 short calls never got a row
    (call,) = calls
    assert call["tool"] == "crunch" and call["registry"] == "agent"
    assert call["pid"] == proc.pid and call["host"] == socket.gethostname()
    assert call["fraction"] == 0.5 and call["total"] == 10 and call["message"] == "step 5"
    assert 0 <= call["elapsed"] < 120
    (folder / "release").touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.strip() == "ok | done", err
    assert query_running(db) == []


def test_a_call_in_flight_of_another_process_shows_until_it_ends(agent: Any,
                                                                 tmp_path: Path) -> None:
    db = str(tmp_path / "shared" / "calls.sqlite")
    folder, proc = agent(db)
    _shows_a_call_in_flight_until_it_ends(folder, proc, db)


def test_a_call_in_flight_on_postgres_shows_until_it_ends(agent: Any,
                                                          postgres_url: str) -> None:
    folder, proc = agent(postgres_url)
    _shows_a_call_in_flight_until_it_ends(folder, proc, postgres_url)


def test_the_calls_of_a_process_that_died_are_not_shown(agent: Any, tmp_path: Path) -> None:
    db = str(tmp_path / "calls.sqlite")
    _, proc = agent(db)
    _wait_for(lambda: query_running(db), _half_way, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert query_running(db) == []  # its row is still there, but its pid is gone


@contextmanager
def _running_page(browsing: Any, folder: Path) -> Iterator[tuple[Any, list[str]]]:
    """An inspector of this process over the agent's shared log, its running page open in
    chromium once the agent's call is half way."""
    from playwright.sync_api import expect

    inspector = ToolRegistry(name="inspector", config=folder / "pyproject.toml")
    server = serve(inspector, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    try:
        with browsing() as (page, errors):
            page.goto(server.url)
            page.goto(str(page.url).rsplit("/tools", 1)[0] + "/running")
            rows = page.locator("#running-table tbody tr")
            expect(rows).to_have_count(1, timeout=WAIT)  # live: the page was not reloaded
            expect(page.get_by_label("progress of agent-1")).to_have_attribute(
                "value", "0.5", timeout=WAIT)
            yield page, errors
    finally:
        server.close()
        inspector.close()


def test_the_running_page_shows_another_processs_calls_live(
        browsing: Any, agent: Any, tmp_path: Path, shots: Path) -> None:
    from playwright.sync_api import expect

    folder, proc = agent(str(tmp_path / "calls.sqlite"))
    with _running_page(browsing, folder) as (page, errors):
        row = page.locator("#running-table tbody tr").first
        expect(row).to_contain_text("agent-1")
        expect(row.locator(".running-process")).to_have_text(
            f"pid {proc.pid} on {socket.gethostname()}")
        expect(row).to_contain_text("step 5")
        page.screenshot(path=str(shots / "running-other-process.png"), full_page=True)
        (folder / "release").touch()
        expect(page.locator("#running-none")).to_be_visible(timeout=WAIT)
    assert errors == [], errors
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("shared", ["sqlite", "postgres"])
def test_the_running_page_cancels_another_processs_call(
        browsing: Any, agent: Any, tmp_path: Path, shared: str,
        request: pytest.FixtureRequest) -> None:
    # The inspector of one process cancels a call running in another: it leaves a request
    # in the shared log, the agent's log writer takes it and cancels the call through the
    # kernel; the agent's caller gets a "cancelled" result at once (the tool waits for a
    # file that never comes).
    from playwright.sync_api import expect

    db = str(tmp_path / "calls.sqlite") if shared == "sqlite" \
        else request.getfixturevalue("postgres_url")
    folder, proc = agent(db)
    with _running_page(browsing, folder) as (page, errors):
        page.get_by_role("button", name="Cancel agent-1").click()
        expect(page.locator("#running-none")).to_be_visible(timeout=WAIT)
    assert errors == [], errors
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("cancelled | "), out
    assert "'crunch' was cancelled: cancelled in the inspector (pid " \
        f"{os.getpid()} on {socket.gethostname()})" in out, out
    assert not (folder / "release").exists()
    assert query_running(db) == []


def test_a_row_without_a_heartbeat_is_stale_and_retention_deletes_it(tmp_path: Path) -> None:
    import sqlite3

    from toolregistry_inspector import ExecutionLog

    db = tmp_path / "calls.sqlite"
    log = ExecutionLog(db=db)  # makes the file and its running table
    try:
        now = time.time()
        conn = sqlite3.connect(db)
        with conn:
            for owner, beat in (("fresh", now), ("silent", now - 20), ("gone", now - 3600)):
                conn.execute("INSERT INTO running (owner, key, registry, tool, call_id, batch,"
                             " started, pid, host, progress, total, message, beat) VALUES"
                             " (?, 1, 'r', 'crunch', ?, NULL, ?, 1, 'another-host', NULL,"
                             " NULL, NULL, ?)", (owner, owner, now - 30, beat))
        conn.close()
        # Another host's pid is not checked here: its heartbeat says whether it lives.
        assert [c["call_id"] for c in query_running(db)] == ["fresh"]
        ends = time.monotonic() + 30  # the writer applies the retention every 5 s
        while True:
            log.flush()
            conn = sqlite3.connect(db)
            left = sorted(r[0] for r in conn.execute("SELECT owner FROM running"))
            conn.close()
            if "gone" not in left or time.monotonic() > ends:
                break
            time.sleep(0.2)
        assert left == ["fresh", "silent"]  # only rows long without a heartbeat are deleted
    finally:
        log.close()
