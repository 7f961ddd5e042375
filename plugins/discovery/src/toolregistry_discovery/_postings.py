"""Postings in compressed sparse rows: batches of documents become immutable segments.

A segment maps each term id to the documents (slots) that contain it and their field-weighted
term frequencies, sorted by term and then by slot: term ``t`` owns ``docs[ptr[t]:ptr[t+1]]``
and ``wtf[ptr[t]:ptr[t+1]]``. Term ids at or beyond ``len(ptr) - 1`` have no postings there.

Documents arrive as term ids in a flat Python list (per document, per field); a batch becomes
a segment with one integer sort of packed ``term | slot | field`` keys, so Python touches each
term once and numpy does the grouping. Segments cover increasing, disjoint ranges of slots, so
two neighbours merge in linear time (each entry's place is known without sorting); the newest
merges into its neighbour while that is at most twice as large, like a binary counter: a
document takes part in O(log n) merges and a query meets O(log n) segments (one after a
bulk build).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Postings", "Segment"]

_I64 = np.int64


class Segment:
    """Postings of one batch of documents (read-only numpy arrays)."""

    __slots__ = ("docs", "ptr", "wtf")

    def __init__(self, ptr: Any, docs: Any, wtf: Any) -> None:
        self.ptr = ptr  # int64, one more than the terms it covers
        self.docs = docs  # int32 slots
        self.wtf = wtf  # float32 field-weighted term frequencies

    def __len__(self) -> int:
        return int(self.docs.size)

    @property
    def nbytes(self) -> int:
        return int(self.ptr.nbytes + self.docs.nbytes + self.wtf.nbytes)

    def terms(self) -> Any:
        """The term id of every entry."""
        return np.repeat(np.arange(self.ptr.size - 1, dtype=_I64), np.diff(self.ptr))

    def padded_ptr(self, n_terms: int) -> Any:
        """``ptr`` extended (with empty rows) to cover ``n_terms`` terms."""
        short = n_terms + 1 - self.ptr.size
        if short <= 0:
            return self.ptr
        return np.concatenate([self.ptr, np.full(short, self.ptr[-1], dtype=_I64)])


def _segment(terms: Any, docs: Any, wtf: Any, n_terms: int) -> Segment:
    """A segment from entries already sorted by (term, slot)."""
    ptr = np.zeros(n_terms + 1, dtype=_I64)
    np.cumsum(np.bincount(terms, minlength=n_terms), out=ptr[1:])
    return Segment(ptr, docs.astype(np.int32, copy=False), wtf.astype(np.float32, copy=False))


def build_segment(ids: Sequence[int] | Any, counts: Sequence[int] | Any,
                  weights: Sequence[float], first_slot: int, n_terms: int) -> Segment:
    """Index a batch: ``ids`` are the term ids of consecutive documents from ``first_slot``,
    field by field in ``weights`` order, and ``counts[d * len(weights) + f]`` says how many of
    them document ``d`` has in field ``f`` (lists or int64 arrays). Repeats of a term in a
    document add up."""
    n_fields = len(weights)
    n_docs = len(counts) // n_fields
    flat = (ids if isinstance(ids, np.ndarray) else
            np.fromiter(ids, dtype=_I64, count=len(ids)))
    per = np.asarray(counts, dtype=_I64)
    field_bits = max(1, (n_fields - 1).bit_length())
    doc_bits = max(1, n_docs.bit_length())
    shift = field_bits + doc_bits
    if shift + max(1, n_terms.bit_length()) > 62:  # pragma: no cover - billions of documents
        raise OverflowError("batch too large to index at once; add it in smaller parts")
    key = flat << shift
    key |= np.repeat(np.arange(n_docs, dtype=_I64), per.reshape(n_docs, n_fields).sum(axis=1)
                     ) << field_bits
    key |= np.repeat(np.tile(np.arange(n_fields, dtype=_I64), n_docs), per)
    key.sort()
    w = np.asarray(weights, dtype=np.float64)[key & ((1 << field_bits) - 1)]
    pair = key >> field_bits  # (term, document) with the field dropped
    if pair.size:
        starts = np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))
        wtf = np.add.reduceat(w, starts) if starts.size < pair.size else w
        pair = pair[starts]
    else:
        wtf = w
    docs = (pair & ((1 << doc_bits) - 1)) + first_slot
    return _segment(pair >> doc_bits, docs, wtf, n_terms)


def merge(older: Segment, newer: Segment) -> Segment:
    """One segment holding both (every slot of ``newer`` is above every slot of ``older``)."""
    n_terms = max(older.ptr.size, newer.ptr.size) - 1
    pa, pb = older.padded_ptr(n_terms), newer.padded_ptr(n_terms)
    ptr = pa + pb
    size = len(older) + len(newer)
    docs = np.empty(size, dtype=np.int32)
    wtf = np.empty(size, dtype=np.float32)
    # Within a term the older entries come first: an older entry moves down by the newer
    # entries of smaller terms, a newer one by the older entries of its term and below.
    at_old = np.arange(len(older), dtype=_I64) + pb[older.terms()]
    at_new = np.arange(len(newer), dtype=_I64) + pa[1:][newer.terms()]
    docs[at_old], wtf[at_old] = older.docs, older.wtf
    docs[at_new], wtf[at_new] = newer.docs, newer.wtf
    return Segment(ptr, docs, wtf)


class Postings:
    """The segments of an index plus the batch still being collected."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = tuple(weights)
        self.segments: list[Segment] = []
        self.ids: list[int] = []  # term ids of the pending documents
        self.counts: list[int] = []  # per pending document and field
        # Pending documents given as arrays (a bulk add), before those of the lists above.
        self.chunks: list[tuple[Any, Any]] = []
        self.first_slot = 0  # slot of the first pending document
        self.unsettled = 0  # segments added since the last settle()

    @property
    def pending(self) -> int:
        """Documents collected but not yet in a segment."""
        if not self.weights:
            return 0
        return (len(self.counts) + sum(int(c.size) for _, c in self.chunks)) // len(self.weights)

    @property
    def pending_ids(self) -> int:
        """Term ids collected but not yet in a segment."""
        return len(self.ids) + sum(int(i.size) for i, _ in self.chunks)

    def add_arrays(self, ids: Any, counts: Any) -> None:
        """Collect documents given as int64 arrays (as ``ids`` and ``counts`` hold them)."""
        if self.counts:  # documents collected before these come first
            self.chunks.append((np.asarray(self.ids, dtype=_I64),
                                np.asarray(self.counts, dtype=_I64)))
            del self.ids[:], self.counts[:]
        self.chunks.append((ids, counts))

    def flush(self, n_terms: int, *, settle: bool = True) -> None:
        """Turn the pending documents into a segment, then :meth:`settle` unless told not to
        (a batch too large to collect at once flushes parts and settles at its end)."""
        n_docs = self.pending
        if n_docs:
            ids: Any = self.ids
            counts: Any = self.counts
            if self.chunks:
                chunks = self.chunks
                if counts:
                    chunks.append((np.asarray(ids, dtype=_I64), np.asarray(counts, dtype=_I64)))
                ids = chunks[0][0] if len(chunks) == 1 else np.concatenate([i for i, _ in chunks])
                counts = (chunks[0][1] if len(chunks) == 1 else
                          np.concatenate([c for _, c in chunks]))
            seg = build_segment(ids, counts, self.weights, self.first_slot, n_terms)
            self.first_slot += n_docs
            # Emptied in place: a batch being added holds bound methods of these lists.
            del self.ids[:], self.counts[:]
            self.chunks = []
            self.segments.append(seg)
            self.unsettled += 1
        if settle:
            self.settle()

    def settle(self) -> None:
        """Merge the segments of the last batch into one, then merge the newest segment into
        its older neighbour while that is at most twice as large."""
        segs = self.segments
        while self.unsettled > 1:
            last = segs.pop()
            segs[-1] = merge(segs[-1], last)
            self.unsettled -= 1
        self.unsettled = 0
        while len(segs) > 1 and len(segs[-2]) <= 2 * len(segs[-1]):
            last = segs.pop()
            segs[-1] = merge(segs[-1], last)

    def of_terms(self, term_ids: Sequence[int]) -> list[tuple[Any, Any] | None]:
        """Per term id: its postings (slots ascending, frequencies), ``None`` for none.

        With one segment (the usual case after a bulk build) these are views, not copies.
        """
        if len(self.segments) == 1:
            # A few scalar reads cost less than the vectorised lookup for a query's terms.
            seg = self.segments[0]
            ptr, sd, sw = seg.ptr, seg.docs, seg.wtf
            last = ptr.size - 1
            one: list[tuple[Any, Any] | None] = []
            for t in term_ids:
                s = int(ptr[t]) if t < last else 0
                e = int(ptr[t + 1]) if t < last else 0
                one.append((sd[s:e], sw[s:e]) if e > s else None)
            return one
        q = np.asarray(term_ids, dtype=_I64)
        found: list[list[tuple[Any, Any]]] = [[] for _ in term_ids]
        for seg in self.segments:
            ptr, sd, sw = seg.ptr, seg.docs, seg.wtf
            last = ptr.size - 1
            starts = ptr[np.minimum(q, last)].tolist()
            ends = ptr[np.minimum(q + 1, last)].tolist()
            for runs, s, e in zip(found, starts, ends):
                if e > s:
                    runs.append((sd[s:e], sw[s:e]))
        return [
            None if not runs else runs[0] if len(runs) == 1 else
            (np.concatenate([d for d, _ in runs]), np.concatenate([w for _, w in runs]))
            for runs in found
        ]

    def compact(self, alive: Any, n_terms: int) -> None:
        """Drop the postings of dead slots (``alive`` is False) and renumber the rest."""
        self.flush(n_terms)
        remap = np.cumsum(alive, dtype=_I64) - 1
        if self.segments:
            terms = np.concatenate([s.terms() for s in self.segments])
            docs = np.concatenate([s.docs for s in self.segments])
            wtf = np.concatenate([s.wtf for s in self.segments])
            keep = alive[docs]
            terms, docs, wtf = terms[keep], remap[docs[keep]], wtf[keep]
            order = np.argsort((terms << 32) | docs, kind="stable")
            self.segments = [_segment(terms[order], docs[order], wtf[order], n_terms)]
        self.first_slot = int(alive.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held by the segments and the pending batch (list slots only)."""
        return (sum(s.nbytes for s in self.segments) + 8 * (len(self.ids) + len(self.counts))
                + sum(int(i.nbytes + c.nbytes) for i, c in self.chunks))
