"""An incremental BM25F index over a handful of weighted text fields.

Scoring is the "simple" BM25F (Robertson & Zaragoza): a term's frequency in a document is
the field-weighted sum ``sum_f w_f * tf_f``, the document length is the field-weighted
length, and the usual BM25 saturation and length normalisation apply on top, with the BM25+
lower bound ``delta`` for every matched term::

    score(q, d) = sum_t idf(t) * ((k1 + 1) * wtf / (wtf + k1 * (1 - b + b * dl / avgdl)) + delta)
    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))

Because ``wtf`` does not depend on the rest of the corpus it is computed once when a
document is added and stored in the postings; ``idf`` and ``avgdl`` are applied at query time.
Adding or removing a document therefore costs O(size of the document), and a query walks only
the postings of its own terms (vectorised with numpy).

Postings are compact ``array`` buffers (4-byte doc id + 4-byte weight). Removal marks the
document dead; dead entries are swept out of the postings once they outnumber the live ones,
so the amortised cost stays O(document size).
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from attrs import frozen

from ._analysis import analyze, analyze_query

__all__ = ["DEFAULT_FIELD_WEIGHTS", "BM25FIndex", "Hit"]

DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = {
    "name": 3.0,
    "description": 2.0,
    "search_hint": 2.0,
    "tags": 1.5,
    "params": 1.0,
    "param_descriptions": 0.5,
}
"""The spec's five fields and weights, plus parameter descriptions at a lower weight."""

_COMPACT_MIN_DEAD = 64


@frozen
class Hit:
    """One search result: the document key and its score."""

    key: str
    score: float


class BM25FIndex:
    """A mutable BM25F index of documents made of named text fields.

    ``field_weights`` names the fields and their boosts (a weight of 0 ignores a field);
    ``k1``, ``b`` and ``delta`` are the BM25+ parameters. ``analyzer`` turns field text into
    terms and ``query_analyzer`` turns a query into ``{term: may_anchor}``; a document is a
    hit only when it matches at least one anchoring term.
    """

    def __init__(
        self,
        field_weights: Mapping[str, float] | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        delta: float = 1.0,
        analyzer: Callable[[str], list[str]] = analyze,
        query_analyzer: Callable[[str], Mapping[str, bool]] = analyze_query,
    ) -> None:
        weights = dict(DEFAULT_FIELD_WEIGHTS if field_weights is None else field_weights)
        for fname, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0 or math.isnan(w):
                raise ValueError(
                    f"field weight for {fname!r} must be a number >= 0, got {w!r}"
                )
        if k1 < 0 or not 0.0 <= b <= 1.0 or delta < 0:
            raise ValueError(
                f"BM25 parameters out of range: k1={k1!r} (>= 0), b={b!r} (0..1), "
                f"delta={delta!r} (>= 0)"
            )
        self.field_weights: dict[str, float] = {k: float(v) for k, v in weights.items()}
        self._weights = tuple(self.field_weights.values())
        self._field_names = frozenset(self.field_weights)
        self.k1 = float(k1)
        self.b = float(b)
        self.delta = float(delta)
        self._analyze = analyzer
        self._analyze_query = query_analyzer
        self._lock = threading.RLock()
        self._clear()

    # -- storage -----------------------------------------------------------------------

    def _clear(self) -> None:
        # term -> [doc ids, weighted term frequencies, live document frequency]
        self._postings: dict[str, list[Any]] = {}
        self._ids: dict[str, int] = {}  # live key -> slot
        self._keys: list[str | None] = []  # slot -> key (None when dead)
        self._fields: list[tuple[str, ...] | None] = []  # slot -> field texts
        self._dl = array("f")  # slot -> weighted length (0 when dead)
        self._total_len = 0.0
        self._dead = 0
        self._version = 0
        self._norm_cache: tuple[int, Any] | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def keys(self) -> list[str]:
        """Keys of the indexed documents, in insertion order."""
        with self._lock:
            return [k for k in self._keys if k is not None]

    def _field_texts(self, fields: Mapping[str, str | Iterable[str] | None]) -> tuple[str, ...]:
        unknown = fields.keys() - self._field_names
        if unknown:
            raise ValueError(
                f"unknown index field(s) {sorted(unknown)}; known fields: "
                f"{sorted(self.field_weights)}"
            )
        out: list[str] = []
        for fname in self.field_weights:
            value = fields.get(fname)
            if value is None:
                out.append("")
            elif isinstance(value, str):
                out.append(value)
            else:
                out.append(" ".join(str(v) for v in value))
        return tuple(out)

    def _weighted_terms(self, texts: tuple[str, ...]) -> tuple[dict[str, float], float]:
        wtf: dict[str, float] = {}
        length = 0.0
        get = wtf.get
        for w, text in zip(self._weights, texts):
            if not w or not text:
                continue
            terms = self._analyze(text)
            length += w * len(terms)
            for t in terms:
                wtf[t] = get(t, 0.0) + w
        return wtf, length

    def add(self, key: str, fields: Mapping[str, str | Iterable[str] | None]) -> None:
        """Index (or re-index) the document ``key``; missing fields are empty."""
        texts = self._field_texts(fields)
        wtf, length = self._weighted_terms(texts)
        with self._lock:
            if key in self._ids:
                self._remove_locked(key)
            slot = len(self._keys)
            self._ids[key] = slot
            self._keys.append(key)
            self._fields.append(texts)
            self._dl.append(length)
            self._total_len += length
            postings = self._postings
            get = postings.get
            for t, v in wtf.items():
                p = get(t)
                if p is None:
                    postings[t] = [array("i", (slot,)), array("f", (v,)), 1]
                else:
                    p[0].append(slot)
                    p[1].append(v)
                    p[2] += 1
            self._version += 1

    def add_many(
        self, docs: Iterable[tuple[str, Mapping[str, str | Iterable[str] | None]]]
    ) -> None:
        """Index several documents."""
        for key, fields in docs:
            self.add(key, fields)

    def remove(self, key: str) -> bool:
        """Drop ``key`` from the index; ``False`` when it was not there."""
        with self._lock:
            if key not in self._ids:
                return False
            self._remove_locked(key)
            self._version += 1
            if self._dead >= _COMPACT_MIN_DEAD and self._dead > len(self._ids):
                self._compact()
            return True

    def _remove_locked(self, key: str) -> None:
        slot = self._ids.pop(key)
        texts = self._fields[slot]
        assert texts is not None
        wtf, _ = self._weighted_terms(texts)
        for t in wtf:
            self._postings[t][2] -= 1
        self._total_len -= self._dl[slot]
        self._dl[slot] = 0.0
        self._keys[slot] = None
        self._fields[slot] = None
        self._dead += 1

    def _compact(self) -> None:
        """Sweep dead slots out of the postings and renumber the live ones."""
        alive = np.fromiter((k is not None for k in self._keys), dtype=bool, count=len(self._keys))
        remap = np.cumsum(alive, dtype=np.int64) - 1
        new_postings: dict[str, list[Any]] = {}
        for t, (docs, ws, df) in self._postings.items():
            if df <= 0:
                continue
            d = np.frombuffer(docs, dtype=np.int32)
            keep = alive[d]
            nd = array("i", remap[d[keep]].astype(np.int32).tobytes())
            nw = array("f", np.frombuffer(ws, dtype=np.float32)[keep].tobytes())
            del d, keep
            new_postings[t] = [nd, nw, df]
        self._postings = new_postings
        self._keys = [k for k in self._keys if k is not None]
        self._fields = [f for f in self._fields if f is not None]
        self._dl = array("f", np.frombuffer(self._dl, dtype=np.float32)[alive].tobytes())
        self._ids = {k: i for i, k in enumerate(self._keys) if k is not None}
        self._dead = 0
        self._total_len = float(np.frombuffer(self._dl, dtype=np.float32).sum(dtype=np.float64))

    def clear(self) -> None:
        """Drop every document."""
        with self._lock:
            self._clear()

    # -- querying ----------------------------------------------------------------------

    def _norms(self) -> Any:
        """``k1 * (1 - b + b * dl / avgdl)`` per slot, cached until the index changes."""
        cached = self._norm_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        n = len(self._ids)
        avgdl = self._total_len / n if n and self._total_len > 0 else 1.0
        dl = np.frombuffer(self._dl, dtype=np.float32).astype(np.float64)
        norms = self.k1 * (1.0 - self.b + self.b * dl / avgdl)
        self._norm_cache = (self._version, norms)
        return norms

    def _idf(self, df: int) -> float:
        n = len(self._ids)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, top_k: int = 5) -> list[Hit]:
        """The ``top_k`` best documents for ``query``, best first (ties in insertion order)."""
        if top_k < 1:
            return []
        terms = self._analyze_query(query)
        if not terms or not any(terms.values()):
            return []
        with self._lock:
            if not self._ids:
                return []
            norms = self._norms()
            slots = len(self._keys)
            # Gather every query term's postings, then score them all in a few vector
            # operations: per-term numpy calls would dominate long queries.
            docs: list[Any] = []
            weights: list[Any] = []
            idfs: list[float] = []
            sizes: list[int] = []
            anchor_docs: list[Any] = []
            for term, anchor in terms.items():
                p = self._postings.get(term)
                if p is None or p[2] <= 0:
                    continue
                # The ids are copied because they outlive this loop; the weight views are
                # dropped right after concatenation. Both happen under the lock that add()
                # takes, so no append meets a buffer pinned by a view.
                d = np.frombuffer(p[0], dtype=np.int32).copy()
                docs.append(d)
                weights.append(np.frombuffer(p[1], dtype=np.float32))
                idfs.append(self._idf(p[2]))
                sizes.append(len(d))
                if anchor:
                    anchor_docs.append(d)
            if not anchor_docs:
                return []
            all_docs = np.concatenate(docs) if len(docs) > 1 else docs[0]
            all_w = (np.concatenate(weights) if len(weights) > 1 else weights[0]).astype(
                np.float64)
            del weights
            idf = np.repeat(np.asarray(idfs), sizes)
            contrib = idf * (all_w * (self.k1 + 1.0) / (all_w + norms[all_docs]) + self.delta)
            scores = np.bincount(all_docs, weights=contrib, minlength=slots)
            anchored = np.zeros(slots, dtype=bool)
            anchored[np.concatenate(anchor_docs) if len(anchor_docs) > 1 else anchor_docs[0]] = True
            if self._dead:
                anchored &= np.frombuffer(self._dl, dtype=np.float32) > 0
                # A live document with no indexed text has dl 0 but no postings either.
            cand = np.flatnonzero(anchored)
            if cand.size == 0:
                return []
            cs = scores[cand]
            if cand.size > top_k:
                part = np.argpartition(-cs, top_k - 1)[:top_k]
                cand, cs = cand[part], cs[part]
            order = np.lexsort((cand, -cs))
            keys = self._keys
            return [Hit(keys[int(cand[i])] or "", float(cs[i])) for i in order]

    def explain(self, key: str, query: str) -> dict[str, Any]:
        """How each field and each query term adds up to ``key``'s score for ``query``."""
        terms = self._analyze_query(query)
        with self._lock:
            slot = self._ids.get(key)
            if slot is None:
                raise KeyError(f"{key!r} is not in the index")
            texts = self._fields[slot]
            assert texts is not None
            norm = float(self._norms()[slot])
            per_field: list[dict[str, float]] = []
            for w, text in zip(self.field_weights.values(), texts):
                counts: dict[str, float] = {}
                if w and text:
                    for t in self._analyze(text):
                        if t in terms:
                            counts[t] = counts.get(t, 0.0) + w
                per_field.append(counts)
            fields = dict.fromkeys(self.field_weights, 0.0)
            by_term: dict[str, float] = {}
            for t in terms:
                wtf = sum(c.get(t, 0.0) for c in per_field)
                if wtf <= 0:
                    continue
                p = self._postings.get(t)
                idf = self._idf(p[2] if p else 1)
                wtf32 = float(np.float32(wtf))
                s = idf * (wtf32 * (self.k1 + 1.0) / (wtf32 + norm) + self.delta)
                by_term[t] = s
                for fname, c in zip(self.field_weights, per_field):
                    if t in c:
                        fields[fname] += s * c[t] / wtf
            return {
                "fields": {f: round(v, 4) for f, v in fields.items() if v},
                "terms": {t: round(v, 4) for t, v in by_term.items()},
                "doc_length": float(self._dl[slot]),
                "avg_doc_length": self._total_len / len(self._ids) if self._ids else 0.0,
            }

    def memory_bytes(self) -> int:
        """An estimate of the postings' buffer sizes (the bulk of the index)."""
        with self._lock:
            total = 0
            for docs, ws, _ in self._postings.values():
                total += docs.buffer_info()[1] * docs.itemsize + ws.buffer_info()[1] * ws.itemsize
            return total
