"""Change events through a store: what one process publishes, every other process on the same
store receives (workers of one host, hosts behind a load balancer).

PostgreSQL carries them with ``LISTEN`` / ``NOTIFY``: one connection of its own per
listening process, reconnected when the server goes away and comes back (events published
while it was away are lost, so the listener is then told to catch up: a ``resync`` event).
SQLite has no notifications: events are rows of a table the listener polls (``poll``
seconds apart), kept an hour.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ._log import log
from ._store import Store

__all__ = ["CHANNEL", "ChangeFeed"]

CHANNEL = "toolregistry_changes"
"""The PostgreSQL notification channel, and the SQLite table, change events travel on."""

MAX_PAYLOAD = 7000  # PostgreSQL refuses a NOTIFY payload of 8000 bytes or more
KEEP_SECONDS = 3600.0  # how long SQLite keeps an event for pollers that were slow
_DDL = (f"CREATE TABLE IF NOT EXISTS {CHANNEL} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "payload TEXT NOT NULL, at REAL NOT NULL)",)

Receiver = Callable[[dict[str, Any]], None]


class ChangeFeed:
    """Publish change events on ``store`` and receive everyone's (this process's included:
    receivers tell their own events apart by a field of the payload)."""

    def __init__(self, store: Store, *, poll: float = 0.5) -> None:
        self.store = store
        self.poll = poll
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._receivers: list[Receiver] = []
        self._lock = threading.Lock()
        self._listening = threading.Event()
        if store.kind == "sqlite":
            store.ensure_schema("kernel-changes", 1, _DDL)

    def publish(self, payload: Mapping[str, Any]) -> None:
        """Send ``payload`` (JSON-able; other values are sent as text) to every listener.
        A payload too long for a notification loses its ``details``."""
        text = json.dumps(dict(payload), default=str, separators=(",", ":"))
        if len(text.encode()) > MAX_PAYLOAD:
            text = json.dumps({**payload, "details": {}, "truncated": True}, default=str,
                              separators=(",", ":"))[:MAX_PAYLOAD]
        if self.store.kind == "sqlite":
            now = time.time()
            with self.store.transaction() as tx:
                tx.execute(f"INSERT INTO {CHANNEL} (payload, at) VALUES (?, ?)", (text, now))
                tx.execute(f"DELETE FROM {CHANNEL} WHERE at < ?", (now - KEEP_SECONDS,))
            return
        with self.store.transaction() as tx:
            tx.execute("SELECT pg_notify(?, ?)", (CHANNEL, text))

    def subscribe(self, receiver: Receiver) -> None:
        """Call ``receiver(payload)`` (on the feed's own thread) for every event published
        from now on; the first subscriber starts the thread and waits until it listens."""
        with self._lock:
            self._receivers.append(receiver)
            if self._thread is not None:
                return
            target = self._poll_sqlite if self.store.kind == "sqlite" else self._listen_pg
            self._thread = threading.Thread(target=target, name="toolregistry-changes",
                                            daemon=True)
            self._thread.start()
        self._listening.wait(15.0)

    def close(self) -> None:
        """Stop listening (idempotent); the store stays open (its owner closes it)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(10.0)

    def _deliver(self, payload: dict[str, Any]) -> None:
        for receiver in list(self._receivers):
            try:
                receiver(payload)
            except Exception as exc:  # one receiver's failure must not stop the feed
                log.warning("changes.receiver_failed", error=f"{type(exc).__name__}: {exc}")

    def _poll_sqlite(self) -> None:
        seq = 0
        with self.store.transaction() as tx:
            rows = tx.execute(f"SELECT MAX(seq) FROM {CHANNEL}")
            seq = int(rows[0][0] or 0) if rows else 0
        self._listening.set()
        while not self._stop.wait(self.poll):
            try:
                with self.store.transaction() as tx:
                    rows = tx.execute(f"SELECT seq, payload FROM {CHANNEL} WHERE seq > ? "
                                      "ORDER BY seq", (seq,))
            except Exception as exc:  # the file is busy or gone: try again next time
                log.warning("changes.poll_failed", store=str(self.store.url),
                            error=f"{type(exc).__name__}: {exc}")
                continue
            for number, text in rows:
                seq = max(seq, int(number))
                self._deliver(_parsed(text))

    def _listen_pg(self) -> None:
        import psycopg

        lost = False
        wait = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.store.url.url, autocommit=True,
                                     connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    if lost:
                        log.info("changes.reconnected", store=str(self.store.url))
                        self._deliver({"kind": "resync"})
                    lost, wait = False, 0.5
                    checked = time.monotonic()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._deliver(_parsed(note.payload))
                        if time.monotonic() - checked > 5.0:
                            # A server that vanished without closing the socket is noticed
                            # only by speaking to it.
                            conn.execute("SELECT 1")
                            checked = time.monotonic()
            except psycopg.Error as exc:
                if not lost:
                    log.warning("changes.listen_lost", store=str(self.store.url),
                                error=f"{type(exc).__name__}: {exc}".strip())
                lost = True
                self._listening.set()  # a subscriber waits for a first try, not a success
                self._stop.wait(wait)
                wait = min(wait * 2, 5.0)


def _parsed(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"kind": "resync"}
    return value if isinstance(value, dict) else {"kind": "resync"}
