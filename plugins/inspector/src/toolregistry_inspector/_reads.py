"""Reading the execution log back: ``query_log`` over a log file or store from any process,
and what the web UI reads (``read_log``, ``get_entry``, ``durations``) from the log's file or
store when it has one, else from memory."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._filter import _Filter
from ._log import ExecutionLog, LogEntry
from ._sinks import LATER_COLUMNS, STORE_TABLE, ServerSink, file_columns, in_store

if TYPE_CHECKING:
    from toolregistry.plugin import Store, StoreURL


_COLUMNS = ("seq", "time", "registry", "tool", "call_id", "arguments", "outcome", "duration",
            "reason", "error", "approval", "spool", "format", *LATER_COLUMNS)


def _target(db: str | Path | StoreURL) -> Path | StoreURL:
    """Where a log is read: its SQLite file, or the PostgreSQL store of a store URL."""
    from toolregistry.plugin import StoreURL

    if isinstance(db, str) and "://" in db:
        from toolregistry.errors import ConfigError
        from toolregistry.plugin import parse_store_url

        try:
            db = parse_store_url(db)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if isinstance(db, StoreURL) and db.kind != "sqlite":
        return db
    return (db.path if isinstance(db, StoreURL) else Path(db)).expanduser()


def _fetch(target: Path | StoreURL, columns: Sequence[str], tail: str, params: list[Any], *,
           store: Store | None = None) -> list[Sequence[Any]]:
    """The rows of ``SELECT columns FROM <the log's table>{tail}`` (a column a file made by
    an older version lacks reads as ``NULL``); ``store``: the log's open store."""
    if not isinstance(target, Path):
        return in_store(target, store, f"SELECT {', '.join(columns)} FROM {STORE_TABLE}{tail}",
                        params)
    if not target.is_file():
        raise FileNotFoundError(f"no execution log file at {target}: a registry writes one "
                                "when [tool.toolregistry.plugins.inspector] log-db names it")
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, timeout=10.0)
    try:
        have = file_columns(conn)
        shown = ", ".join(f"NULL AS {c}" if c in LATER_COLUMNS and c not in have else c
                          for c in columns)
        rows: list[Sequence[Any]] = conn.execute(f"SELECT {shown} FROM calls{tail}",
                                                 params).fetchall()
    except sqlite3.Error as exc:
        raise ValueError(f"{target} is not an execution log file: {exc}") from exc
    finally:
        conn.close()
    return rows


def _kind(target: Path | StoreURL) -> str:
    return "sqlite" if isinstance(target, Path) else target.kind


def query_log(db: str | Path | StoreURL, *, tool: str | None = None,
              outcome: str | None = None, since: float | None = None,
              call_id: str | None = None, after: int | None = None, limit: int | None = None,
              registry: str | None = None, until: float | None = None,
              before: int | None = None, batch: str | None = None) -> list[LogEntry]:
    """The calls recorded in a log file (``log-db``) or store (a ``sqlite:///`` or
    ``postgresql://`` URL, or a :class:`~toolregistry.plugin.StoreURL`), oldest first (the
    last ``limit``); same filters as :meth:`ExecutionLog.entries`, plus the ``registry``
    name."""
    return _query(_target(db), None, limit=limit, registry=registry, tool=tool,
                  outcome=outcome, since=since, call_id=call_id, after=after, until=until,
                  before=before, batch=batch)


def query_running(db: str | Path | StoreURL) -> list[dict[str, Any]]:
    """The calls in flight that the processes writing to a log file or store recorded (the
    calls that ran a moment), oldest first: per call its ``tool``, ``call_id``, ``batch``,
    ``registry``, ``started`` / ``elapsed`` seconds, the last reported ``progress`` /
    ``total`` / ``fraction`` / ``message``, and the ``pid`` and ``host`` running it. Calls of
    a process that died are left out."""
    from ._live import read_running

    return read_running(_target(db), None)


def _query(target: Path | StoreURL, store: Store | None, *, limit: int | None = None,
           registry: str | None = None, oldest: bool = False,
           **filters: Any) -> list[LogEntry]:
    """:func:`query_log` of a read target (``store``: the log's own, when open)."""
    tail, params = select_tail(_kind(target), limit=limit, registry=registry, oldest=oldest,
                               **filters)
    rows = _fetch(target, _COLUMNS, tail, params, store=store)
    return [_row_entry(row) for row in (rows if oldest else reversed(rows))]


def select_tail(kind: str, *, limit: int | None = None, registry: str | None = None,
                oldest: bool = False, **filters: Any) -> tuple[str, list[Any]]:
    """The ``WHERE ... ORDER BY ... LIMIT`` of a query of the log (``kind``: ``sqlite`` or
    ``postgresql``): the newest ``limit`` calls, or with ``oldest`` the first (what follows
    ``after``), and its parameters."""
    where, params = _Filter(**filters).sql(kind)
    if registry is not None:
        where += (" AND" if where else " WHERE") + " registry = ?"
        params.append(registry)
    tail = where + (" ORDER BY seq" if oldest else " ORDER BY seq DESC")
    if limit is not None:
        tail += " LIMIT ?"
        params.append(max(limit, 0))
    return tail, params


def _log_store(log: ExecutionLog) -> Store | None:
    """The open store the log writes to, which its readers share (``None`` for a file)."""
    writer = log._writer
    if writer is None or writer._stopped or not isinstance(writer.sink, ServerSink):
        return None
    return writer.sink.store


def read_log(log: ExecutionLog, **filters: Any) -> list[LogEntry]:
    """The calls a UI shows: from the log's file or store when it has one (so every process
    that writes to the shared ``log-db`` is seen, this one included), else from memory. Same
    filters as :meth:`ExecutionLog.entries`."""
    if log.store is None:
        return log.entries(**filters)
    return _query(_target(log.store), _log_store(log), **filters)


def durations(log: ExecutionLog, *, since: float | None = None, until: float | None = None,
              limit: int = 100_000) -> list[tuple[str, float, bool]]:
    """``(tool, duration, ok)`` of the last ``limit`` calls in what :func:`read_log` reads
    (only what per-tool statistics need: no field is decoded)."""
    where = _Filter(None, None, since, None, None, until)
    if log.store is None:
        return [(r[2], r[6], r[5] == "ok") for r in log._buffer.copy() if where.match(r)][-limit:]
    target = _target(log.store)
    sql, params = where.sql(_kind(target))
    rows = _fetch(target, ("tool", "duration", "outcome = 'ok'"), f"{sql} ORDER BY seq DESC LIMIT ?",
                  [*params, limit], store=_log_store(log))
    return [(tool, duration, bool(ok)) for tool, duration, ok in rows]


def get_entry(log: ExecutionLog, seq: int) -> LogEntry | None:
    """The call numbered ``seq`` in what :func:`read_log` reads (``None`` when it is not
    there, or no longer)."""
    if log.store is None:
        found = [r for r in log._buffer.copy() if r[0] == seq]
        return log.entry(found[0]) if found else None
    rows = _fetch(_target(log.store), _COLUMNS, " WHERE seq = ?", [seq],
                  store=_log_store(log))
    return _row_entry(rows[0]) if rows else None


def _row_entry(row: Sequence[Any]) -> LogEntry:
    seq, started, _registry, tool, call_id, arguments, outcome, duration, reason, error, \
        approval, spool, fmt, result, batch, trace_id, span_id = row
    return LogEntry(seq=seq, time=started, tool=tool, call_id=call_id,
                    arguments=json.loads(arguments), outcome=outcome, duration=duration,
                    reason=reason, error=error,
                    approval=None if approval is None else json.loads(approval), spool=spool,
                    format=fmt, result=None if result is None else json.loads(result),
                    batch=batch, trace_id=trace_id, span_id=span_id)
