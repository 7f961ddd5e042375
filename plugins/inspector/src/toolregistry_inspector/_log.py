"""The execution log: a bounded ring buffer of calls fed by the kernel's call observer seam,
optionally written to SQLite by a background thread, and the query API over both.

The observer's work per call is one tuple appended to a ``deque`` (and put on a queue when a
file is configured): everything else (redaction, JSON, SQL) happens when the log is read or
on the writer thread, so a logged call stays within the issue's 5 µs budget.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import json
import math
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

from toolregistry.plugin import log as events
from toolregistry.plugin import value_shape

from ._settings import PLUGIN_NAME, InspectorSettings

if TYPE_CHECKING:
    from toolregistry import ToolCall, ToolRegistry, ToolResult

ArgumentMode = Literal["redacted", "full"]

# (seq, time, tool, call_id, arguments, outcome, duration, reason, error, approval, spool,
#  format, content): what the observer keeps per call, turned into a LogEntry when read.
_Record = tuple[int, float, str, "str | None", Any, str, float, "str | None", Any, Any, Any, str,
                Any]

_STATE_KEY = "log"
_create_lock = threading.Lock()


@frozen
class LogEntry:
    """One logged call.

    ``time``: when it started (seconds since the epoch); ``duration`` in seconds;
    ``outcome``: ``"ok"`` or the error kind (``execution``, ``timeout``, ``denied``,
    ``approval_required``, ...); ``error``: the error text the model got; ``arguments``: each
    value redacted to its type and size (``"<str, 5 chars>"``) unless the log keeps them
    ``"full"``; ``reason``: the model's ``toolcall_reason`` (think plugin); ``approval``: the
    approval asked for a pending call (``id``, ``rule``, ``reason``, ``message``); ``spool``:
    the spool handle of an output written to a file (spool plugin); ``format``: the provider
    format the call came in; ``seq``: its number in this log (in the SQLite file: the row id);
    ``result``: the content the model got back, as parts (``{"type": "text", "text": ...}``,
    ``{"type": "image", "media_type": ..., "bytes": ...}``), each value redacted to its shape
    like the arguments unless the log keeps them ``"full"`` (then texts, cut at
    ``max_field_chars``, and images as ``data:`` URLs up to ``MAX_IMAGE_CHARS``).
    """

    seq: int
    time: float
    tool: str
    call_id: str | None
    arguments: dict[str, Any]
    outcome: str
    duration: float
    reason: str | None = None
    error: str | None = None
    approval: dict[str, Any] | None = None
    spool: str | None = None
    format: str = "registry"
    result: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.outcome == "ok"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {"seq": self.seq, "time": self.time, "tool": self.tool, "call_id": self.call_id,
                "arguments": self.arguments, "outcome": self.outcome,
                "duration": self.duration, "reason": self.reason, "error": self.error,
                "approval": self.approval, "spool": self.spool, "format": self.format,
                "result": self.result}


redact = value_shape
"""An argument value as its type and size only: ``"<str, 5 chars>"``, ``"<int>"``,
``"<list, 3 items>"``, ``"<object, 2 keys>"`` (the kernel's ``value_shape``)."""


def _full(value: Any, max_chars: int) -> Any:
    """The value itself when its JSON is short, else its JSON cut to ``max_chars``."""
    text = json.dumps(value, default=repr, ensure_ascii=False)
    if len(text) <= max_chars:
        return json.loads(text)
    return f"{text[:max_chars]}… ({len(text)} chars)"


def shape_arguments(arguments: Any, mode: ArgumentMode, max_chars: int) -> dict[str, Any]:
    """The arguments as the log shows them (``mode``: ``redacted`` or ``full``)."""
    if not isinstance(arguments, Mapping):
        return {} if arguments is None else {"(arguments)": redact(arguments)}
    if mode == "full":
        return {str(k): _full(v, max_chars) for k, v in arguments.items()}
    return {str(k): redact(v) for k, v in arguments.items()}


def _approval(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    data: dict[str, Any] = value.to_dict()
    data.pop("arguments", None)  # the entry's own arguments (redacted) say what was asked
    return data


def _spool(value: Any) -> str | None:
    if isinstance(value, Mapping):
        handle = value.get("handle") or value.get("path")
        return None if handle is None else str(handle)
    return None if value is None else str(value)


def _error(value: Any, mode: ArgumentMode) -> str | None:
    """The error text of a failed call's result; in ``redacted`` mode without the argument
    values the kernel's message quotes (an ``invalid_arguments`` error names each bad value)."""
    if value is None or isinstance(value, str):
        return value
    text: str = value.text if mode == "full" else value.loggable_text
    return text


MAX_IMAGE_CHARS = 1 << 20
"""The longest ``data:`` URL of an image the log keeps (``full`` mode); larger ones keep only
their media type and size."""


def _image_part(image: Any, mode: ArgumentMode) -> dict[str, Any]:
    data = getattr(image, "data", None)
    part: dict[str, Any] = {"type": "image", "media_type": getattr(image, "media_type", None),
                            "bytes": None if data is None else len(data)}
    if mode == "full":
        url = getattr(image, "url", None)
        try:
            url = url if url is not None else image.as_url()
        except (OSError, AttributeError) as exc:
            part["error"] = f"{type(exc).__name__}: {exc}"
            return part
        if len(url) <= MAX_IMAGE_CHARS:
            part["url"] = url
    return part


def shape_result(content: Any, mode: ArgumentMode, limit: int) -> list[dict[str, Any]] | None:
    """A result's content as the log keeps it: parts, redacted to their shape unless
    ``mode`` is ``"full"`` (texts cut at ``limit``)."""
    if content is None:
        return None
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            text = str(part.get("text", ""))
            out.append({"type": "text", "text": _cut(text, limit) if mode == "full"
                        else redact(text)})
        elif kind == "image":
            out.append(_image_part(part.get("image"), mode))
        else:
            out.append({"type": str(kind), "shape": redact(part)})
    return out


def _cut(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} chars)"


def _bounded_arguments(shown: dict[str, Any], limit: int) -> dict[str, Any]:
    """The shown arguments, or their shape when their JSON is longer than ``limit`` (many
    keys): a stored field never grows without bound."""
    if len(json.dumps(shown, ensure_ascii=False, default=repr)) <= limit:
        return shown
    return {"(arguments)": f"<object, {len(shown)} keys, over {limit} chars>"}


def _bounded_approval(data: dict[str, Any] | None, limit: int) -> dict[str, Any] | None:
    if data is None:
        return None
    out = {k: _cut(v, limit // 4) if isinstance(v, str) else v for k, v in data.items()}
    if len(json.dumps(out, default=repr)) > limit:
        out = {k: out[k] for k in ("id", "rule") if k in out}
    return out


class _Filter:
    """The conditions of one query, shared by the memory buffer and the SQLite file."""

    def __init__(self, tool: str | None, outcome: str | None, since: float | None,
                 call_id: str | None, after: int | None, until: float | None = None,
                 before: int | None = None) -> None:
        if outcome is not None and not isinstance(outcome, str):
            raise TypeError(f"outcome must be a string such as 'ok' or 'error', got {outcome!r}")
        self.tool = tool
        self.outcome = outcome
        self.since = since
        self.call_id = call_id
        self.after = after
        self.until = until
        self.before = before

    def match(self, r: _Record) -> bool:
        if self.after is not None and r[0] <= self.after:
            return False
        if self.before is not None and r[0] >= self.before:
            return False
        if self.until is not None and r[1] >= self.until:
            return False
        if self.since is not None and r[1] < self.since:
            return False
        if self.call_id is not None and r[3] != self.call_id:
            return False
        if self.outcome is not None:
            if self.outcome == "error":
                if r[5] == "ok":
                    return False
            elif r[5] != self.outcome:
                return False
        return self.tool is None or fnmatch.fnmatchcase(r[2], self.tool)

    def sql(self) -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if self.after is not None:
            where.append("seq > ?")
            params.append(self.after)
        if self.since is not None:
            where.append("time >= ?")
            params.append(self.since)
        if self.before is not None:
            where.append("seq < ?")
            params.append(self.before)
        if self.until is not None:
            where.append("time < ?")
            params.append(self.until)
        if self.call_id is not None:
            where.append("call_id = ?")
            params.append(self.call_id)
        if self.outcome == "error":
            where.append("outcome != 'ok'")
        elif self.outcome is not None:
            where.append("outcome = ?")
            params.append(self.outcome)
        if self.tool is not None:
            where.append("tool GLOB ?")
            params.append(self.tool)
        return (" WHERE " + " AND ".join(where)) if where else "", params


@frozen
class _Shaper:
    """How a record becomes what the log shows and stores: arguments shaped (``redacted`` or
    ``full``), the error without the values the kernel quoted unless ``full``, every field
    bounded (``max_field_chars``), so that no row grows without bound."""

    mode: ArgumentMode
    max_value_chars: int
    max_field_chars: int

    def entry(self, record: _Record) -> LogEntry:
        seq, started, tool, call_id, arguments, outcome, duration, reason, error, approval, \
            spool, fmt, content = record
        limit = self.max_field_chars
        shown = shape_arguments(arguments, self.mode, self.max_value_chars)
        return LogEntry(seq=seq, time=started, tool=_cut(tool, limit) or "",
                        call_id=_cut(call_id, limit),
                        arguments=_bounded_arguments(shown, limit), outcome=outcome[:limit],
                        duration=duration, reason=_cut(reason, limit),
                        error=_cut(_error(error, self.mode), limit),
                        approval=_bounded_approval(_approval(approval), limit),
                        spool=_cut(_spool(spool), limit), format=fmt[:limit],
                        result=shape_result(content, self.mode, limit))


class _Observer:
    """The registry's call observer: one record per finished call, nothing else."""

    __slots__ = ("_append", "_put", "_seq")

    def __init__(self, execution_log: ExecutionLog) -> None:
        self._append = execution_log._buffer.append
        self._seq = execution_log._seq
        self._put = execution_log._writer.put if execution_log._writer is not None else None

    def call_started(self, call: ToolCall) -> float:
        return time.time()

    def call_finished(self, call: ToolCall, result: ToolResult, token: float) -> None:
        error = result.error_kind
        record = (next(self._seq), token, call.name, call.id, call.arguments,
                  error or ("error" if result.is_error else "ok"), result.duration, call.reason,
                  result if result.is_error else None, result.approval,
                  result.metadata.get("spool") if result.metadata else None, call.format,
                  result.content)
        self._append(record)
        if self._put is not None:
            self._put(record)


class ExecutionLog:
    """The calls of one registry, newest last: ``execution_log(registry)``.

    Memory holds the last ``size`` calls; with ``db`` they are also written to an SQLite file
    (by a background thread; ``flush()`` waits for it), where ``query_log(db)`` and
    ``toolregistry log`` read them from any process.
    """

    def __init__(self, size: int = 10_000, *, db: str | Path | None = None,
                 arguments: ArgumentMode = "redacted", max_value_chars: int = 2000,
                 retention_seconds: float = 7 * 86_400.0, max_rows: int = 1_000_000,
                 registry_name: str = "registry", max_field_chars: int = 8000) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"the execution log's size must be a positive integer, got {size!r}")
        if arguments not in ("redacted", "full"):
            raise ValueError(f"arguments must be 'redacted' or 'full', got {arguments!r}")
        if not isinstance(max_field_chars, int) or max_field_chars < 64:
            raise ValueError("max_field_chars must be an integer of at least 64, got "
                             f"{max_field_chars!r}")
        self.size = size
        self.arguments: ArgumentMode = arguments
        self.max_value_chars = max_value_chars
        self.max_field_chars = max_field_chars
        self._buffer: deque[_Record] = deque(maxlen=size)
        self._seq = itertools.count(1)
        self._shaper = _Shaper(arguments, max_value_chars, max_field_chars)
        self._writer = (_Writer(Path(db), self._shaper, retention_seconds, max_rows,
                                registry_name) if db is not None else None)
        self.observer = _Observer(self)

    @property
    def db(self) -> Path | None:
        """The SQLite file the log is written to, if any."""
        return self._writer.path if self._writer is not None else None

    def __len__(self) -> int:
        return len(self._buffer)

    def entry(self, record: _Record) -> LogEntry:
        """A record as the log shows and stores it (see :class:`_Shaper`)."""
        return self._shaper.entry(record)

    def entries(self, *, tool: str | None = None, outcome: str | None = None,
                since: float | None = None, call_id: str | None = None,
                after: int | None = None, limit: int | None = None,
                until: float | None = None, before: int | None = None) -> list[LogEntry]:
        """The logged calls that match, oldest first (the last ``limit`` of them).

        ``tool``: a name or glob (``"srv-*"``); ``outcome``: ``"ok"``, an error kind, or
        ``"error"`` for every call that did not succeed; ``since`` / ``until``: calls that
        started at or after / before these times (epoch seconds); ``after`` / ``before``:
        only entries with a larger / smaller ``seq`` (to follow the log, to page back).
        """
        where = _Filter(tool, outcome, since, call_id, after, until, before)
        matched = [r for r in self._buffer.copy() if where.match(r)]
        if limit is not None:
            matched = matched[-limit:] if limit > 0 else []
        return [self.entry(r) for r in matched]

    def last(self) -> LogEntry | None:
        """The newest entry (``None`` when empty)."""
        try:
            return self.entry(self._buffer[-1])
        except IndexError:
            return None

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, errors, and the median and largest duration (seconds)."""
        by_tool: dict[str, list[_Record]] = {}
        for r in self._buffer.copy():
            by_tool.setdefault(r[2], []).append(r)
        out = {}
        for name, records in sorted(by_tool.items()):
            durations = sorted(r[6] for r in records)
            out[name] = {"calls": len(records),
                         "errors": sum(r[5] != "ok" for r in records),
                         "median": durations[len(durations) // 2], "max": durations[-1]}
        return out

    def clear(self) -> None:
        """Forget the calls in memory (the SQLite file keeps its rows)."""
        self._buffer.clear()

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every call logged so far is in the SQLite file (no-op without one)."""
        if self._writer is not None:
            self._writer.flush(timeout)

    def close(self) -> None:
        """Write what is queued and stop the writer thread (the registry's ``close()`` does)."""
        if self._writer is not None:
            self._writer.stop()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    registry TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT,
    arguments TEXT NOT NULL,
    outcome TEXT NOT NULL,
    duration REAL NOT NULL,
    reason TEXT,
    error TEXT,
    approval TEXT,
    spool TEXT,
    format TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_time ON calls (time);
CREATE INDEX IF NOT EXISTS calls_tool ON calls (tool);
"""
_COLUMNS = ("seq", "time", "registry", "tool", "call_id", "arguments", "outcome", "duration",
            "reason", "error", "approval", "spool", "format")


def _add_result_column(conn: sqlite3.Connection) -> None:
    """Give a file made before results were logged its ``result`` column."""
    if not _has_result(conn):
        conn.execute("ALTER TABLE calls ADD COLUMN result TEXT")


def _has_result(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "result" for row in conn.execute("PRAGMA table_info(calls)"))


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def _private_file(path: Path) -> None:
    """Create ``path`` (and its folder) readable by this user only -- the log names the
    tools, the callers and what failed -- or make an existing one so. SQLite gives the
    ``-wal`` and ``-shm`` files the database file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # exactly 0600 whatever the umask, or a file made before
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                path.with_name(path.name + suffix).chmod(0o600)
    except PermissionError as exc:  # another user's file, shared on purpose: used as it is
        events.warning("inspector.log_not_private", path=str(path), error=str(exc))
    finally:
        os.close(fd)


_WAL_LIMIT = 1 << 20  # bytes the -wal file keeps after a checkpoint


class _Writer:
    """Batches records from the observer into the SQLite file on a thread of its own, and
    applies the retention (age, then row count) every few seconds, giving the space of the
    rows it deletes back to the file system."""

    def __init__(self, path: Path, shaper: _Shaper, retention_seconds: float,
                 max_rows: int, registry_name: str) -> None:
        self.path = path.expanduser().resolve()
        try:
            _private_file(self.path)
            conn = _connect(self.path)
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
                # Incremental: deleted rows' pages can be handed back after retention. A file
                # made before needs one VACUUM for the mode to take effect.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    conn.execute("VACUUM")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT}")
            conn.executescript(_SCHEMA)
            _add_result_column(conn)
        except (OSError, sqlite3.Error) as exc:
            raise ValueError(f"the execution log file {self.path} cannot be used: {exc}") from exc
        self._conn = conn
        self._shaper = shaper
        self._queue: SimpleQueue[Any] = SimpleQueue()
        self.put = self._queue.put
        self.retention = retention_seconds
        self.max_rows = max_rows
        self.registry_name = registry_name
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="toolregistry-inspector-log",
                                        daemon=True)
        self._thread.start()

    def _rows(self, records: list[_Record]) -> Iterator[tuple[Any, ...]]:
        for r in records:
            e = self._shaper.entry(r)
            yield (e.time, self.registry_name, e.tool, e.call_id,
                   json.dumps(e.arguments, ensure_ascii=False), e.outcome, e.duration,
                   e.reason, e.error,
                   None if e.approval is None else json.dumps(e.approval, default=repr),
                   e.spool, e.format,
                   None if e.result is None else json.dumps(e.result, ensure_ascii=False))

    def _write(self, records: list[_Record]) -> None:
        sql = ("INSERT INTO calls (time, registry, tool, call_id, arguments, outcome, duration,"
               " reason, error, approval, spool, format, result)"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")
        try:
            with self._conn:
                self._conn.execute("BEGIN")
                self._conn.executemany(sql, self._rows(records))
        except sqlite3.Error as exc:
            events.warning("inspector.log_write_failed", path=str(self.path), calls=len(records),
                           error=f"{type(exc).__name__}: {exc}")

    def _retain(self) -> None:
        try:
            conn = self._conn
            deleted = conn.execute("DELETE FROM calls WHERE time < ?",
                                   (time.time() - self.retention,)).rowcount
            deleted += conn.execute(
                "DELETE FROM calls WHERE seq <= (SELECT MAX(seq) FROM calls) - ?",
                (self.max_rows,)).rowcount
            if deleted > 0:
                # The free pages go back to the file system (run as a script: a statement
                # executed once frees one page), and the -wal file shrinks.
                conn.executescript("PRAGMA incremental_vacuum;")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as exc:
            events.warning("inspector.log_retention_failed", path=str(self.path),
                           error=f"{type(exc).__name__}: {exc}")

    def _run(self) -> None:
        last_retention = 0.0
        while True:
            item = self._queue.get()
            batch: list[_Record] = []
            waiters: list[threading.Event] = []
            stop = False
            while True:
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                else:
                    batch.append(item)
                if len(batch) >= 2000:
                    break
                try:
                    item = self._queue.get_nowait()
                except Empty:
                    break
            if batch:
                self._write(batch)
            now = time.monotonic()
            if now - last_retention > 5.0 or stop:
                self._retain()
                last_retention = now
            for waiter in waiters:
                waiter.set()
            if stop:
                self._conn.close()
                return

    def flush(self, timeout: float) -> None:
        if self._stopped:
            return
        done = threading.Event()
        self.put(done)
        if not done.wait(timeout):
            raise TimeoutError(f"the execution log was not written to {self.path} "
                               f"within {timeout} s")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._queue.put(None)
        self._thread.join(30.0)


def query_log(db: str | Path, *, tool: str | None = None, outcome: str | None = None,
              since: float | None = None, call_id: str | None = None,
              after: int | None = None, limit: int | None = None,
              registry: str | None = None, until: float | None = None,
              before: int | None = None) -> list[LogEntry]:
    """The calls recorded in an SQLite log file (``log-db``), oldest first (the last
    ``limit``); same filters as :meth:`ExecutionLog.entries`, plus the ``registry`` name."""
    path = Path(db).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no execution log file at {path}: a registry writes one when "
                                "[tool.toolregistry.plugins.inspector] log-db names it")
    where, params = _Filter(tool, outcome, since, call_id, after, until, before).sql()
    if registry is not None:
        where += (" AND" if where else " WHERE") + " registry = ?"
        params.append(registry)
    order = " ORDER BY seq DESC"
    if limit is not None:
        order += " LIMIT ?"
        params.append(max(limit, 0))
    return _select(path, where + order, params)


def _select(path: Path, tail: str, params: list[Any]) -> list[LogEntry]:
    """The entries of ``SELECT ... FROM calls{tail}``, oldest first."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
    try:
        columns = ", ".join(_COLUMNS) + (", result" if _has_result(conn) else "")
        rows = conn.execute(f"SELECT {columns} FROM calls{tail}", params).fetchall()
    except sqlite3.Error as exc:
        raise ValueError(f"{path} is not an execution log file: {exc}") from exc
    finally:
        conn.close()
    return [_row_entry(row) for row in reversed(rows)]


def read_log(log: ExecutionLog, **filters: Any) -> list[LogEntry]:
    """The calls a UI shows: from the log's file when it has one (so every process that
    writes to the shared ``log-db`` is seen, this one included), else from memory. Same
    filters as :meth:`ExecutionLog.entries`."""
    if log.db is None:
        return log.entries(**filters)
    return query_log(log.db, **filters)


def durations(log: ExecutionLog, *, since: float | None = None, until: float | None = None,
              limit: int = 100_000) -> list[tuple[str, float, bool]]:
    """``(tool, duration, ok)`` of the last ``limit`` calls in what :func:`read_log` reads
    (only what per-tool statistics need: no field is decoded)."""
    where = _Filter(None, None, since, None, None, until)
    if log.db is None:
        return [(r[2], r[6], r[5] == "ok") for r in log._buffer.copy() if where.match(r)][-limit:]
    sql, params = where.sql()
    conn = sqlite3.connect(f"file:{log.db}?mode=ro", uri=True, timeout=10.0)
    try:
        rows = conn.execute(f"SELECT tool, duration, outcome = 'ok' FROM calls{sql} "
                            "ORDER BY seq DESC LIMIT ?", [*params, limit]).fetchall()
    except sqlite3.Error as exc:
        raise ValueError(f"{log.db} is not an execution log file: {exc}") from exc
    finally:
        conn.close()
    return [(tool, duration, bool(ok)) for tool, duration, ok in rows]


def get_entry(log: ExecutionLog, seq: int) -> LogEntry | None:
    """The call numbered ``seq`` in what :func:`read_log` reads (``None`` when it is not
    there, or no longer)."""
    if log.db is None:
        found = [r for r in log._buffer.copy() if r[0] == seq]
        return log.entry(found[0]) if found else None
    rows = _select(log.db, " WHERE seq = ?", [seq])
    return rows[0] if rows else None


def _row_entry(row: Sequence[Any]) -> LogEntry:
    seq, started, _registry, tool, call_id, arguments, outcome, duration, reason, error, \
        approval, spool, fmt = row[:13]
    result = row[13] if len(row) > 13 else None
    return LogEntry(seq=seq, time=started, tool=tool, call_id=call_id,
                    arguments=json.loads(arguments), outcome=outcome, duration=duration,
                    reason=reason, error=error,
                    approval=None if approval is None else json.loads(approval), spool=spool,
                    format=fmt, result=None if result is None else json.loads(result))


def get_log(registry: ToolRegistry) -> ExecutionLog | None:
    """The registry's execution log, made on first use from its configuration (``None`` when
    ``log = false``)."""
    state = registry.plugin_state(PLUGIN_NAME)
    if _STATE_KEY in state:
        found: ExecutionLog | None = state[_STATE_KEY]
        return found
    with _create_lock:
        if _STATE_KEY not in state:
            settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
            made = None
            if settings.log:
                db = None
                if settings.log_db is not None:
                    db = Path(settings.log_db)
                made = ExecutionLog(settings.log_size, db=db,
                                    arguments=settings.arguments,
                                    max_value_chars=settings.max_value_chars,
                                    max_field_chars=settings.max_field_chars,
                                    retention_seconds=settings.log_retention_seconds,
                                    max_rows=settings.log_max_rows,
                                    registry_name=registry.name)
                registry.add_closer(made.close)
            state[_STATE_KEY] = made
    result: ExecutionLog | None = state[_STATE_KEY]
    return result


def format_entry(entry: LogEntry) -> str:
    """One line for a terminal: time, outcome, duration, tool, call id, arguments, and the
    reason or error."""
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.time))
    millis = int(math.modf(entry.time)[0] * 1000)
    args = json.dumps(entry.arguments, ensure_ascii=False)
    line = (f"{stamp}.{millis:03d} {entry.outcome:<17} {entry.duration * 1000:9.1f} ms "
            f"{entry.tool} [{entry.call_id or '-'}] {args}")
    if entry.reason:
        line += f"  reason: {entry.reason}"
    if entry.error and not entry.ok:
        line += "  error: " + entry.error.splitlines()[0][:200]
    if entry.approval and entry.approval.get("id"):
        line += f"  approval: {entry.approval['id']}"
    if entry.spool:
        line += f"  spool: {entry.spool}"
    return line

