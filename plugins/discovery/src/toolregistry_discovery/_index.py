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

Terms are numbered as they are first seen, and each distinct text is analysed once (parameter
names, shared parameter descriptions and tags repeat across tools); a document's terms join a
pending batch that becomes a compressed-sparse-row segment in one numpy sort
(:mod:`._postings`), 8 bytes a posting. A large batch with the default analyser (a build) is
analysed all at once: its texts through :func:`~._analysis.texts_terms`, its new terms
numbered in one pass, its term ids collected as arrays; the index is the same as document
by document. Removal marks the document dead; its postings are
skipped by queries and swept out once the dead outnumber the live, so the amortised cost
stays O(document size).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from typing import Any

import numpy as np
from attrs import frozen

from ._analysis import Vocabulary, analyze, analyze_query, term_ids, texts_terms
from ._fields import DEFAULT_FIELD_WEIGHTS
from ._postings import Postings

__all__ = ["DEFAULT_FIELD_WEIGHTS", "BM25FIndex", "Hit"]

_TEXT_CACHE = 1 << 16  # analysed texts kept per index (bounded: cleared when full)
_SAT_CACHE = 1 << 20  # saturated frequencies (and times idf) kept per index: 8 MiB, then cleared
_MIN_DELTA = 1e-200  # a delta this large keeps every posting's share of a score above 0.0

FieldValue = str | Iterable[str] | None
"""A field's text: one string, several strings (analysed one by one), or nothing."""
Texts = tuple[str | tuple[str, ...], ...]
"""A document's fields in index order, each a string or a tuple of strings."""


@frozen
class Hit:
    """One search result: the document key and its score."""

    key: str
    score: float


def _top(scores: Any, k: int) -> Any:
    """Positions of the ``k`` highest ``scores``; among equal scores at the cut, the first."""
    part = np.argpartition(-scores, k - 1)[:k]
    kth = scores[part].min()
    if np.count_nonzero(scores == kth) == np.count_nonzero(scores[part] == kth):
        return part  # no tie across the cut: the partition's choice is the only one
    above = np.flatnonzero(scores > kth)
    return np.concatenate([above, np.flatnonzero(scores == kth)[: k - above.size]])


class BM25FIndex:
    """A mutable BM25F index of documents made of named text fields.

    ``field_weights`` names the fields and their boosts (a weight of 0 ignores a field);
    ``k1``, ``b`` and ``delta`` are the BM25+ parameters. ``analyzer`` turns field text into
    terms and ``query_analyzer`` turns a query into ``{term: may_anchor}``; a document is a
    hit only when it matches at least one anchoring term.
    """

    # Thresholds (instance attributes may override them, as the tests do).
    _compact_min_dead = 64  # dead documents before the postings are swept
    _batch_flush = 1024  # a batch of at least this many documents becomes a segment at once
    _pending_max = 1 << 20  # term ids collected before a segment is built regardless
    _sort_all = 512  # candidates a query sorts whole (more: the top k are partitioned out first)
    _bulk_min = 64  # documents from which a batch is analysed all at once (default analyser)

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
        self._vocab = Vocabulary()
        self._texts = term_ids(self._vocab, self._analyze, _TEXT_CACHE)
        self._text_ids = self._texts.__getitem__
        self._postings = Postings(self._weights)
        self._ids: dict[str, int] = {}  # live key -> slot
        self._keys: list[str | None] = []  # slot -> key (None when dead)
        self._fields: list[Texts | None] = []  # slot -> texts
        self._dl = np.zeros(64, dtype=np.float32)  # slot -> weighted length (0 when dead)
        self._total_len = 0.0
        self._dead = 0
        self._version = 0
        self._norm_cache: tuple[int, Any] | None = None
        # Per term id, the saturated frequency of each posting, ``(k1 + 1) * wtf / (wtf +
        # norm) + delta``: it depends on avgdl, so any change empties it.
        self._sat: dict[int, Any] = {}
        self._scored: dict[int, Any] = {}  # the same times the term's idf (no dead documents)
        self._sat_version = -1
        self._sat_size = 0

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def keys(self) -> list[str]:
        """Keys of the indexed documents, in insertion order."""
        with self._lock:
            return [k for k in self._keys if k is not None]

    def _field_texts(self, fields: Mapping[str, FieldValue]) -> Texts:
        if not self._field_names.issuperset(fields):
            unknown = fields.keys() - self._field_names
            raise ValueError(
                f"unknown index field(s) {sorted(unknown)}; known fields: "
                f"{sorted(self.field_weights)}"
            )
        out: list[str | tuple[str, ...]] = []
        get = fields.get
        for fname in self.field_weights:
            value = get(fname)
            if value is None:
                out.append("")
            elif type(value) is str:
                out.append(value)
            elif isinstance(value, str):
                out.append(str(value))
            else:
                out.append(tuple(map(str, value)))
        return tuple(out)

    def term_ids(self, text: str) -> tuple[int, ...]:
        """The ids of ``text``'s terms in this index, numbering new ones (cached per text)."""
        with self._lock:
            return self._text_ids(text)

    def _add_locked(self, docs: Iterable[tuple[str, Texts]]) -> int:
        """Index ``docs``; returns how many. A document whose analysis fails is left out
        whole (and any earlier version of it stays), then the error propagates."""
        ids_of, keys, stored = self._ids, self._keys, self._fields
        postings = self._postings
        pending_ids, pending_counts = postings.ids, postings.counts
        collect = pending_ids.extend
        count = pending_counts.append
        text_ids = self._text_ids
        weights = self._weights
        pending_max = self._pending_max
        if isinstance(docs, list):
            self._reserve(len(keys) + len(docs))  # for the whole batch, not per document
        dl = self._dl
        first = len(keys)
        total = self._total_len  # summed in the same order as document by document
        mark_ids, mark_counts = len(pending_ids), len(pending_counts)
        try:
            for key, texts in docs:
                mark_ids, mark_counts = len(pending_ids), len(pending_counts)
                length = 0.0
                for w, value in zip(weights, texts):
                    if not w or not value:
                        count(0)
                        continue
                    if type(value) is str:
                        ids = text_ids(value)
                        n = len(ids)
                        collect(ids)
                    else:
                        n = 0
                        for ids in map(text_ids, value):
                            n += len(ids)
                            collect(ids)
                    count(n)
                    length += w * n
                if key in ids_of:
                    self._total_len = total
                    self._remove_locked(key)
                    total = self._total_len
                slot = len(keys)
                ids_of[key] = slot
                keys.append(key)
                stored.append(texts)
                if slot == dl.size:
                    dl = self._dl = np.concatenate([dl, np.zeros(slot, dtype=np.float32)])
                dl[slot] = length
                total += length
                if len(pending_ids) >= pending_max:
                    postings.flush(len(self._vocab), settle=False)
        except BaseException:
            del pending_ids[mark_ids:], pending_counts[mark_counts:]
            raise
        finally:
            self._total_len = total
            self._version += 1
        return len(keys) - first

    def _reserve(self, slots: int) -> None:
        """Room for ``slots`` document lengths (grown at least twofold)."""
        if slots > self._dl.size:
            grown = np.zeros(max(2 * self._dl.size, slots), dtype=np.float32)
            grown[: self._dl.size] = self._dl
            self._dl = grown

    def _add_bulk_locked(self, docs: list[tuple[str, Texts]]) -> int:
        """:meth:`_add_locked` for the default analyser, a batch at a time: the batch's texts
        are analysed together (:func:`texts_terms`), their terms numbered in one pass and
        collected as arrays; the index is the same as document by document."""
        step = max(1, self._pending_max // 64)  # documents analysed at once
        for at in range(0, len(docs), step):
            self._add_part(docs[at : at + step] if step < len(docs) else docs)
        return len(docs)

    def _add_part(self, docs: list[tuple[str, Texts]]) -> None:
        weights = self._weights
        flat: list[str] = []  # every text of the part, document by document, field by field
        per_field: list[int] = []  # how many of them each field of each document has
        one, several, n_texts = flat.append, flat.extend, per_field.append
        for _key, texts in docs:
            for w, value in zip(weights, texts):
                if not w or not value:
                    n_texts(0)
                elif type(value) is str:
                    one(value)
                    n_texts(1)
                else:
                    several(value)
                    n_texts(len(value))
        terms = texts_terms(flat)
        vocab = self._vocab
        sizes = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
        ends = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ends[1:])
        # New terms are numbered as they come (Vocabulary.__missing__).
        ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(terms)), dtype=np.int64,
                          count=int(ends[-1]))
        nt = np.asarray(per_field, dtype=np.int64)
        last = np.cumsum(nt)
        counts = ends[last] - ends[last - nt]  # term ids per document and field
        per_doc = counts.reshape(len(docs), len(weights)).astype(np.float64)
        lengths = np.zeros(len(docs))
        for f, w in enumerate(weights):  # field by field, as _add_locked sums them
            if w:
                lengths += w * per_doc[:, f]
        # Documents in: the same steps as _add_locked's, document by document.
        ids_of, keys, stored = self._ids, self._keys, self._fields
        first = len(keys)
        self._reserve(first + len(docs))
        self._dl[first : first + len(docs)] = lengths
        keys.extend([key for key, _ in docs])
        stored.extend([texts for _, texts in docs])
        total = self._total_len
        try:
            slot = first
            for (key, _), length in zip(docs, lengths.tolist()):
                if key in ids_of:
                    self._total_len = total
                    self._remove_locked(key)
                    total = self._total_len
                ids_of[key] = slot
                slot += 1
                total += length
        finally:
            self._total_len = total
            self._version += 1
        postings = self._postings
        postings.add_arrays(ids, counts)
        if postings.pending_ids >= self._pending_max:
            postings.flush(len(vocab), settle=False)

    def _flush_locked(self) -> None:
        postings = self._postings
        if postings.counts or postings.chunks or postings.unsettled:
            postings.flush(len(self._vocab))

    def add(self, key: str, fields: Mapping[str, FieldValue]) -> None:
        """Index (or re-index) the document ``key``; missing fields are empty.

        A field given as several strings is analysed string by string (for the default
        analyser that is the same as analysing them joined with spaces).
        """
        texts = self._field_texts(fields)
        with self._lock:
            self._add_locked(((key, texts),))

    def add_many(self, docs: Iterable[tuple[str, Mapping[str, FieldValue]]]) -> None:
        """Index several documents (a large batch is indexed in one go)."""
        field_texts = self._field_texts
        self.add_texts([(key, field_texts(fields)) for key, fields in docs])

    def add_texts(self, docs: Iterable[tuple[str, Texts]]) -> None:
        """:meth:`add_many` for documents already given as one value per field, in the order
        of ``field_weights``: a string or a tuple of strings (not checked: the fast path)."""
        with self._lock:
            if self._analyze is analyze and type(docs) is list and len(docs) >= self._bulk_min:
                added = self._add_bulk_locked(docs)
            else:
                added = self._add_locked(docs)
            if added >= self._batch_flush:
                self._flush_locked()
                # The texts of a bulk build are mostly done with: keep the memory, not them.
                self._texts.clear()

    def remove(self, key: str) -> bool:
        """Drop ``key`` from the index; ``False`` when it was not there."""
        with self._lock:
            if key not in self._ids:
                return False
            self._remove_locked(key)
            self._version += 1
            if self._dead >= self._compact_min_dead and self._dead > len(self._ids):
                self._compact()
            return True

    def _remove_locked(self, key: str) -> None:
        slot = self._ids.pop(key)
        self._total_len -= float(self._dl[slot])
        self._dl[slot] = 0.0
        self._keys[slot] = None
        self._fields[slot] = None
        self._dead += 1

    def _compact(self) -> None:
        """Sweep dead slots out of the postings and renumber the live ones."""
        n = len(self._keys)
        alive = np.fromiter((k is not None for k in self._keys), dtype=bool, count=n)
        self._postings.compact(alive, len(self._vocab))
        self._keys = [k for k in self._keys if k is not None]
        self._fields = [f for f in self._fields if f is not None]
        dl = self._dl[:n][alive]
        self._dl = np.concatenate([dl, np.zeros(max(64, dl.size), dtype=np.float32)])
        self._ids = {k: i for i, k in enumerate(self._keys) if k is not None}
        self._dead = 0
        self._total_len = float(dl.sum(dtype=np.float64))

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
        dl = self._dl[: len(self._keys)].astype(np.float64)
        norms = self.k1 * (1.0 - self.b + self.b * dl / avgdl)
        self._norm_cache = (self._version, norms)
        return norms

    def _idf(self, df: int) -> float:
        n = len(self._ids)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _postings_of(self, term_ids: list[int], scored: bool = False
                     ) -> tuple[list[int], Any, Any, list[int]]:
        """For the terms of ``term_ids`` that have postings: their positions in
        ``term_ids``, the slots of all their postings and each posting's saturated
        frequency (term after term), and the number of postings per term.

        ``scored`` (only without dead documents, whose postings would count in ``df``):
        each posting's share of the score, the saturated frequency times the term's idf."""
        self._flush_locked()
        found = [(i, run[0], run[1])
                 for i, run in enumerate(self._postings.of_terms(term_ids)) if run is not None]
        if not found:
            return [], np.empty(0, dtype=np.int32), np.empty(0), []
        if self._sat_version != self._version or self._sat_size > _SAT_CACHE:
            self._sat.clear()
            self._scored.clear()
            self._sat_version = self._version
            self._sat_size = 0
        sat = self._sat
        missing = [f for f in found if term_ids[f[0]] not in sat]
        if missing:
            # One vectorised pass for every term this query is the first to use.
            if len(missing) == 1:
                d, w = missing[0][1], missing[0][2].astype(np.float64)
            else:
                d = np.concatenate([m[1] for m in missing])
                w = np.concatenate([m[2] for m in missing]).astype(np.float64)
            den = self._norms()[d]
            den += w
            fresh = w * (self.k1 + 1.0)
            fresh /= den
            fresh += self.delta
            at = 0
            for i, docs_i, _ in missing:
                sat[term_ids[i]] = fresh[at : at + docs_i.size]
                at += docs_i.size
            self._sat_size += at
        present = [i for i, _, _ in found]
        sizes = [docs_i.size for _, docs_i, _ in found]
        if scored:
            shares, n, log = self._scored, len(self._ids), math.log
            values = []
            for i, df in zip(present, sizes):
                t = term_ids[i]
                v = shares.get(t)
                if v is None:
                    v = shares[t] = sat[t] * log(1.0 + (n - df + 0.5) / (df + 0.5))
                    self._sat_size += df
                values.append(v)
        else:
            values = [sat[term_ids[i]] for i in present]
        if len(found) == 1:
            return present, found[0][1], values[0], sizes
        docs = np.concatenate([docs_i for _, docs_i, _ in found])
        return present, docs, np.concatenate(values), sizes

    def _live(self, docs: Any, per_posting: Any, sizes: list[int]) -> tuple[Any, Any, Any]:
        """Drop dead documents' postings: (slots, values, term index of each posting)."""
        tpos = np.repeat(np.arange(len(sizes)), sizes)
        if self._dead and docs.size:
            live = self._dl[docs] > 0  # a live document without text has no postings
            return docs[live], per_posting[live], tpos[live]
        return docs, per_posting, tpos

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
            vocab = self._vocab
            term_ids: list[int] = []
            anchors: list[bool] = []
            for term, anchor in terms.items():
                i = vocab.get(term)
                if i is not None:
                    term_ids.append(i)
                    anchors.append(anchor)
            if not any(anchors):
                return []
            dead = self._dead
            present, docs, sat, sizes = self._postings_of(term_ids, scored=not dead)
            if not present:
                return []
            # Every matched term anchors (the usual query): the candidates are the documents
            # with a posting, i.e. a score > 0 (each posting adds at least delta * idf > 0).
            every = self.delta >= _MIN_DELTA and all(anchors[i] for i in present)
            anchor_docs = None
            if dead:
                docs, sat, tpos = self._live(docs, sat, sizes)
                dfs = np.bincount(tpos, minlength=len(sizes)).tolist()
                if not every:
                    anchor_docs = docs[np.asarray([anchors[i] for i in present])[tpos]]
                n = len(self._ids)
                log = math.log
                idf = np.asarray([log(1.0 + (n - df + 0.5) / (df + 0.5)) for df in dfs])
                shares = sat * idf[tpos]
            else:
                shares = sat  # already times idf
                if not every:
                    anchor_docs = docs[np.repeat([anchors[i] for i in present], sizes)]
            if docs.size == 0 or (anchor_docs is not None and anchor_docs.size == 0):
                return []
            slots = len(self._keys)
            scores = np.bincount(docs, minlength=slots, weights=shares)
            if anchor_docs is None:
                cand = np.flatnonzero(scores > 0.0)
            else:
                anchored = np.zeros(slots, dtype=bool)
                anchored[anchor_docs] = True
                cand = np.flatnonzero(anchored)
            cs = scores[cand]
            keys = self._keys
            if cand.size <= self._sort_all:
                # Few candidates: those scoring at least the k-th best score (the top k and
                # any tied with it), sorted by score, then slot.
                if cand.size > top_k:
                    cut = cand.size - top_k
                    keep = np.flatnonzero(cs >= np.partition(cs, cut)[cut])
                    cand, cs = cand[keep], cs[keep]
                best = sorted(zip((-cs).tolist(), cand.tolist()))[:top_k]
                return [Hit(keys[c] or "", -s) for s, c in best]
            if cand.size > top_k:
                keep = _top(cs, top_k)
                cand, cs = cand[keep], cs[keep]
            order = np.lexsort((cand, -cs))
            return [Hit(keys[c] or "", s) for c, s in zip(cand[order].tolist(),
                                                          cs[order].tolist())]

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
            for w, value in zip(self._weights, texts):
                counts: dict[str, float] = {}
                if w and value:
                    for text in (value,) if isinstance(value, str) else value:
                        for t in self._analyze(text):
                            if t in terms:
                                counts[t] = counts.get(t, 0.0) + w
                per_field.append(counts)
            matched = [t for t in terms if any(t in c for c in per_field)]
            dfs: list[int] = []
            if matched:
                ids = [self._vocab[t] for t in matched]
                present, docs, sat, sizes = self._postings_of(ids)
                live_sizes = np.bincount(self._live(docs, sat, sizes)[2], minlength=len(sizes))
                dfs = [0] * len(ids)
                for i, df in zip(present, live_sizes.tolist()):
                    dfs[i] = df
            fields = dict.fromkeys(self.field_weights, 0.0)
            by_term: dict[str, float] = {}
            for t, df in zip(matched, dfs):
                wtf = sum(c.get(t, 0.0) for c in per_field)
                wtf32 = float(np.float32(wtf))
                s = self._idf(df) * (wtf32 * (self.k1 + 1.0) / (wtf32 + norm) + self.delta)
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
            self._flush_locked()
            return self._postings.nbytes
