"""The store seam: one URL through which stateful plugins keep what several workers or hosts
share, and the small database layer they use on it (SQLite embedded, PostgreSQL shared).

``sqlite:///path`` is a file on this host (several processes of one host share it);
``postgresql://user:password@host/db`` is a server every worker and host can reach (needs
``psycopg`` 3 and ``psycopg_pool``, imported on first use). Plugins ask
:func:`store_url` for their URL and :func:`open_store` for a :class:`Store`; nothing here is
imported by ``import toolregistry``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from attrs import frozen

from ._log import log
from .errors import ConfigError

if TYPE_CHECKING:
    from ._registry import ToolRegistry

__all__ = ["Store", "StoreURL", "masked_url", "open_store", "parse_store_url", "sqlite_write_ahead",
           "store_url"]

_POSTGRES_SCHEMES = ("postgresql", "postgres")
SCHEMA_TABLE = "toolregistry_schema"


def masked_url(url: str) -> str:
    """``url`` with its password (in the authority or a ``password=`` parameter) as ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.split(":", 1)[0]
        netloc = f"{name}:***@{host}"
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


@frozen
class StoreURL:
    """A store URL, normalised: ``sqlite:///`` + an absolute path (``sqlite:////srv/x.db``:
    three slashes, then the path), or ``postgresql://...``.
    ``str()`` and ``repr()`` show it with the password masked; ``url`` keeps it."""

    url: str

    @property
    def kind(self) -> Literal["sqlite", "postgresql"]:
        """``sqlite`` or ``postgresql``."""
        return "sqlite" if self.url.startswith("sqlite:") else "postgresql"

    @property
    def path(self) -> Path:
        """The SQLite file (a :class:`ValueError` for a server URL)."""
        if self.kind != "sqlite":
            raise ValueError(f"{self} is not a sqlite:/// URL")
        return Path(unquote(self.url[len("sqlite:///"):]) or "/")

    @property
    def masked(self) -> str:
        """The URL with its password as ``***``: for messages and logs."""
        return masked_url(self.url)

    def __str__(self) -> str:
        return self.masked

    def __repr__(self) -> str:
        return f"StoreURL({self.masked!r})"


def parse_store_url(text: str, *, base: Path | None = None) -> StoreURL:
    """``text`` as a :class:`StoreURL`: a relative ``sqlite:///`` path is taken from ``base``
    (the configuration file's folder; default: the working directory), ``~`` expanded. A
    :class:`ValueError` says what a store URL looks like."""
    text = text.strip()
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if sep and scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"{text!r}: a SQLite store is sqlite:///path/to/file.db "
                             "(three slashes, then the path)")
        path = Path(os.path.expanduser(unquote(rest[1:])))
        if not path.is_absolute():
            path = (base if base is not None else Path.cwd()) / path
        return StoreURL("sqlite:///" + quote(os.path.abspath(path), safe="/"))
    if sep and scheme in _POSTGRES_SCHEMES:
        if not urlsplit(text).netloc and "host=" not in text:
            raise ValueError(f"{masked_url(text)!r}: a PostgreSQL store names its server: "
                             "postgresql://user:password@host:5432/database")
        return StoreURL("postgresql://" + rest)
    raise ValueError(f"{masked_url(text)!r} is not a store URL: use sqlite:///path/to/file.db "
                     "or postgresql://user:password@host/database")


def store_url(registry: ToolRegistry, override: str | None = None) -> StoreURL | None:
    """The store a plugin of ``registry`` keeps its shared state in: ``override`` (the
    plugin's own setting: a store URL, or a bare path meaning a SQLite file), else the
    kernel's ``store`` option, else ``None`` (the plugin keeps its state in this process).
    ``${VAR}`` is replaced by that environment variable; a relative ``sqlite:///`` path is
    taken from the configuration file's folder, a bare relative path from the working
    directory (plugins declare path options as ``ConfigPath``, which resolves a file's
    values against its folder)."""
    from ._config import expand_env

    config_dir = registry.config.path.parent if registry.config.path is not None else None
    if override is not None:
        text = expand_env(str(override), "store")
        if "://" not in text:
            # A path option: a configuration file's value comes resolved against its folder
            # (ConfigPath), one given in code is taken from the working directory.
            text = "sqlite:///" + text
            config_dir = None
        where = "store"
    else:
        text = registry.settings.store
        if text is None:
            return None
        where = registry.settings.origin("store")
        if not where.startswith("[tool.toolregistry]"):
            config_dir = None
    try:
        return parse_store_url(text, base=config_dir)
    except ValueError as exc:
        raise ConfigError(f"{where}: store {exc}") from None


# --- the database layer -------------------------------------------------------------------


class Store:
    """One store's connections: SQLite (one connection per thread, write transactions take
    the file's lock) or PostgreSQL (a small pool). SQL is written with ``?`` placeholders and
    statements both databases accept. ``durable=False``: a commit returns before it reaches
    the disk (SQLite ``synchronous=NORMAL`` in WAL mode, PostgreSQL ``synchronous_commit=off``):
    a crash of the process loses nothing, a power cut the last commits; for state that is
    only a cache or an index of files that are not synced either."""

    def __init__(self, url: StoreURL, *, durable: bool = True) -> None:
        self.url = url
        self.kind = url.kind
        self.durable = durable
        self._lock = threading.Lock()
        self._local = threading.local()
        self._sqlite: list[sqlite3.Connection] = []
        self._pool: Any = None
        if self.kind == "sqlite":
            try:
                self.url.path.parent.mkdir(parents=True, exist_ok=True)
                self._connect_sqlite().execute("SELECT 1")
            except (OSError, sqlite3.Error) as exc:
                raise ConfigError(f"the store {url} cannot be opened: {exc}") from None
        else:
            self._pool = _open_pool(url, durable)

    def _connect_sqlite(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.url.path, timeout=30.0, isolation_level=None,
                                 check_same_thread=False)
            sqlite_write_ahead(db)
            if not self.durable:
                db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
            with self._lock:
                self._sqlite.append(db)
        return db

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Transaction]:
        """A transaction, committed when the block ends and rolled back when it raises.
        ``lock``: a name held until the end, so that transactions naming it run one at a
        time across every process (SQLite: every write transaction takes the file's lock)."""
        if self.kind == "sqlite":
            db = self._connect_sqlite()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield Transaction(db, "?")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return
        with self._pg_connection() as conn:  # commits on exit, rolls back on an error
            tx = Transaction(conn, "%s")
            if lock is not None:
                tx.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (lock,))
            yield tx

    @contextmanager
    def _pg_connection(self) -> Iterator[Any]:
        from psycopg_pool import PoolTimeout

        pool = self._pool
        if pool is None:
            raise ConfigError(f"the store {self.url} is closed")
        try:
            conn = pool.getconn()
        except PoolTimeout:
            pool = self._renewed(pool)
            conn = pool.getconn()
        try:
            with conn:  # as the pool's connection(): commit, or roll back on an error
                yield conn
        finally:
            pool.putconn(conn)

    def _renewed(self, stale: Any) -> Any:
        """A new pool when the server answers again: after an outage the pool retries with
        a growing back-off (seconds, then minutes), so it may still wait long after the
        server came back. Raises the server's error while it is still away. (A pool only
        busy for that long is replaced too: its connections close as they are returned.)"""
        with self._lock:
            if self._pool is not stale and self._pool is not None:
                return self._pool  # another thread renewed it
            fresh = _open_pool(self.url, self.durable)  # a ConfigError while it is away
            self._pool = fresh
        log.info("store.reconnected", store=str(self.url))
        threading.Thread(target=stale.close, kwargs={"timeout": 1.0}, daemon=True,
                         name="toolregistry-store-close").start()
        return fresh

    def ensure_schema(self, component: str, version: int, ddl: Sequence[str]) -> None:
        """Create ``component``'s tables (``ddl``) on first use and record its schema
        ``version``; a store whose ``component`` schema is newer is refused, naming both."""
        with self.transaction(lock=SCHEMA_TABLE) as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (component TEXT PRIMARY KEY,"
                       " version INTEGER NOT NULL)")
            rows = tx.execute(f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?",
                              (component,))
            found = int(rows[0][0]) if rows else None
            if found is not None and found > version:
                raise ConfigError(
                    f"the store {self.url} holds {component} schema version {found}, newer "
                    f"than this version understands ({version}): upgrade the plugin, or use "
                    "another store")
            if found == version:
                return
            for statement in ddl:
                tx.execute(statement)
            if found is None:
                tx.execute(f"INSERT INTO {SCHEMA_TABLE} (component, version) VALUES (?, ?)",
                           (component, version))
            else:
                tx.execute(f"UPDATE {SCHEMA_TABLE} SET version = ? WHERE component = ?",
                           (version, component))

    def close(self) -> None:
        """Close every connection (idempotent)."""
        with self._lock:
            opened, self._sqlite = self._sqlite, []
            pool, self._pool = self._pool, None
        for db in opened:
            db.close()
        self._local = threading.local()
        if pool is not None:
            pool.close()


def sqlite_write_ahead(db: sqlite3.Connection, patience: float = 30.0) -> None:
    """Put an SQLite file in WAL mode (for plugins that keep a file of their own). Switching takes the file's lock and SQLite answers "database
    is locked" at once, without waiting, while another process opening the same new file
    switches it too: wait for that one (a file already in WAL mode needs no switch)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class Transaction:
    """Statements inside one :meth:`Store.transaction`."""

    def __init__(self, conn: Any, mark: str) -> None:
        self._conn = conn
        self._mark = mark

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``?`` placeholders); the rows it returns (empty when none)."""
        if self._mark != "?":
            sql = sql.replace("?", self._mark)
        cursor = self._conn.execute(sql, tuple(params))
        if cursor.description is None:
            return []
        return [tuple(row) for row in cursor.fetchall()]


_NEEDS_PSYCOPG = ("a postgresql:// store needs psycopg 3 and psycopg_pool: install the "
                  "plugin's postgres extra (e.g. pip install 'toolregistry-policy[postgres]')")


def _open_pool(url: StoreURL, durable: bool = True) -> Any:
    try:
        import psycopg
        from psycopg_pool import ConnectionPool
    except ImportError:
        raise ConfigError(f"the store {url}: {_NEEDS_PSYCOPG}") from None
    # One connection first, for a clear error (the pool would only time out).
    try:
        psycopg.connect(url.url, connect_timeout=10).close()
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"the store {url} cannot be reached: {masked_url(reason)}") from None
    # A call waits at most `timeout` seconds for a connection: a server gone mid-run fails
    # the statements that need it soon, rather than after the pool's default half minute.
    # `check`: a connection is tried before it is lent, so that one the server dropped (a
    # restart, pg_terminate_backend) is replaced rather than failing the next statement.
    options: dict[str, Any] = {"connect_timeout": 5}
    if not durable:
        options["options"] = "-c synchronous_commit=off"
    return ConnectionPool(url.url, min_size=1, max_size=4, open=True, timeout=5.0,
                          kwargs=options, check=ConnectionPool.check_connection)


def open_store(url: StoreURL, *, durable: bool = True,
               schema: tuple[str, int, Sequence[str]] | None = None) -> Store:
    """Connect to ``url``; a :class:`~toolregistry.errors.ConfigError` naming the URL
    (password masked) when it cannot be reached. ``durable``: see :class:`Store`.
    ``schema``: ``(component, version, ddl)`` for :meth:`Store.ensure_schema`, the store
    closed again when that fails."""
    store = Store(url, durable=durable)
    if schema is not None:
        try:
            store.ensure_schema(*schema)
        except BaseException:
            store.close()
            raise
    return store
