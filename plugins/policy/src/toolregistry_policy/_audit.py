"""The audit trail: every decision the policy takes or a person gives, as a structlog event
(``policy.decision``) and a record the application can query: in memory, and on the shared
store when one is configured (every worker's records, queried from any of them)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from toolregistry.plugin import log

if TYPE_CHECKING:
    from toolregistry.plugin import Store

__all__ = ["AuditLog", "AuditRecord"]


class AuditRecord(NamedTuple):
    """One decision: ``decision`` is ``allow``, ``deny``, ``ask`` (held for a person), or a
    person's ``approve`` / ``reject``. ``rule`` names the rule (``default`` when none matched,
    ``approval`` for a call a person approved, ``budget`` for a spent budget); ``reason`` what
    the model or the person was told; ``approver`` who decided; ``approval_id`` the approval
    concerned."""

    time: float
    tool: str
    call_id: str | None
    decision: str
    rule: str | None = None
    reason: str | None = None
    approver: str | None = None
    approval_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return self._asdict()


_FIELDS = AuditRecord._fields
_TABLE = "policy_audit"


def _schema(kind: str) -> tuple[str, int, tuple[str, ...]]:
    seq = "seq BIGSERIAL PRIMARY KEY" if kind == "postgresql" else \
        "seq INTEGER PRIMARY KEY AUTOINCREMENT"
    return ("policy-audit", 1, (
        f"CREATE TABLE IF NOT EXISTS {_TABLE} ({seq}, time DOUBLE PRECISION NOT NULL, "
        "tool TEXT NOT NULL, call_id TEXT, decision TEXT NOT NULL, rule TEXT, reason TEXT, "
        "approver TEXT, approval_id TEXT)",
        f"CREATE INDEX IF NOT EXISTS {_TABLE}_time ON {_TABLE} (time)",
        f"CREATE INDEX IF NOT EXISTS {_TABLE}_call ON {_TABLE} (call_id)",
    ))


class StoreTrail:
    """The audit records of every worker in the store's table: each record one
    transaction, written before the decision takes effect."""

    def __init__(self, store: Store) -> None:
        component, version, ddl = _schema(store.kind)
        store.ensure_schema(component, version, ddl)
        self.store = store

    def write(self, row: tuple[Any, ...]) -> None:
        marks = ", ".join("?" * len(_FIELDS))
        with self.store.transaction() as tx:
            tx.execute(f"INSERT INTO {_TABLE} ({', '.join(_FIELDS)}) VALUES ({marks})", row)

    def query(self, filters: dict[str, Any], since: float | None,
              limit: int | None) -> list[AuditRecord]:
        where = [f"{name} = ?" for name, value in filters.items() if value is not None]
        params = [value for value in filters.values() if value is not None]
        if since is not None:
            where.append("time >= ?")
            params.append(since)
        sql = f"SELECT {', '.join(_FIELDS)} FROM {_TABLE}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(limit)
        with self.store.transaction() as tx:
            rows = tx.execute(sql, params)
        return [AuditRecord._make(r) for r in reversed(rows)]


class AuditLog:
    """The most recent ``size`` records, newest last, and listeners told of each new one;
    with a ``shared`` trail, every worker's records too (what :meth:`query` reads)."""

    def __init__(self, size: int = 10_000) -> None:
        self._records: deque[tuple[Any, ...]] = deque(maxlen=size)
        self._listeners: list[Callable[[AuditRecord], Any]] = []
        self._lock = threading.Lock()
        self.shared: StoreTrail | None = None

    def record(self, tool: str, call_id: str | None, decision: str, rule: str | None = None,
               reason: str | None = None, approver: str | None = None,
               approval_id: str | None = None) -> None:
        """Keep a record and emit its ``policy.decision`` event."""
        # Kept as a plain tuple (made an AuditRecord when read): this runs for every call a
        # rule decides, so it is kept to a few hundred nanoseconds.
        row = (time.time(), tool, call_id, decision, rule, reason, approver, approval_id)
        self._records.append(row)  # deque.append is atomic
        if self.shared is not None:
            try:
                self.shared.write(row)
            except Exception as exc:
                # The decision stands; the record stays in memory and in the event below.
                log.warning("policy.audit_write_failed", store=str(self.shared.store.url),
                            tool=tool, call_id=call_id, error=f"{type(exc).__name__}: {exc}")
        if log.is_info():
            log.info("policy.decision", tool=tool, call_id=call_id, rule=rule,
                     decision=decision, reason=reason, approver=approver,
                     approval_id=approval_id)
        if self._listeners:
            entry = AuditRecord._make(row)
            for listener in self._listeners:
                try:
                    listener(entry)
                except Exception as exc:
                    log.warning("policy.listener_failed", error=f"{type(exc).__name__}: {exc}")

    def resize(self, size: int) -> None:
        """Keep the most recent ``size`` records from now on (the newest kept now)."""
        if size != self._records.maxlen:
            with self._lock:
                self._records = deque(self._records, maxlen=size)

    def query(self, *, tool: str | None = None, decision: str | None = None,
              call_id: str | None = None, approval_id: str | None = None,
              since: float | None = None, limit: int | None = None) -> list[AuditRecord]:
        """Records matching every filter given, oldest first (``limit``: the newest N); with a
        shared trail, every worker's records on the store."""
        if self.shared is not None:
            return self.shared.query({"tool": tool, "decision": decision, "call_id": call_id,
                                      "approval_id": approval_id}, since, limit)
        with self._lock:
            rows = list(self._records)  # one step: appends from other threads may go on
        out = [AuditRecord._make(r) for r in rows  # (time, tool, call_id, decision, ...)
               if (tool is None or r[1] == tool)
               and (decision is None or r[3] == decision)
               and (call_id is None or r[2] == call_id)
               and (approval_id is None or r[7] == approval_id)
               and (since is None or r[0] >= since)]
        return out[-limit:] if limit else out

    def subscribe(self, listener: Callable[[AuditRecord], Any]) -> Callable[[], None]:
        """Call ``listener(record)`` for each new record; returns an unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def __len__(self) -> int:
        return len(self._records)
