"""The approvals store: calls held for a person, their decisions, and the one run each
approved call gets. In memory, in a SQLite file that the processes of one host share, or in
a PostgreSQL store every worker and host shares (``ServerStore``).

Every held call gets an approval of its own (a fresh id). ``key`` says which later calls are
the same call sent again (the same tool, arguments, call id and caller): a re-sent call
finds its approval while it is open (pending, or decided and not yet used) through
:meth:`ApprovalStore.find`; a call without a call id or a caller has no key and is never
taken for another."""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs
from attrs import frozen

from toolregistry.errors import ToolRegistryError
from toolregistry.types import ApprovalRequest

if TYPE_CHECKING:
    from toolregistry.plugin import Store

__all__ = ["Approval", "ApprovalError", "ApprovalStore", "MemoryStore", "SQLiteStore",
           "ServerStore", "Status"]

Status = Literal["pending", "approved", "denied", "running", "done"]
STATUSES: tuple[Status, ...] = ("pending", "approved", "denied", "running", "done")


class ApprovalError(ToolRegistryError, LookupError):
    """An approval id that is unknown, already decided, or already used."""


@frozen
class Approval:
    """One call held for approval and what became of it.

    ``status``: ``pending`` (waiting for a person), ``approved`` / ``denied`` (decided, not
    yet resumed), ``running`` (resumed, running now), ``done`` (ran, or its denial was given
    to the model; ``outcome`` says which). ``arguments`` are the edited arguments when the
    person changed them (``None``: as the model asked). ``approver`` and ``note`` are who
    decided and why (a denial's ``note`` is what the model reads).
    """

    request: ApprovalRequest
    status: Status = "pending"
    created: float = attrs.field(factory=time.time)
    decided: float | None = None
    approver: str | None = None
    note: str | None = None
    arguments: Mapping[str, Any] | None = None
    outcome: str | None = None
    result: str | None = None
    key: str | None = None

    @property
    def id(self) -> str:
        """The approval id (the pending result's ``approval.id``)."""
        return self.request.id

    @property
    def tool(self) -> str:
        """The tool the call is for."""
        return self.request.tool

    @property
    def effective_arguments(self) -> dict[str, Any]:
        """The arguments the call runs with: the edited ones, else the model's."""
        return dict(self.arguments if self.arguments is not None else self.request.arguments)

    @property
    def edited(self) -> bool:
        """True when a person changed the arguments."""
        return self.arguments is not None and dict(self.arguments) != dict(
            self.request.arguments)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reads it back)."""
        return {"request": self.request.to_dict(), "status": self.status,
                "created": self.created, "decided": self.decided, "approver": self.approver,
                "note": self.note,
                "arguments": dict(self.arguments) if self.arguments is not None else None,
                "outcome": self.outcome, "result": self.result, "key": self.key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Approval:
        """The inverse of :meth:`to_dict`."""
        status = data.get("status", "pending")
        if status not in STATUSES:
            raise ValueError(f"an approval's status must be one of {', '.join(STATUSES)}, "
                             f"got {status!r}")
        return cls(ApprovalRequest.from_dict(data["request"]), status,
                   float(data.get("created") or time.time()), data.get("decided"),
                   data.get("approver"), data.get("note"), data.get("arguments"),
                   data.get("outcome"), data.get("result"), data.get("key"))


class ApprovalStore(Protocol):
    """Where approvals live. Every method is atomic (a transition happens once, even when two
    processes try it at the same moment). A store may also offer ``find(key)``: the open
    approvals (pending, approved, denied) with that ``key``, oldest first; without it, the
    policy searches ``list()``."""

    def add(self, approval: Approval) -> Approval:
        """Keep a new pending approval; the one already kept under its id wins."""

    def get(self, approval_id: str) -> Approval | None:
        """The approval with this id, or ``None``."""

    def list(self, status: Status | None = None) -> list[Approval]:
        """Approvals, oldest first, optionally only those in one status."""

    def transition(self, approval_id: str, expected: tuple[Status, ...],
                   new: Approval) -> Approval | None:
        """Replace the approval with ``new`` if its status is one of ``expected``; the
        approval as it was when it is not (``None`` when the id is unknown) -- callers
        compare ``result is new``."""

    def remove(self, approval_id: str) -> None:
        """Forget an approval."""


OPEN: tuple[Status, ...] = ("pending", "approved", "denied")
"""The statuses in which a re-sent call finds its approval (afterwards it was used)."""


def find(store: ApprovalStore, key: str) -> list[Approval]:
    """The open approvals of ``store`` with ``key``, oldest first (the store's own ``find``
    when it has one)."""
    own = getattr(store, "find", None)
    if own is not None:
        return own(key)  # type: ignore[no-any-return]
    return [a for a in store.list() if a.key == key and a.status in OPEN]


class MemoryStore:
    """Approvals in this process's memory (the default)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Approval] = {}

    def add(self, approval: Approval) -> Approval:
        with self._lock:
            return self._items.setdefault(approval.id, approval)

    def get(self, approval_id: str) -> Approval | None:
        return self._items.get(approval_id)

    def list(self, status: Status | None = None) -> list[Approval]:
        with self._lock:
            items = list(self._items.values())
        return sorted((a for a in items if status is None or a.status == status),
                      key=lambda a: a.created)

    def transition(self, approval_id: str, expected: tuple[Status, ...],
                   new: Approval) -> Approval | None:
        with self._lock:
            current = self._items.get(approval_id)
            if current is None or current.status not in expected:
                return current
            self._items[approval_id] = new
            return new

    def remove(self, approval_id: str) -> None:
        with self._lock:
            self._items.pop(approval_id, None)

    def find(self, key: str) -> builtins.list[Approval]:
        with self._lock:
            items = [a for a in self._items.values() if a.key == key and a.status in OPEN]
        return sorted(items, key=lambda a: a.created)


class SQLiteStore:
    """Approvals in a SQLite file: a decision made in one process (a web request, a queue
    worker) is seen by the process that resumes the call, and each approved call is claimed
    by exactly one of them."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[sqlite3.Connection] = []
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, "
                       "status TEXT NOT NULL, created REAL NOT NULL, data TEXT NOT NULL, "
                       "key TEXT)")
            columns = {row[1] for row in db.execute("PRAGMA table_info(approvals)")}
            if "key" not in columns:  # a file made before approvals had keys
                db.execute("ALTER TABLE approvals ADD COLUMN key TEXT")
            db.execute("CREATE INDEX IF NOT EXISTS approvals_key ON approvals (key)")

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
            with self._lock:
                self._open.append(db)
        return db

    def close(self) -> None:
        """Close every connection this store opened (the registry's ``close`` does)."""
        with self._lock:
            opened, self._open = self._open, []
        for db in opened:
            db.close()
        self._local = threading.local()

    @staticmethod
    def _load(row: Any) -> Approval | None:
        return None if row is None else Approval.from_dict(json.loads(row[0]))

    def add(self, approval: Approval) -> Approval:
        db = self._connect()
        data = json.dumps(approval.to_dict(), default=str)
        db.execute("INSERT OR IGNORE INTO approvals (id, status, created, data, key) "
                   "VALUES (?, ?, ?, ?, ?)", (approval.id, approval.status, approval.created,
                                              data, approval.key))
        kept = self.get(approval.id)
        return kept if kept is not None else approval

    def get(self, approval_id: str) -> Approval | None:
        row = self._connect().execute("SELECT data FROM approvals WHERE id = ?",
                                      (approval_id,)).fetchone()
        return self._load(row)

    def list(self, status: Status | None = None) -> list[Approval]:
        db = self._connect()
        if status is None:
            rows = db.execute("SELECT data FROM approvals ORDER BY created, id").fetchall()
        else:
            rows = db.execute("SELECT data FROM approvals WHERE status = ? "
                              "ORDER BY created, id", (status,)).fetchall()
        return [a for a in map(self._load, rows) if a is not None]

    def transition(self, approval_id: str, expected: tuple[Status, ...],
                   new: Approval) -> Approval | None:
        db = self._connect()
        marks = ", ".join("?" * len(expected))
        cursor = db.execute(
            f"UPDATE approvals SET status = ?, data = ? WHERE id = ? AND status IN ({marks})",
            (new.status, json.dumps(new.to_dict(), default=str), approval_id, *expected))
        if cursor.rowcount == 1:
            return new
        return self.get(approval_id)

    def remove(self, approval_id: str) -> None:
        self._connect().execute("DELETE FROM approvals WHERE id = ?", (approval_id,))

    def find(self, key: str) -> builtins.list[Approval]:
        marks = ", ".join("?" * len(OPEN))
        rows = self._connect().execute(
            f"SELECT data FROM approvals WHERE key = ? AND status IN ({marks}) "
            "ORDER BY created, id", (key, *OPEN)).fetchall()
        return [a for a in map(self._load, rows) if a is not None]


class ServerStore:
    """Approvals in a shared database (a ``postgresql://`` store): every worker and host sees
    a decision made on any of them, and each approved call is claimed by exactly one. Each
    method is one transaction; a transition is one conditional ``UPDATE``."""

    TABLE = "policy_approvals"
    SCHEMA = ("policy-approvals", 1, (
        f"CREATE TABLE IF NOT EXISTS {TABLE} (id TEXT PRIMARY KEY, status TEXT NOT NULL, "
        "created DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, key TEXT)",
        f"CREATE INDEX IF NOT EXISTS {TABLE}_key ON {TABLE} (key)",
        f"CREATE INDEX IF NOT EXISTS {TABLE}_status ON {TABLE} (status, created)",
    ))

    def __init__(self, store: Store) -> None:
        component, version, ddl = self.SCHEMA
        store.ensure_schema(component, version, ddl)
        self.store = store

    def _select(self, where: str, params: tuple[Any, ...]) -> builtins.list[Approval]:
        with self.store.transaction() as tx:
            rows = tx.execute(f"SELECT data FROM {self.TABLE}{where}", params)
        return [a for a in map(SQLiteStore._load, rows) if a is not None]

    def add(self, approval: Approval) -> Approval:
        data = json.dumps(approval.to_dict(), default=str)
        with self.store.transaction() as tx:
            tx.execute(f"INSERT INTO {self.TABLE} (id, status, created, data, key) "
                       "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                       (approval.id, approval.status, approval.created, data, approval.key))
        kept = self.get(approval.id)
        return kept if kept is not None else approval

    def get(self, approval_id: str) -> Approval | None:
        found = self._select(" WHERE id = ?", (approval_id,))
        return found[0] if found else None

    def list(self, status: Status | None = None) -> builtins.list[Approval]:
        if status is None:
            return self._select(" ORDER BY created, id", ())
        return self._select(" WHERE status = ? ORDER BY created, id", (status,))

    def transition(self, approval_id: str, expected: tuple[Status, ...],
                   new: Approval) -> Approval | None:
        marks = ", ".join("?" * len(expected))
        with self.store.transaction() as tx:
            changed = tx.execute(
                f"UPDATE {self.TABLE} SET status = ?, data = ? WHERE id = ? AND status IN "
                f"({marks}) RETURNING id",
                (new.status, json.dumps(new.to_dict(), default=str), approval_id, *expected))
        return new if changed else self.get(approval_id)

    def remove(self, approval_id: str) -> None:
        with self.store.transaction() as tx:
            tx.execute(f"DELETE FROM {self.TABLE} WHERE id = ?", (approval_id,))

    def find(self, key: str) -> builtins.list[Approval]:
        marks = ", ".join("?" * len(OPEN))
        return self._select(f" WHERE key = ? AND status IN ({marks}) ORDER BY created, id",
                            (key, *OPEN))

    def close(self) -> None:
        """Nothing of its own to close: the policy closes the store's connections."""
