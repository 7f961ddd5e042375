"""The spool's handle index on the registry's store, so that every worker and host reads the
handles of all, and retention is enforced by whichever process writes.

Where the text lives depends on the store:

* ``sqlite:///``: the processes share one host, hence one file system: the text stays in the
  writer's spool file and the store keeps its path, size, time, device and inode (a reader
  opens that very file, with the same checks as for its own outputs).
* ``postgresql://``: the hosts share no path, so the text goes into the store too; a reader
  on another host copies it once into its own spool folder and pages it from there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry.plugin import log

if TYPE_CHECKING:
    from pathlib import Path

    from toolregistry.plugin import Store

__all__ = ["SCHEMA", "Row", "SharedIndex"]

SCHEMA = ("spool", 1, (
    "CREATE TABLE IF NOT EXISTS spool_outputs (handle TEXT PRIMARY KEY, "
    "created DOUBLE PRECISION NOT NULL, size BIGINT NOT NULL, path TEXT, device TEXT, "
    "inode TEXT, content BYTEA)",
    "CREATE INDEX IF NOT EXISTS spool_outputs_created ON spool_outputs (created)",
))
_LOCK = "toolregistry-spool.retention"
_COLUMNS = "handle, created, size, path, device, inode"


@frozen
class Row:
    """One output in the index: ``path``, ``device`` and ``inode`` of the writer's file (a
    SQLite store), or ``None`` when the text is in the store (a server)."""

    handle: str
    created: float
    size: int
    path: str | None
    device: int | None
    inode: int | None


def _row(values: tuple[Any, ...]) -> Row:
    handle, created, size, path, device, inode = values
    return Row(str(handle), float(created), int(size), path,
               None if device is None else int(device), None if inode is None else int(inode))


class SharedIndex:
    """The ``spool_outputs`` table of one store (opened with :data:`SCHEMA`; thread-safe:
    the store is)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.holds_content = store.kind != "sqlite"

    def put(self, handle: str, created: float, size: int, path: Path, device: int, inode: int,
            *, max_age: float, max_total: int, dropped: Iterable[str] = ()) -> list[Row]:
        """Index a new output (with its text on a server), forget ``dropped`` (outputs this
        process evicted), and apply retention to every process's outputs: the rows removed
        for it, whose files (on a SQLite store) the caller removes."""
        content = path.read_bytes() if self.holds_content else None
        where = (None, None, None) if self.holds_content else (str(path), str(device),
                                                                str(inode))
        with self.store.transaction(lock=_LOCK) as tx:
            tx.execute(f"INSERT INTO spool_outputs ({_COLUMNS}, content) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (handle, created, size, *where, content))
            for old in dropped:
                tx.execute("DELETE FROM spool_outputs WHERE handle = ?", (old,))
            removed = [_row(r) for r in tx.execute(
                f"SELECT {_COLUMNS} FROM spool_outputs WHERE created < ?",
                (time.time() - max_age,))]
            total = int(tx.execute("SELECT COALESCE(SUM(size), 0) FROM spool_outputs")[0][0])
            total -= sum(r.size for r in removed)
            if total > max_total:
                # Oldest first; the newest output always stays (the model was just told it).
                for values in tx.execute(f"SELECT {_COLUMNS} FROM spool_outputs WHERE "
                                         "created >= ? AND handle <> ? ORDER BY created",
                                         (time.time() - max_age, handle)):
                    if total <= max_total:
                        break
                    row = _row(values)
                    removed.append(row)
                    total -= row.size
            for row in removed:
                tx.execute("DELETE FROM spool_outputs WHERE handle = ?", (row.handle,))
        for row in removed:
            log.info("spool.evicted", handle=row.handle, size=row.size, shared=True)
        return removed

    def get(self, handle: str) -> Row | None:
        """The row of ``handle`` (``None``: not in the index)."""
        with self.store.transaction() as tx:
            rows = tx.execute(f"SELECT {_COLUMNS} FROM spool_outputs WHERE handle = ?",
                              (handle,))
        return _row(rows[0]) if rows else None

    def content(self, handle: str) -> bytes | None:
        """The text of ``handle`` kept in the store (``None``: none there)."""
        with self.store.transaction() as tx:
            rows = tx.execute("SELECT content FROM spool_outputs WHERE handle = ?", (handle,))
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    def forget(self, handles: Iterable[str]) -> None:
        """Remove ``handles`` from the index (their files are gone)."""
        handles = list(handles)
        if not handles:
            return
        with self.store.transaction() as tx:
            for handle in handles:
                tx.execute("DELETE FROM spool_outputs WHERE handle = ?", (handle,))
