"""Calls in flight seen from other processes: the log's writer thread (``_log``) keeps a row
per call that runs a while in the shared log's ``running`` table (its tool, ids, start time,
process and last progress, with a heartbeat), and removes it when the call ends; an inspector
of any process reads them (:func:`read_running`). Rows of a process that died go stale: the
pid is gone on this host, or no heartbeat came for :data:`STALE_SECONDS`. An inspector asks
for one of these calls to be cancelled with a row in the ``running_cancel`` table
(:func:`request_cancel`); the writer of the process running it takes the request at its next
turn and cancels the call through the kernel (``ToolRegistry.cancel_call``)."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolregistry.plugin import Store, StoreURL

    from ._running import Running
    from ._sinks import FileSink, ServerSink

__all__ = ["CANCEL_FILE_TABLE", "CANCEL_STORE_TABLE", "FILE_TABLE", "STALE_SECONDS",
           "STORE_TABLE", "LiveRows", "read_running", "request_cancel"]

FILE_TABLE = "running"
STORE_TABLE = "inspector_running"
CANCEL_FILE_TABLE = "running_cancel"
CANCEL_STORE_TABLE = "inspector_running_cancel"

MIN_AGE = 0.2
"""Seconds a call runs before it gets a row: a short call never touches the shared log."""
BEAT_SECONDS = 2.0
"""How often a process refreshes the heartbeat of its rows."""
STALE_SECONDS = 15.0
"""A row without a heartbeat for this long belongs to a process that is gone."""


def ddl(table: str, real: str, integer: str) -> str:
    """The ``running`` table (``real`` / ``integer``: the database's column types)."""
    return (f"CREATE TABLE IF NOT EXISTS {table} (owner TEXT NOT NULL, key {integer} NOT NULL,"
            f" registry TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, batch TEXT,"
            f" started {real} NOT NULL, pid {integer} NOT NULL, host TEXT NOT NULL,"
            f" progress {real}, total {real}, message TEXT, beat {real} NOT NULL,"
            f" PRIMARY KEY (owner, key))")


def cancel_ddl(table: str, real: str, integer: str) -> str:
    """The cancel requests for calls in flight: an inspector adds one for a row of the
    ``running`` table, the writer of the process that owns the row takes it."""
    return (f"CREATE TABLE IF NOT EXISTS {table} (owner TEXT NOT NULL, key {integer} NOT NULL,"
            f" reason TEXT NOT NULL, requested {real} NOT NULL, PRIMARY KEY (owner, key))")


_COLUMNS = ("owner", "key", "registry", "tool", "call_id", "batch", "started", "pid", "host",
            "progress", "total", "message", "beat")


class LiveRows:
    """The rows of one log's calls in flight, kept by its writer thread (:meth:`sync` after
    each turn: at least twice a second). Progress reaches the table at that pace at most."""

    def __init__(self, sink: FileSink | ServerSink, registry_name: str) -> None:
        self.sink = sink
        self.table = FILE_TABLE if sink.path is not None else STORE_TABLE
        self.cancels = CANCEL_FILE_TABLE if sink.path is not None else CANCEL_STORE_TABLE
        self.cancel: Callable[[str, str], bool] | None = None
        """Cancels a call of this process by its id (``ToolRegistry.cancel_call``), for the
        requests other processes' inspectors leave for its rows."""
        self.registry_name = registry_name
        self.owner = uuid.uuid4().hex
        """This log's rows (a process may hold several logs)."""
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.calls: dict[int, Running] = {}
        """The calls in flight, by key: the log's observer adds each call (a dict store, on
        the calling thread), this writer thread drops the ended ones."""
        self._written: dict[int, tuple[Any, ...]] = {}
        self._beat = 0.0

    def sync(self, now: float) -> None:
        """Bring the table up to date with the calls in flight, after cancelling those an
        inspector asked to cancel."""
        if self._written and self.cancel is not None:
            self._take_cancels()
        steps: list[tuple[str, Sequence[Any]]] = []
        t, owner = self.table, self.owner
        for key, running in list(self.calls.items()):
            shown = (running.progress, running.total, running.message)
            if running.ended:
                del self.calls[key]
                if self._written.pop(key, None) is not None:
                    steps.append((f"DELETE FROM {t} WHERE owner = ? AND key = ?", (owner, key)))
            elif key not in self._written:
                if now - running.started >= MIN_AGE:
                    self._written[key] = shown
                    steps.append((f"INSERT INTO {t} ({', '.join(_COLUMNS)}) VALUES "
                                  f"({', '.join('?' * len(_COLUMNS))})",
                                  (owner, key, self.registry_name, running.tool,
                                   running.call_id, running.batch, running.started, self.pid,
                                   self.host, *shown, now)))
            elif self._written[key] != shown:
                self._written[key] = shown
                steps.append((f"UPDATE {t} SET progress = ?, total = ?, message = ? "
                               "WHERE owner = ? AND key = ?", (*shown, owner, key)))
        if self._written and now - self._beat >= BEAT_SECONDS:
            self._beat = now
            steps.append((f"UPDATE {t} SET beat = ? WHERE owner = ?", (now, owner)))
        if steps:
            self.sink.run(steps)

    def _take_cancels(self) -> None:
        """Cancel the calls of this log that an inspector asked to cancel (its requests are
        taken, whether the call still runs or not)."""
        assert self.cancel is not None
        taken = self.sink.take(f"DELETE FROM {self.cancels} WHERE owner = ? "
                               "RETURNING key, reason", (self.owner,))
        for key, reason in taken:
            running = self.calls.get(key)
            if running is not None and not running.ended and running.call_id:
                self.cancel(running.call_id, reason)

    def expire(self, now: float) -> None:
        """Remove the rows of processes that stopped beating (any process's), and the cancel
        requests nobody took."""
        old = now - 4 * STALE_SECONDS
        self.sink.run([(f"DELETE FROM {self.table} WHERE beat < ?", (old,)),
                       (f"DELETE FROM {self.cancels} WHERE requested < ?", (old,))])

    def clear(self) -> None:
        """Remove this log's rows (when it closes)."""
        if self._written:
            self.sink.run([(f"DELETE FROM {self.table} WHERE owner = ?", (self.owner,)),
                           (f"DELETE FROM {self.cancels} WHERE owner = ?", (self.owner,))])
            self._written.clear()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def read_running(target: Path | StoreURL, store: Store | None, *,
                 skip_owner: str | None = None) -> list[dict[str, Any]]:
    """The calls in flight that processes writing to a log file or store recorded, oldest
    first, as :meth:`~toolregistry_inspector._running.Running.to_dict` shows them plus their
    ``pid`` and ``host`` (rows of dead processes left out; ``skip_owner``: a log whose calls
    are shown otherwise)."""
    if isinstance(target, Path) and not target.is_file():
        return []
    table = FILE_TABLE if isinstance(target, Path) else STORE_TABLE
    try:
        rows = _execute(target, store, f"SELECT {', '.join(_COLUMNS)} FROM {table} "
                                       "ORDER BY started", (), read_only=True)
    except sqlite3.OperationalError:  # a file an older version made: no such table
        rows = []
    now, host = time.time(), socket.gethostname()
    out = []
    for owner, key, registry, tool, call_id, batch, started, pid, on, progress, total, \
            message, beat in rows:
        if owner == skip_owner or beat < now - STALE_SECONDS or (on == host
                                                                 and not _alive(pid)):
            continue
        fraction = None
        if progress is not None and total:
            fraction = min(max(progress / total, 0.0), 1.0)
        out.append({"key": f"{owner[:12]}-{key}", "tool": tool, "call_id": call_id,
                    "batch": batch, "started": started, "elapsed": max(now - started, 0.0),
                    "progress": progress, "total": total, "fraction": fraction,
                    "message": message, "pid": pid, "host": on, "registry": registry,
                    "owner": owner, "row": key})
    return out


def request_cancel(target: Path | StoreURL, store: Store | None, call: dict[str, Any],
                   reason: str) -> None:
    """Ask the process running ``call`` (a row :func:`read_running` returned) to cancel it:
    its log's writer takes the request at its next turn (about twice a second)."""
    table = CANCEL_FILE_TABLE if isinstance(target, Path) else CANCEL_STORE_TABLE
    _execute(target, store, f"INSERT INTO {table} (owner, key, reason, requested) VALUES "
                            "(?, ?, ?, ?) ON CONFLICT (owner, key) DO NOTHING",
             (call["owner"], call["row"], reason, time.time()))


def _execute(target: Path | StoreURL, store: Store | None, sql: str, params: Sequence[Any],
             read_only: bool = False) -> list[Sequence[Any]]:
    """Run one statement on a log file or store (``store``: the log's own, when open)."""
    if isinstance(target, Path):
        conn = sqlite3.connect(f"file:{target}?mode={'ro' if read_only else 'rw'}", uri=True,
                               timeout=10.0)
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    from ._sinks import in_store

    return in_store(target, store, sql, params)


