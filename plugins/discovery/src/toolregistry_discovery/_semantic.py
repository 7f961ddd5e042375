"""Dense retrieval fused with BM25F (the ``semantic`` extra): the options, the text a tool is
embedded from, the disk cache of vectors, the dense index, the dense side of a query and the
fusion. Embedders (what turns texts into vectors) are ``_embedders``'.

Tools are embedded in batches, each distinct text once: vectors come from the on-disk cache
(SQLite, float16, keyed by a hash of the model id and the text) or from the embedder, and are
kept L2-normalised as float32 rows of one matrix, so a query is one matrix-vector product
(exact search; numpy has no fast float16 or int8 product). Changes are collected and embedded
together when the next query needs them.

Fusion: ``lexical / best lexical + weight * z / 10`` over the union of both sides' candidates,
where ``z`` is a tool's cosine similarity to the query in standard deviations above the mean
over all tools (a z of 10, a clear hit, weighs as much as the best BM25F hit). A query that
asks for several things ("Book a hotel in Paris. Then find a vegan restaurant nearby.") is
also embedded request by request, and a candidate's ``z`` is the best of the whole query's and
each request's: one averaged vector of several requests resembles none of their tools.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from attrs import frozen

from toolregistry.plugin import StoreURL, log, sqlite_write_ahead

from ._embedders import Embedder, _as_matrix, _unit, resolve_embedder

if TYPE_CHECKING:
    from ._vectors import StoreEmbeddingCache

__all__ = ["DenseIndex", "EmbeddingCache", "SemanticOptions", "SemanticSearch",
           "default_cache_path", "embedding_text", "split_requests"]

_Z_SCALE = 10.0
# A request: a sentence, or a clause opened by a word that starts another task.
_REQUEST_SPLIT = re.compile(
    r"(?<=[.?!;])\s+|,?\s+(?=(?:then|also|after that|additionally|finally|lastly)\b)",
    re.IGNORECASE)
_MIN_REQUEST_WORDS = 4
_MAX_REQUESTS = 8
_STATS_SAMPLE = 2048  # rows whose similarities give a request's mean and spread


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/toolregistry/discovery-embeddings.sqlite3`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolregistry" / "discovery-embeddings.sqlite3"


@frozen
class SemanticOptions:
    """Hybrid retrieval settings.

    ``embedder``: an embedder, or its import path (``"pkg.module:attr"``; a class there is
    instantiated without arguments), or ``None`` for the default :class:`WordLlamaEmbedder`.
    ``cache``: ``True`` for :func:`default_cache_path`, a file path, a store URL
    (:class:`~toolregistry.plugin.StoreURL`: the registry's store, shared by its workers and
    hosts), or ``False`` for none.
    ``weight``: how much the dense side counts against BM25F (``>= 0``; 0 turns it off).
    """

    embedder: str | Embedder | None = None
    cache: bool | str | Path | StoreURL = True
    weight: float = 1.0

    def __attrs_post_init__(self) -> None:
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"semantic weight must be a finite number >= 0, got {w!r}")
        e = self.embedder
        if e is not None and not isinstance(e, str) and not callable(e):
            raise TypeError(f"semantic embedder must be a callable (texts -> vectors), an "
                            f"import path 'pkg.module:attr' or None, got {e!r}")
        if not isinstance(self.cache, (bool, str, Path, StoreURL)):
            raise TypeError(f"semantic cache must be true, false or a file path, "
                            f"got {self.cache!r}")


# ------------------------------------------------------------------------- embedded texts

_IDENT_SPLIT = re.compile(r"[_\-./:]+|(?<=[a-z0-9])(?=[A-Z])")


def embedding_text(texts: Sequence[str | tuple[str, ...]]) -> str:
    """The text a tool is embedded from: its index fields (``_fields.tool_texts``) except
    tags, identifiers split into words (``get_weather`` reads as "get weather")."""
    names, description, hint, _tags, params, param_texts = texts
    parts: list[str] = []
    for name in (names,) if isinstance(names, str) else names:
        parts.append(_IDENT_SPLIT.sub(" ", name))
    parts += [str(description), str(hint)]
    parts += [_IDENT_SPLIT.sub(" ", p) for p in params]
    parts += list(param_texts)
    return " ".join(p for p in parts if p)


def split_requests(query: str) -> list[str]:
    """The separate requests of a query that asks for several things: its sentences and the
    clauses opened by "then", "also", "after that", "additionally", "finally" or "lastly",
    each of at least four words (at most eight); ``[]`` when the query makes one request."""
    parts = [p.strip(" \"'") for p in _REQUEST_SPLIT.split(query.strip(" \"'"))]
    parts = [p for p in parts if len(p.split()) >= _MIN_REQUEST_WORDS][:_MAX_REQUESTS]
    return parts if len(parts) >= 2 else []


# ----------------------------------------------------------------------------- disk cache

class EmbeddingCache:
    """Vectors on disk by key (a hash of model id and text), float16, in one SQLite file
    that several processes may share. Failures to read or write are logged, never raised:
    the cache only saves time."""

    _CHUNK = 500

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False,
                                 isolation_level=None)
            sqlite_write_ahead(db)
            db.execute("PRAGMA synchronous=OFF")  # a lost entry is only embedded again
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, "
                       "vec BLOB NOT NULL) WITHOUT ROWID")
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            log.warning("discovery.embedding_cache_unavailable", path=str(self.path),
                        error=f"{type(exc).__name__}: {exc}")

    @staticmethod
    def key(model_id: str, text: str) -> bytes:
        return hashlib.blake2b(f"{model_id}\0{text}".encode(), digest_size=16).digest()

    def get_many(self, keys: Sequence[bytes], dim: int | None) -> dict[bytes, Any]:
        found: dict[bytes, Any] = {}
        if self._db is None or not keys:
            return found
        try:
            with self._lock:
                for at in range(0, len(keys), self._CHUNK):
                    chunk = keys[at : at + self._CHUNK]
                    rows = self._db.execute(
                        f"SELECT key, vec FROM vectors WHERE key IN "
                        f"({','.join('?' * len(chunk))})", chunk).fetchall()
                    for key, blob in rows:
                        vec = np.frombuffer(blob, dtype="<f2")
                        if vec.size and (dim is None or vec.size == dim):
                            found[bytes(key)] = vec
        except sqlite3.Error as exc:
            log.warning("discovery.embedding_cache_read_failed", path=str(self.path),
                        error=str(exc))
        return found

    def put_many(self, items: Iterable[tuple[bytes, Any]]) -> None:
        if self._db is None:
            return
        rows = [(key, np.asarray(vec, dtype="<f2").tobytes()) for key, vec in items]
        if not rows:
            return
        try:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            log.warning("discovery.embedding_cache_write_failed", path=str(self.path),
                        error=str(exc))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _open_cache(cache: bool | str | Path | StoreURL) -> EmbeddingCache | StoreEmbeddingCache | None:
    """The cache ``cache`` names; a store that cannot be opened falls back to the file."""
    if isinstance(cache, StoreURL):
        from ._vectors import StoreEmbeddingCache

        shared = StoreEmbeddingCache(cache)
        if shared.available:
            return shared
        cache = True
    if cache is True:
        return EmbeddingCache(default_cache_path())
    if cache in (False, ""):
        return None
    return EmbeddingCache(Path(str(cache)))


# ----------------------------------------------------------------------------- index

def _einsum_rowdot(matrix: Any, vector: Any) -> Any:
    return np.einsum("ij,j->i", matrix, vector)


_rowdot: Callable[[Any, Any], Any] = getattr(np, "vecdot", _einsum_rowdot)  # numpy >= 2.0


class DenseIndex:
    """Unit vectors by key in one float32 matrix (rows grow by doubling; a removed row is
    filled by the last one)."""

    def __init__(self) -> None:
        self._matrix: Any = None
        self._keys: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def dim(self) -> int | None:
        return None if self._matrix is None else int(self._matrix.shape[1])

    def set(self, keys: Sequence[str], vectors: Any) -> None:
        """Add or replace rows. Into an empty index the matrix is taken as it is (float32,
        C order, one row per key, keys distinct), not copied."""
        if not keys:
            return
        if self._matrix is None or not self._keys:
            if (vectors.dtype == np.float32 and vectors.flags.c_contiguous
                    and len(set(keys)) == len(keys)):
                self._matrix = vectors
                self._keys = list(keys)
                self._row = {k: i for i, k in enumerate(self._keys)}
                return
            self._matrix = np.zeros((max(64, len(keys)), vectors.shape[1]), dtype=np.float32)
        elif vectors.shape[1] != self._matrix.shape[1]:
            raise ValueError(f"the embedder changed dimension: {vectors.shape[1]} after "
                             f"{self._matrix.shape[1]}")
        for key, vec in zip(keys, vectors):
            row = self._row.get(key)
            if row is None:
                row = len(self._keys)
                if row == self._matrix.shape[0]:
                    grown = np.zeros((2 * row, self._matrix.shape[1]), dtype=np.float32)
                    grown[:row] = self._matrix
                    self._matrix = grown
                self._keys.append(key)
                self._row[key] = row
            self._matrix[row] = vec

    def remove(self, key: str) -> None:
        row = self._row.pop(key, None)
        if row is None:
            return
        last = len(self._keys) - 1
        if row != last:
            moved = self._keys[last]
            self._keys[row] = moved
            self._row[moved] = row
            self._matrix[row] = self._matrix[last]
        self._keys.pop()

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def similarities(self, query: Any) -> Any:
        """Cosine similarity of ``query`` (a unit vector) to every row, in row order."""
        if not self._keys:
            return np.empty(0, dtype=np.float32)
        # Row by row on this thread: BLAS threads would stall a query on a busy machine
        # (a slow tail many times the median).
        return _rowdot(self._matrix[: len(self._keys)], query)

    def rows(self, rows: Any) -> Any:
        """The vectors of ``rows`` (a copy)."""
        return self._matrix[rows]

    def sample(self, limit: int) -> Any:
        """At most about ``limit`` rows spread evenly over the index (all rows when fewer)."""
        n = len(self._keys)
        return self._matrix[:n:max(1, -(-n // limit))]

    def key_of(self, row: int) -> str:
        return self._keys[row]

    def row_of(self, key: str) -> int | None:
        return self._row.get(key)

    @property
    def nbytes(self) -> int:
        return 0 if self._matrix is None else int(self._matrix.nbytes)


@frozen
class DenseRanking:
    """One query's dense side: similarity and z-score per row, rows best first; for a query
    of several requests, their unit vectors and the mean and spread of each one's
    similarities over the index."""

    similarities: Any
    z: Any
    order: Any  # the top rows, best first
    requests: tuple[str, ...] = ()
    request_vectors: Any = None
    request_mean: Any = None
    request_std: Any = None


class SemanticSearch:
    """The dense side of hybrid discovery: embedder, disk cache, index, pending changes."""

    def __init__(self, options: SemanticOptions) -> None:
        self.options = options
        self.embedder, self.model_id = resolve_embedder(options.embedder)
        self._source = f"embedder {options.embedder or 'WordLlamaEmbedder'}"
        self.cache = _open_cache(options.cache) if self.model_id else None
        self.index = DenseIndex()
        self._pending: dict[str, str] = {}
        self._lock = threading.RLock()
        self.stats = {"embedded": 0, "from_cache": 0}

    @property
    def lock(self) -> threading.RLock:
        """Held while the index changes; hold it to use row numbers from :meth:`rank`."""
        return self._lock

    def covers(self, query: str) -> bool:
        covers = getattr(self.embedder, "covers", None)
        return bool(covers(query)) if callable(covers) else True

    def stage(self, items: Iterable[tuple[str, str]]) -> None:
        """Tools (key, text) to (re-)embed before the next query."""
        with self._lock:
            self._pending.update(items)

    def remove(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._pending.pop(key, None)
                self.index.remove(key)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            self.index.clear()

    def flush(self) -> None:
        """Embed what is staged: each distinct text once, from the cache where it is there."""
        with self._lock:
            if not self._pending:
                return
            by_text: dict[str, list[str]] = {}
            for key, text in self._pending.items():
                by_text.setdefault(text, []).append(key)
            texts = list(by_text)
            cached: dict[str, Any] = {}
            cache_keys: dict[str, bytes] = {}
            if self.cache is not None and self.model_id:
                cache_keys = {t: EmbeddingCache.key(self.model_id, t) for t in texts}
                hits = self.cache.get_many(list(cache_keys.values()), self.index.dim)
                cached = {t: hits[k] for t, k in cache_keys.items() if k in hits}
                self.stats["from_cache"] += len(cached)
            missing = [t for t in texts if t not in cached]
            fresh: Any = None
            if missing:
                fresh = _as_matrix(self.embedder(missing), len(missing), self._source)
                self.stats["embedded"] += len(missing)
                if self.cache is not None:
                    self.cache.put_many((cache_keys[t], v) for t, v in zip(missing, fresh))
            keys = [k for t in texts for k in by_text[t]]
            if fresh is not None and not cached and len(keys) == len(texts):
                matrix = fresh  # the usual build: every text new, one tool each
            else:
                dim = fresh.shape[1] if fresh is not None else len(next(iter(cached.values())))
                matrix = np.empty((len(keys), dim), dtype=np.float32)
                at = {t: i for i, t in enumerate(missing)}
                row = 0
                for t in texts:
                    vec = fresh[at[t]] if t not in cached else _unit(cached[t])
                    for _ in by_text[t]:
                        matrix[row] = vec
                        row += 1
            self.index.set(keys, matrix)
            self._pending = {}

    def rank(self, query: str, n: int) -> DenseRanking | None:
        """The dense side for ``query`` (its ``n`` best rows), ``None`` when it has nothing
        to say: an empty index, or a query whose vector is zero."""
        self.flush()
        with self._lock:
            if len(self.index) == 0:
                return None
            qvec = _as_matrix(self.embedder([query]), 1, self._source)[0]
            if not qvec.any():
                return None
            sims = self.index.similarities(qvec)
            std = float(sims.std())
            z = (sims - float(sims.mean())) / std if std > 0 else np.zeros_like(sims)
            n = min(n, sims.size)
            top = np.argpartition(sims, sims.size - n)[sims.size - n :]
            order = top[np.lexsort((top, -sims[top]))]
            # Only requests in a language the embedder covers: another's vector is noise.
            requests = [r for r in split_requests(query) if self.covers(r)]
            if not requests:
                return DenseRanking(sims, z, order)
            vectors = _as_matrix(self.embedder(requests), len(requests), self._source)
            keep = vectors.any(axis=1)
            if not keep.any():
                return DenseRanking(sims, z, order)
            vectors = vectors[keep]
            # Mean and spread of each request's similarities from an even sample of the
            # rows: a few hundred microseconds at most, whatever the size of the index.
            sample = self.index.sample(_STATS_SAMPLE)
            stats = np.stack([_rowdot(sample, v) for v in vectors], axis=1)
            spread = stats.std(axis=0)
            spread[spread == 0] = 1.0
            return DenseRanking(sims, z, order,
                                tuple(r for r, k in zip(requests, keep.tolist()) if k),
                                vectors, stats.mean(axis=0), spread)

    def effective_z(self, dense: DenseRanking, rows: Sequence[int]) -> tuple[Any, Any]:
        """For ``rows``: the best z of the whole query and of each request, and which request
        gave it (-1: the whole query)."""
        idx = np.asarray(rows, dtype=np.int64)
        z = dense.z[idx].astype(np.float64)
        which = np.full(idx.size, -1, dtype=np.int64)
        if dense.request_vectors is None or idx.size == 0:
            return z, which
        vecs = self.index.rows(idx)
        rz = (np.stack([_rowdot(vecs, v) for v in dense.request_vectors], axis=1)
              - dense.request_mean) / dense.request_std
        best = rz.argmax(axis=1)
        top = rz[np.arange(idx.size), best]
        better = top > z
        return np.where(better, top, z), np.where(better, best, which)

    def row_of(self, key: str) -> int | None:
        return self.index.row_of(key)

    def key_of(self, row: int) -> str:
        return self.index.key_of(row)

    def memory_bytes(self) -> int:
        return self.index.nbytes

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


@frozen
class FusedHit:
    key: str
    score: float
    lexical_rank: int | None
    lexical_score: float
    dense_rank: int | None
    similarity: float | None
    z: float | None
    request: str | None = None  # the request of the query that gave ``z``, if not the whole


def fuse(lexical: Sequence[tuple[str, float]], dense: DenseRanking | None,
         search: SemanticSearch, weight: float, limit: int) -> list[FusedHit]:
    """The ``limit`` best of both sides' candidates by ``lexical / best lexical +
    weight * z / 10`` (``z``: the best of the whole query's and each request's); candidates
    only the dense side found need ``z > 0``. Without a dense side this is the lexical
    ranking itself."""
    best = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
    cands: dict[str, list[Any]] = {}
    for rank, (key, score) in enumerate(lexical, 1):
        cands[key] = [score / best, rank, score, None]
    zs: dict[str, tuple[float, int]] = {}
    if dense is not None:
        for rank, row in enumerate(dense.order.tolist(), 1):
            key = search.key_of(row)
            entry = cands.get(key)
            if entry is None:
                if dense.z[row] <= 0:
                    continue
                entry = cands[key] = [0.0, None, 0.0, None]
            entry[3] = rank
        rows: list[int] = []
        keys: list[str] = []
        for key in cands:
            row = search.row_of(key)
            if row is not None:
                rows.append(row)
                keys.append(key)
        z, which = search.effective_z(dense, rows)
        zs = {k: (float(v), int(w)) for k, v, w in zip(keys, z.tolist(), which.tolist())}
    inf = math.inf
    scored: list[tuple[float, float, float, str]] = []
    for key, (norm, lrank, _lscore, drank) in cands.items():
        fused = norm
        if key in zs:
            fused += weight * zs[key][0] / _Z_SCALE
        scored.append((-fused, lrank or inf, drank or inf, key))
    scored.sort()
    out: list[FusedHit] = []
    for neg, _, _, key in scored[:limit]:
        _norm, lrank, lscore, drank = cands[key]
        sim = z_eff = request = None
        if dense is not None and key in zs:
            row = search.row_of(key)
            assert row is not None
            sim = float(dense.similarities[row])
            z_eff, part = zs[key]
            request = dense.requests[part] if part >= 0 else None
        out.append(FusedHit(key, -neg, lrank, lscore, drank, sim, z_eff, request))
    return out
