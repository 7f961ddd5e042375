"""The execution log: what one call leaves in it (every outcome, through real registries and a
real authorize plugin), the ring buffer's bound, redaction, filters, the SQLite file with its
retention, and ``toolregistry log`` run as a command."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.plugin import hookimpl
from toolregistry.types import Decision
from toolregistry_inspector import ExecutionLog, execution_log, query_log, redact


class Guard:
    """A real authorize plugin: deletes are denied, mail waits for a person."""

    @hookimpl
    def authorize(self, tool: Any, call: Any) -> Decision | None:
        if tool.name == "delete":
            return Decision.deny("nothing is deleted here", rule="no-delete")
        if tool.name == "mail":
            return Decision.pending("mail leaves the company", rule="ask-mail")
        return None


def _config(tmp_path: Path, body: str) -> Path:
    file = tmp_path / "pyproject.toml"
    file.write_text("[tool.toolregistry.plugins.inspector]\n" + body, encoding="utf-8")
    return file


@pytest.fixture
def registry(tmp_path: Path) -> Any:
    reg = ToolRegistry(config=_config(tmp_path, ""), plugins=[Guard()])

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    @reg.register
    def fail(message: str) -> str:
        raise RuntimeError(message)

    @reg.register
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return "done"

    @reg.register
    def delete(path: str) -> str:
        return "deleted"

    @reg.register
    def mail(to: str, body: str) -> str:
        return "sent"

    execution_log(reg)  # a use: the log records from here on
    yield reg
    reg.close()


def test_every_outcome_is_logged_with_what_the_call_was(registry: ToolRegistry) -> None:
    results = registry.execute_tool_calls([
        {"id": "1", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"id": "2", "name": "fail", "arguments": {"message": "disk full"}},
        {"id": "3", "name": "delete", "arguments": {"path": "/etc/passwd"}},
        {"id": "4", "name": "mail", "arguments": {"to": "ceo@example.com", "body": "hi"}},
        {"id": "5", "name": "nope", "arguments": {}},
    ])
    assert results[3].pending
    log = execution_log(registry)
    entries = {e.call_id: e for e in log.entries()}
    assert set(entries) == {"1", "2", "3", "4", "5"}  # an unknown tool's call too
    assert (entries["5"].tool, entries["5"].outcome) == ("nope", "unknown_tool")
    ok, failed, denied, pending = (entries[k] for k in "1234")
    assert (ok.tool, ok.outcome, ok.ok, ok.error) == ("add", "ok", True, None)
    assert ok.arguments == {"a": "<int>", "b": "<int>"}
    assert failed.outcome == "execution" and "disk full" in (failed.error or "")
    assert failed.arguments == {"message": "<str, 9 chars>"}
    assert denied.outcome == "denied" and "nothing is deleted here" in (denied.error or "")
    assert pending.outcome == "approval_required"
    assert pending.approval is not None
    assert pending.approval["id"] == results[3].approval.id  # type: ignore[union-attr]
    assert pending.approval["rule"] == "ask-mail"
    assert "arguments" not in pending.approval  # never the values, even through the approval
    assert all(e.duration >= 0 and abs(e.time - time.time()) < 60 for e in entries.values())
    assert [e.seq for e in log.entries()] == sorted(e.seq for e in log.entries())
    json.dumps([e.to_dict() for e in log.entries()])


def test_timeouts_and_async_calls_are_logged(registry: ToolRegistry) -> None:
    import asyncio

    result = registry.invoke("slow", {"seconds": 2}, call_id="t", timeout=0.1)
    assert result.error_kind == "timeout"
    asyncio.run(registry.aexecute_tool_calls([{"id": "a", "name": "add",
                                               "arguments": {"a": 2, "b": 2}}]))
    log = execution_log(registry)
    assert log.entries(call_id="t")[0].outcome == "timeout"
    assert log.entries(call_id="a")[0].outcome == "ok"


def test_calls_in_flight_show_from_the_next_call_once_watched(registry: ToolRegistry) -> None:
    """The log hears only of ends until an inspector shows the calls in flight
    (``watch_running``, when its page opens): then the plans are compiled again and the
    next call shows while it runs. An entry's time is its call's start either way."""
    log = execution_log(registry)
    before = time.time()
    assert registry.invoke("slow", {"seconds": 0.5}, call_id="quiet").value == "done"
    started = log.entries(call_id="quiet")[0].time
    assert before - 0.05 <= started < before + 0.4  # the start, not the end
    running = log.watch_running()
    seen: list[Any] = []

    def watch() -> None:
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            seen.extend(r["call_id"] for r in running.snapshot())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert registry.invoke("slow", {"seconds": 0.5}, call_id="shown").value == "done"
    finally:
        watcher.join()
    assert seen == ["shown"]
    assert running.snapshot() == []  # gone when it ended
    assert [e.call_id for e in log.entries()] == ["quiet", "shown"]


def test_filters(registry: ToolRegistry) -> None:
    for i in range(5):
        registry.invoke("add", {"a": i, "b": 1}, call_id=f"add{i}")
    registry.invoke("fail", {"message": "x"}, call_id="f")
    log = execution_log(registry)
    assert [e.call_id for e in log.entries(tool="add", limit=2)] == ["add3", "add4"]
    assert [e.call_id for e in log.entries(tool="f*")] == ["f"]
    assert [e.call_id for e in log.entries(outcome="error")] == ["f"]
    assert [e.call_id for e in log.entries(outcome="execution")] == ["f"]
    assert log.entries(outcome="timeout") == []
    third = log.entries()[2].seq
    assert [e.call_id for e in log.entries(after=third)] == ["add3", "add4", "f"]
    assert log.entries(since=time.time() + 60) == []
    assert log.entries(limit=0) == []
    stats = log.stats()
    assert stats["add"]["calls"] == 5 and stats["fail"]["errors"] == 1
    with pytest.raises(TypeError, match="outcome must be a string"):
        log.entries(outcome=1)  # type: ignore[arg-type]


def test_the_ring_buffer_keeps_the_last_calls(tmp_path: Path) -> None:
    reg = ToolRegistry(config=_config(tmp_path, "log = true\nlog-size = 3\n"))
    reg.register(lambda x: x, name="echo")
    try:
        for i in range(10):
            reg.invoke("echo", {"x": i}, call_id=str(i))
        log = execution_log(reg)
        assert len(log) == 3
        assert [e.call_id for e in log.entries()] == ["7", "8", "9"]
        log.clear()
        assert log.entries() == [] and log.last() is None
    finally:
        reg.close()


def test_calls_from_many_threads_all_arrive(registry: ToolRegistry) -> None:
    def work(n: int) -> None:
        for i in range(200):
            registry.invoke("add", {"a": n, "b": i}, call_id=f"{n}-{i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entries = execution_log(registry).entries()
    assert len(entries) == 800
    assert len({e.seq for e in entries}) == 800


def test_redaction_and_full_arguments(tmp_path: Path) -> None:
    assert [redact(v) for v in (None, True, 3, 2.5, "abc", {"k": 1}, [1, 2], b"x")] == [
        "<null>", "<bool>", "<int>", "<float>", "<str, 3 chars>", "<object, 1 keys>",
        "<list, 2 items>", "<bytes>"]
    reg = ToolRegistry(config=_config(tmp_path, 'arguments = "full"\nmax-value-chars = 20\n'))

    @reg.register
    def note(text: str, tags: list[str]) -> str:
        return text

    try:
        log = execution_log(reg)
        reg.invoke("note", {"text": "x" * 100, "tags": ["a", "b"]}, call_id="n")
        entry = log.last()
        assert entry is not None and entry.arguments["tags"] == ["a", "b"]
        assert entry.arguments["text"].startswith('"xxxxxxxxxxxxxxxxxxx')
        assert entry.arguments["text"].endswith("… (102 chars)")
    finally:
        reg.close()


def test_bad_settings_are_named(tmp_path: Path) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match=r"inspector.*log-size"):
        ToolRegistry(config=_config(tmp_path, "log-size = 0\n"))
    with pytest.raises(ValueError, match="size must be a positive integer"):
        ExecutionLog(0)
    with pytest.raises(ValueError, match="arguments must be 'redacted' or 'full'"):
        ExecutionLog(10, arguments="all")  # type: ignore[arg-type]


def test_by_default_the_log_records_from_its_first_use(tmp_path: Path) -> None:
    """``log = "on-use"`` (the default): an installed inspector nobody asked for observes
    nothing (the tool's call plan has no observer of it); from the first use on, every call
    is logged, those of tools already called included. ``log = true`` records from the start,
    as does a log that is also written to a file (other processes read it)."""
    from toolregistry_inspector._log import _Observer

    def observers(reg: ToolRegistry) -> list[Any]:
        executor = reg._get_executor()
        return [o for o in executor.pipeline._plans["one"].hooks.observers
                if isinstance(o, _Observer)]

    reg = ToolRegistry(config=_config(tmp_path, ""))
    reg.register(lambda: 1, name="one")
    try:
        before = time.time()
        assert reg.invoke("one", {}, call_id="unseen").ok
        assert observers(reg) == []
        assert "log" not in reg.plugin_state("inspector")
        log = execution_log(reg)
        assert before <= log.since <= time.time()
        assert reg.invoke("one", {}, call_id="seen").ok
        assert [e.call_id for e in log.entries()] == ["seen"]
        assert observers(reg) == [log.observer]
        assert reg.invoke("nope", {}, call_id="unknown").error_kind == "unknown_tool"
        assert [e.call_id for e in log.entries()] == ["seen", "unknown"]
    finally:
        reg.close()
    for body in ("log = true\n", 'log-db = "calls.sqlite"\n'):
        reg = ToolRegistry(config=_config(tmp_path, body))
        reg.register(lambda: 1, name="one")
        try:
            assert reg.invoke("one", {}, call_id="first").ok
            assert [e.call_id for e in execution_log(reg).entries()] == ["first"], body
        finally:
            reg.close()
    # An inspector on a registry is a use: the calls from its start on are logged.
    from toolregistry_inspector import create_app

    reg = ToolRegistry(config=_config(tmp_path, ""))
    reg.register(lambda: 1, name="one")
    try:
        create_app(reg, token="a-long-token")
        assert reg.invoke("one", {}, call_id="after").ok
        assert [e.call_id for e in execution_log(reg).entries()] == ["after"]
    finally:
        reg.close()
    with pytest.raises(Exception, match="log"):
        ToolRegistry(config=_config(tmp_path, 'log = "sometimes"\n'))


def test_the_log_can_be_turned_off(tmp_path: Path) -> None:
    reg = ToolRegistry(config=_config(tmp_path, "log = false\n"))
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}).ok
        with pytest.raises(ValueError, match="is off"):
            execution_log(reg)
    finally:
        reg.close()


def test_the_file_keeps_calls_across_registries_with_retention(tmp_path: Path) -> None:
    db = tmp_path / "calls.sqlite"
    reg = ToolRegistry(name="first", config=_config(tmp_path, f'log-db = "{db}"\n'))
    first = execution_log(reg)
    reg.register(lambda x: x * 2, name="double")
    try:
        for i in range(5):
            reg.invoke("double", {"x": i}, call_id=f"d{i}")
        first.flush()
        rows = query_log(db)
        assert [r.call_id for r in rows] == [f"d{i}" for i in range(5)]
        assert rows[0].arguments == {"x": "<int>"}
        assert query_log(db, limit=2, tool="dou*")[-1].call_id == "d4"
        assert query_log(db, registry="other") == []
    finally:
        reg.close()
    # Old rows go (retention by age) and the file keeps at most max-rows rows.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE calls SET time = time - 1000 WHERE call_id IN ('d0', 'd1')")
    conn.commit()
    conn.close()
    second = ExecutionLog(100, db=db, retention_seconds=500, max_rows=2)
    second.close()
    assert [r.call_id for r in query_log(db)] == ["d3", "d4"]
    with pytest.raises(FileNotFoundError, match="no execution log file"):
        query_log(tmp_path / "missing.sqlite")
    (tmp_path / "junk.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(ValueError, match="is not an execution log file"):
        query_log(tmp_path / "junk.sqlite")


def _toolregistry(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("toolregistry")
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "NO_COLOR": "1"})


def test_toolregistry_log_command(tmp_path: Path) -> None:
    config = _config(tmp_path, 'log-db = "calls.sqlite"\n')
    reg = ToolRegistry(config=config, plugins=[Guard()])
    reg.register(lambda a, b: a + b, name="add")
    reg.register(lambda path: path, name="delete")
    try:
        reg.invoke("add", {"a": 1, "b": 2}, call_id="one")
        reg.invoke("delete", {"path": "/x"}, call_id="two")
        execution_log(reg).flush()
    finally:
        reg.close()

    out = _toolregistry(tmp_path, "log")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert " ok " in lines[0] and "add [one]" in lines[0] and '"a": "<int>"' in lines[0]
    assert "denied" in lines[1] and "delete [two]" in lines[1]

    out = _toolregistry(tmp_path, "log", "--outcome", "error", "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["call_id"], r["outcome"]) for r in rows] == [("two", "denied")]

    out = _toolregistry(tmp_path, "log", "--tool", "nothing*")
    assert out.returncode == 1 and out.stdout == ""

    out = _toolregistry(tmp_path, "log", "--since", "soon")
    assert out.returncode == 2 and "--since takes a duration" in out.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    out = _toolregistry(empty, "log")
    assert out.returncode == 2 and "log-db" in out.stderr and "--db PATH" in out.stderr
    out = _toolregistry(empty, "log", "--db", "missing.sqlite")
    assert out.returncode == 2 and "no execution log file" in out.stderr


def test_toolregistry_log_follow(tmp_path: Path) -> None:
    db = tmp_path / "calls.sqlite"
    reg = ToolRegistry(config=_config(tmp_path, 'log-db = "calls.sqlite"\n'))
    log = execution_log(reg)
    reg.register(lambda x: x, name="echo")
    exe = Path(sys.executable).with_name("toolregistry")
    proc = subprocess.Popen([str(exe), "log", "--db", str(db), "-f", "--interval", "0.1"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        time.sleep(1.0)  # the follower is running before the calls
        for i in range(3):
            reg.invoke("echo", {"x": i}, call_id=f"e{i}")
        log.flush()
        seen: list[str] = []
        deadline = time.monotonic() + 20
        assert proc.stdout is not None
        while len(seen) < 3 and time.monotonic() < deadline:
            seen.append(proc.stdout.readline())
        assert [f"echo [e{i}]" in line for i, line in enumerate(seen)] == [True] * 3
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
        reg.close()


def _text_and_image(tmp_path: Path, body: str) -> tuple[ToolRegistry, ExecutionLog]:
    from toolregistry import Image

    reg = ToolRegistry(config=_config(tmp_path, body))
    reg.register(lambda title: [f"caption {title}", Image.from_bytes(b"\x89PNG-ish", "image/png")],
                 name="chart")
    return reg, execution_log(reg)


def test_the_result_is_kept_redacted_by_default(tmp_path: Path) -> None:
    reg, log = _text_and_image(tmp_path, 'log-db = "calls.sqlite"\n')
    try:
        reg.invoke("chart", {"title": "q3-secret"}, call_id="c1")
        log.flush()
        for entry in (log.entries()[-1], query_log(tmp_path / "calls.sqlite")[-1]):
            assert entry.result == [{"type": "text", "text": "<str, 17 chars>"},
                                    {"type": "image", "media_type": "image/png", "bytes": 8}]
            assert "q3-secret" not in json.dumps(entry.to_dict())
    finally:
        reg.close()


def test_the_result_is_kept_in_full_mode(tmp_path: Path) -> None:
    reg, log = _text_and_image(tmp_path, 'log-db = "calls.sqlite"\narguments = "full"\n'
                                         "max-field-chars = 64\n")
    reg.register(lambda: "y" * 100, name="long")
    try:
        reg.invoke("chart", {"title": "q3"}, call_id="c1")
        reg.invoke("long", {}, call_id="c2")
        log.flush()
        chart, long = query_log(tmp_path / "calls.sqlite")
        assert chart.result is not None and chart.result[0] == {"type": "text",
                                                                "text": "caption q3"}
        assert chart.result[1]["url"] == "data:image/png;base64,iVBORy1pc2g="
        assert long.result == [{"type": "text", "text": "y" * 64 + "… (100 chars)"}]
        assert log.entries()[-1].result == long.result
    finally:
        reg.close()


def test_a_log_file_made_before_results_were_kept_gets_the_column(tmp_path: Path) -> None:
    from toolregistry_inspector._sinks import _SCHEMA

    db = tmp_path / "calls.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(_SCHEMA)
    conn.execute("INSERT INTO calls (time, registry, tool, call_id, arguments, outcome, "
                 "duration, format) VALUES (?, 'old', 'echo', 'old-1', '{}', 'ok', 0.1, "
                 "'registry')", (time.time(),))
    conn.commit()
    conn.close()
    assert [e.call_id for e in query_log(db)] == ["old-1"]  # read as it is
    reg = ToolRegistry(config=_config(tmp_path, 'log-db = "calls.sqlite"\n'))
    reg.register(lambda x: x, name="echo")
    try:
        reg.invoke("echo", {"x": "hi"}, call_id="new-1")
        execution_log(reg).flush()
    finally:
        reg.close()
    old, new = query_log(db)
    assert (old.call_id, old.result) == ("old-1", None)
    assert (new.call_id, new.result) == ("new-1", [{"type": "text", "text": "<str, 2 chars>"}])


def test_entries_page_back_and_stop_at_a_time(tmp_path: Path) -> None:
    from toolregistry_inspector._reads import durations

    reg = ToolRegistry(config=_config(tmp_path, 'log-db = "calls.sqlite"\n'))
    reg.register(lambda x: x, name="echo")
    log = execution_log(reg)
    try:
        for i in range(5):
            reg.invoke("echo", {"x": i}, call_id=f"e{i}")
        log.flush()
        cut = log.entries()[3].time  # e3 started at or after it
        for read in (log.entries, lambda **kw: query_log(tmp_path / "calls.sqlite", **kw)):
            assert [e.call_id for e in read(before=4, limit=2)] == ["e1", "e2"]
            assert [e.call_id for e in read(until=cut)] == ["e0", "e1", "e2"]
        memory = durations(ExecutionLog(), limit=3)
        assert memory == []
        shared = durations(log, until=cut)
        assert [(tool, ok) for tool, _, ok in shared] == [("echo", True)] * 3
    finally:
        reg.close()


def test_latency_percentiles_per_tool() -> None:
    from toolregistry_inspector._views import latency_table, percentile

    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([7.0], 0.9) == 7.0
    calls = [("t", i / 10, bool(i % 2)) for i in range(1, 11)]
    assert latency_table(calls) == [{"tool": "t", "calls": 10, "errors": 5, "p50": 0.5,
                                       "p90": 0.9, "p99": 1.0, "max": 1.0, "chart": {
                                           "calls": 100.0, "errors": 50.0, "p50": 50.0,
                                           "p90": 90.0, "p99": 100.0}}]


def test_writers_opening_an_older_log_file_at_once_add_its_column_once(tmp_path: Path) -> None:
    from toolregistry_inspector._sinks import _SCHEMA

    db = tmp_path / "calls.sqlite"
    with sqlite3.connect(db) as made:  # a file made before results were logged
        made.execute("PRAGMA auto_vacuum = INCREMENTAL")
        made.execute("PRAGMA journal_mode = WAL")
        made.executescript(_SCHEMA)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer's transaction: both openers wait for it
    logs: list[ExecutionLog] = []
    errors: list[BaseException] = []

    def open_log() -> None:
        try:
            logs.append(ExecutionLog(10, db=db))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_log) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # both have read the schema and wait for the lock
    holder.execute("COMMIT")
    holder.close()
    for thread in threads:
        thread.join(30)
    for log in logs:
        log.close()
    assert errors == [] and len(logs) == 2
