"""The log file's query shapes and the ids the log keeps per call: a batch's calls found by its
id in memory and in the file, a file made by an older version upgraded in place, and the
newest calls of one tool read in index order (no sort of every matching call)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from toolregistry import ToolRegistry
from toolregistry_inspector import execution_log, query_log
from toolregistry_inspector._reads import select_tail


def _chat(call_id: str, text: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": "echo", "arguments": json.dumps({"text": text})}}


def _registry(tmp_path: Path) -> ToolRegistry:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n',
                      encoding="utf-8")
    registry = ToolRegistry(config=config)
    registry.register(lambda text: text, name="echo")
    registry.register(lambda: "x", name="other")
    return registry


def test_a_batch_is_found_by_its_id_in_memory_and_in_the_file(tmp_path: Path) -> None:
    registry = _registry(tmp_path)
    try:
        registry.execute_tool_calls([_chat("a", "1"), _chat("b", "2")])
        registry.invoke("echo", {"text": "3"}, call_id="c")
        log = execution_log(registry)
        log.flush()
        batch = log.entries(call_id="a")[0].batch
        assert batch is not None
        assert [e.call_id for e in log.entries(batch=batch)] == ["a", "b"]
        assert log.entries(call_id="c")[0].batch is None
        found = query_log(tmp_path / "calls.sqlite", batch=batch)
        assert [(e.call_id, e.batch) for e in found] == [("a", batch), ("b", batch)]
        assert found[0].to_dict()["batch"] == batch
    finally:
        registry.close()


_OLD_SCHEMA = """
CREATE TABLE calls (seq INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,
    registry TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, arguments TEXT NOT NULL,
    outcome TEXT NOT NULL, duration REAL NOT NULL, reason TEXT, error TEXT, approval TEXT,
    spool TEXT, format TEXT NOT NULL, result TEXT);
CREATE INDEX calls_time ON calls (time);
CREATE INDEX calls_tool ON calls (tool);
"""


def test_a_file_of_an_older_version_is_read_and_then_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(_OLD_SCHEMA)
        conn.execute("INSERT INTO calls (time, registry, tool, call_id, arguments, outcome, "
                     "duration, format) VALUES (?, 'r', 'echo', 'old', '{}', 'ok', 0.1, "
                     "'registry')", (time.time(),))
    conn.close()
    old = query_log(path)  # read as it is: no batch column yet
    assert [(e.call_id, e.batch, e.trace_id) for e in old] == [("old", None, None)]
    registry = _registry(tmp_path)
    try:
        registry.execute_tool_calls([_chat("new", "1")])
        execution_log(registry).flush()
    finally:
        registry.close()
    rows = query_log(path)
    assert [e.call_id for e in rows] == ["old", "new"] and rows[1].batch is not None
    with sqlite3.connect(path) as conn:
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(calls)")}
    conn.close()
    assert "calls_tool_seq" in indexes and "calls_tool" not in indexes


def _plan(path: Path, **filters: Any) -> str:
    tail, params = select_tail("sqlite", limit=201, **filters)
    with sqlite3.connect(path) as conn:
        plan = conn.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM calls{tail}", params)
        text = " | ".join(str(row[-1]) for row in plan)
    conn.close()
    return text


def test_the_newest_calls_of_a_tool_are_read_in_order_without_sorting_them(
        tmp_path: Path) -> None:
    """A page of one tool's newest calls since a time walks the (tool, seq) index from the
    end and stops at the page's size; a pattern walks the calls newest first. Neither makes
    the database sort every call that matches (slow when every row matches)."""
    registry = _registry(tmp_path)
    try:
        for i in range(50):
            registry.invoke("echo" if i % 5 else "other", {"text": str(i)} if i % 5 else {})
        execution_log(registry).flush()
    finally:
        registry.close()
    path = tmp_path / "calls.sqlite"
    since = time.time() - 3600
    for filters in ({"tool": "echo", "since": since}, {"tool": "echo"},
                    {"tool": "ec*", "since": since}, {"tool": "e?ho", "until": time.time()}):
        plan = _plan(path, **filters)
        assert "TEMP B-TREE" not in plan, (filters, plan)
    assert "calls_tool_seq" in _plan(path, tool="echo", since=since)
    echoes = query_log(path, tool="echo", since=since, limit=3)
    assert [e.arguments for e in echoes] == [{"text": "<str, 2 chars>"}] * 3
    assert [e.tool for e in query_log(path, tool="ec*", limit=100)] == ["echo"] * 40
    assert len(query_log(path, tool="[eo]*", limit=100)) == 50
