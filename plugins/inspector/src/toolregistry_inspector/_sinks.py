"""Where the execution log is written besides memory: its private SQLite file (retention gives
deleted rows' space back to the file system), or a PostgreSQL store every worker and host
writes to. One sink a log; the writer thread (``_log``) calls it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import log as events
from toolregistry.plugin import sqlite_write_ahead

from . import _live

if TYPE_CHECKING:
    from toolregistry.plugin import Store, StoreURL

__all__ = ["LATER_COLUMNS", "STORE_TABLE", "FileSink", "ServerSink", "file_columns",
           "in_store", "open_log_store", "sink"]


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
""" + _live.ddl(_live.FILE_TABLE, "REAL", "INTEGER") + ";\n" + \
    _live.cancel_ddl(_live.CANCEL_FILE_TABLE, "REAL", "INTEGER") + ";\n"


LATER_COLUMNS = ("result", "batch", "trace_id", "span_id")
"""Columns added after the first version of the file: a file made before has them once a
writer opened it."""


def file_columns(conn: sqlite3.Connection) -> set[str]:
    """The columns a log file's ``calls`` table has."""
    return {row[1] for row in conn.execute("PRAGMA table_info(calls)")}


def _upgrade(conn: sqlite3.Connection) -> None:
    """Give the file (new, or made by an older version) its later columns and indexes, under
    the write lock: writers of several processes may open the same file at once."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        have = file_columns(conn)
        for column in LATER_COLUMNS:
            if column not in have:
                conn.execute(f"ALTER TABLE calls ADD COLUMN {column} TEXT")
        conn.execute("DROP INDEX IF EXISTS calls_tool")
        conn.execute("CREATE INDEX IF NOT EXISTS calls_tool_seq ON calls (tool, seq)")
        conn.execute("CREATE INDEX IF NOT EXISTS calls_batch ON calls (batch) "
                     "WHERE batch IS NOT NULL")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


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


class FileSink:
    """The log's SQLite file: private to this user, retention giving deleted rows' space back
    to the file system."""

    def __init__(self, path: Path) -> None:
        from toolregistry.plugin import StoreURL

        self.path = path.expanduser().resolve()
        self.url = StoreURL("sqlite:///" + str(self.path))
        try:
            _private_file(self.path)
            conn = _connect(self.path)
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
                # Incremental: deleted rows' pages can be handed back after retention. A file
                # made before needs one VACUUM for the mode to take effect.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    conn.execute("VACUUM")
            sqlite_write_ahead(conn)
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT}")
            conn.executescript(_SCHEMA)
            _upgrade(conn)
        except (OSError, sqlite3.Error) as exc:
            raise ValueError(f"the execution log file {self.path} cannot be used: {exc}") from exc
        self._conn = conn

    def write(self, rows: Iterator[tuple[Any, ...]]) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(_INSERT.format(table="calls"), rows)

    def run(self, steps: list[tuple[str, Sequence[Any]]]) -> None:
        """Run statements in one transaction."""
        with self._conn:
            self._conn.execute("BEGIN")
            for sql, params in steps:
                self._conn.execute(sql, params)

    def take(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        """Run one statement that returns rows (``DELETE ... RETURNING``) in a transaction."""
        with self._conn:
            self._conn.execute("BEGIN")
            return self._conn.execute(sql, params).fetchall()

    def retain(self, oldest: float, max_rows: int) -> None:
        conn = self._conn
        deleted = conn.execute("DELETE FROM calls WHERE time < ?", (oldest,)).rowcount
        deleted += conn.execute(
            "DELETE FROM calls WHERE seq <= (SELECT MAX(seq) FROM calls) - ?",
            (max_rows,)).rowcount
        if deleted > 0:
            # The free pages go back to the file system (run as a script: a statement
            # executed once frees one page), and the -wal file shrinks.
            conn.executescript("PRAGMA incremental_vacuum;")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def close(self) -> None:
        self._conn.close()


STORE_TABLE = "inspector_calls"
# Version 2 adds each call's result, 3 its batch and trace ids and the (tool, seq) index;
# 4 the calls in flight, 5 the requests to cancel them; every statement is safe to run again, so an older store is upgraded
# by running them all.
_STORE_SCHEMA = ("inspector-log", 5, (
    f"CREATE TABLE IF NOT EXISTS {STORE_TABLE} (seq BIGSERIAL PRIMARY KEY, "
    "time DOUBLE PRECISION NOT NULL, registry TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, "
    "arguments TEXT NOT NULL, outcome TEXT NOT NULL, duration DOUBLE PRECISION NOT NULL, "
    "reason TEXT, error TEXT, approval TEXT, spool TEXT, format TEXT NOT NULL, result TEXT)",
    f"ALTER TABLE {STORE_TABLE} ADD COLUMN IF NOT EXISTS result TEXT",
    f"CREATE INDEX IF NOT EXISTS {STORE_TABLE}_time ON {STORE_TABLE} (time)",
    f"ALTER TABLE {STORE_TABLE} ADD COLUMN IF NOT EXISTS batch TEXT",
    f"ALTER TABLE {STORE_TABLE} ADD COLUMN IF NOT EXISTS trace_id TEXT",
    f"ALTER TABLE {STORE_TABLE} ADD COLUMN IF NOT EXISTS span_id TEXT",
    f"DROP INDEX IF EXISTS {STORE_TABLE}_tool",
    f"CREATE INDEX IF NOT EXISTS {STORE_TABLE}_tool_seq ON {STORE_TABLE} (tool, seq)",
    f"CREATE INDEX IF NOT EXISTS {STORE_TABLE}_batch ON {STORE_TABLE} (batch) "
    "WHERE batch IS NOT NULL",
    _live.ddl(_live.STORE_TABLE, "DOUBLE PRECISION", "BIGINT"),
    _live.cancel_ddl(_live.CANCEL_STORE_TABLE, "DOUBLE PRECISION", "BIGINT"),
))


def open_log_store(url: StoreURL) -> Store:
    from toolregistry.plugin import open_store

    store = open_store(url)
    try:
        component, version, ddl = _STORE_SCHEMA
        store.ensure_schema(component, version, ddl)
    except BaseException:
        store.close()
        raise
    return store


def in_store(url: StoreURL, store: Store | None, sql: str,
             params: Sequence[Any]) -> list[Sequence[Any]]:
    """Run one statement on a log's store and return its rows (``store``: the log's own,
    when open; else one is opened for it)."""
    opened = store if store is not None else open_log_store(url)
    try:
        with opened.transaction() as tx:
            return list(tx.execute(sql, params))
    finally:
        if store is None:
            opened.close()


class ServerSink:
    """The log's table in a PostgreSQL store that every worker and host writes to."""

    def __init__(self, url: StoreURL) -> None:
        self.url = url
        self.path = None
        self.store = open_log_store(url)

    def write(self, rows: Iterator[tuple[Any, ...]]) -> None:
        sql = _INSERT.format(table=STORE_TABLE)
        with self.store.transaction() as tx:
            for row in rows:
                tx.execute(sql, row)

    def run(self, steps: list[tuple[str, Sequence[Any]]]) -> None:
        """Run statements in one transaction."""
        with self.store.transaction() as tx:
            for sql, params in steps:
                tx.execute(sql, params)

    def take(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        """Run one statement that returns rows (``DELETE ... RETURNING``) in a transaction."""
        with self.store.transaction() as tx:
            return list(tx.execute(sql, params))

    def retain(self, oldest: float, max_rows: int) -> None:
        with self.store.transaction(lock=STORE_TABLE) as tx:
            tx.execute(f"DELETE FROM {STORE_TABLE} WHERE time < ?", (oldest,))
            tx.execute(f"DELETE FROM {STORE_TABLE} WHERE seq <= "
                       f"(SELECT MAX(seq) FROM {STORE_TABLE}) - ?", (max_rows,))

    def close(self) -> None:
        self.store.close()


_INSERT = ("INSERT INTO {table} (time, registry, tool, call_id, arguments, outcome, duration,"
           " reason, error, approval, spool, format, result, batch, trace_id, span_id)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


def sink(db: str | Path | StoreURL) -> FileSink | ServerSink:
    from toolregistry.plugin import StoreURL

    if isinstance(db, StoreURL):
        return FileSink(db.path) if db.kind == "sqlite" else ServerSink(db)
    return FileSink(Path(db))
