"""The embeddings cache on the registry's store, so that the workers and hosts of a served
registry embed each tool once between them rather than once each. Same contract as the file
cache: failures are logged, never raised (the cache only saves time)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from toolregistry.plugin import log

if TYPE_CHECKING:
    from toolregistry.plugin import Store, StoreURL

__all__ = ["StoreEmbeddingCache"]

SCHEMA = ("discovery-vectors", 1, (
    "CREATE TABLE IF NOT EXISTS discovery_vectors (key BYTEA PRIMARY KEY, vec BYTEA NOT NULL)",
))


class StoreEmbeddingCache:
    """Vectors by key (a hash of model id and text), float16, in the store's
    ``discovery_vectors`` table."""

    _CHUNK = 500

    def __init__(self, url: StoreURL) -> None:
        from toolregistry.plugin import open_store

        self.url = url
        self._store: Store | None = None
        try:
            # A lost vector is only embedded again: commits need not wait for the disk.
            self._store = open_store(url, durable=False, schema=SCHEMA)
        except Exception as exc:
            log.warning("discovery.embedding_cache_unavailable", store=str(url),
                        error=f"{type(exc).__name__}: {exc}")

    @property
    def available(self) -> bool:
        """Whether the store could be opened."""
        return self._store is not None

    def get_many(self, keys: Sequence[bytes], dim: int | None) -> dict[bytes, Any]:
        found: dict[bytes, Any] = {}
        store = self._store
        if store is None or not keys:
            return found
        try:
            with store.transaction() as tx:
                for at in range(0, len(keys), self._CHUNK):
                    chunk = keys[at : at + self._CHUNK]
                    rows = tx.execute("SELECT key, vec FROM discovery_vectors WHERE key IN "
                                      f"({','.join('?' * len(chunk))})", chunk)
                    for key, blob in rows:
                        vec = np.frombuffer(bytes(blob), dtype="<f2")
                        if vec.size and (dim is None or vec.size == dim):
                            found[bytes(key)] = vec
        except Exception as exc:
            log.warning("discovery.embedding_cache_read_failed", store=str(self.url),
                        error=f"{type(exc).__name__}: {exc}")
        return found

    def put_many(self, items: Iterable[tuple[bytes, Any]]) -> None:
        store = self._store
        if store is None:
            return
        rows = [(key, np.asarray(vec, dtype="<f2").tobytes()) for key, vec in items]
        if not rows:
            return
        try:
            with store.transaction() as tx:
                for at in range(0, len(rows), self._CHUNK // 2):
                    chunk = rows[at : at + self._CHUNK // 2]
                    tx.execute("INSERT INTO discovery_vectors (key, vec) VALUES "
                               f"{','.join(['(?, ?)'] * len(chunk))} "
                               "ON CONFLICT (key) DO NOTHING",
                               [value for row in chunk for value in row])
        except Exception as exc:
            log.warning("discovery.embedding_cache_write_failed", store=str(self.url),
                        error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.close()
