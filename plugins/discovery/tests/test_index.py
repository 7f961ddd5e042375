"""BM25FIndex and the text analysis on their own."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry_discovery import BM25FIndex
from toolregistry_discovery._analysis import analyze, analyze_query
from toolregistry_discovery._stem import stem


def test_analyze_identifiers() -> None:
    assert analyze("read_file") == ["read", "file"]
    assert analyze("files.read-bytes") == ["file", "read", "byte"]
    assert analyze("getHTTPResponse") == ["get", "http", "respons", "gethttprespons"]


def test_analyze_cjk_bigrams_and_unigrams() -> None:
    assert analyze("压缩文件") == ["压缩", "缩文", "文件", "压", "缩", "文", "件"]
    assert analyze("天") == ["天"]
    q = analyze_query("帮我压缩文件")
    assert q["压缩"] and q["文件"]
    assert not q["帮我"] and not q["压"]  # filler bigram, unigrams never anchor


def test_stemmer_classes() -> None:
    for a, b in [("reading", "read"), ("files", "file"), ("compressed", "compress"),
                 ("calculating", "calculate"), ("emails", "email"), ("cities", "city"),
                 ("archiving", "archive"), ("added", "add"), ("using", "use")]:
        assert stem(a) == stem(b), (a, b)
    assert stem("status") == "status"
    assert stem("translation") != stem("translate")  # light: derivations stay apart


def _bm25_reference(docs: dict[str, dict[str, str]], weights: dict[str, float], query: str,
                    k1: float = 1.5, b: float = 0.75, delta: float = 1.0) -> dict[str, float]:
    """A direct, slow transcription of the formula in _index's docstring."""
    terms = [t for t, anchor in analyze_query(query).items()]
    anchors = {t for t, anchor in analyze_query(query).items() if anchor}
    wtf: dict[str, dict[str, float]] = {}
    dl: dict[str, float] = {}
    for key, fields in docs.items():
        counts: dict[str, float] = {}
        length = 0.0
        for f, text in fields.items():
            toks = analyze(text)
            length += weights[f] * len(toks)
            for t in toks:
                counts[t] = counts.get(t, 0.0) + weights[f]
        wtf[key] = counts
        dl[key] = length
    n = len(docs)
    avgdl = sum(dl.values()) / n if n else 1.0
    out: dict[str, float] = {}
    for key in docs:
        s = 0.0
        hit = False
        for t in terms:
            tf = wtf[key].get(t, 0.0)
            if tf <= 0:
                continue
            hit = hit or t in anchors
            df = sum(1 for k in docs if wtf[k].get(t, 0.0) > 0)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl[key] / avgdl)) + delta)
        if hit:
            out[key] = s
    return out


WORDS = ["read", "file", "write", "weather", "city", "zip", "archive", "email", "send",
         "压缩", "文件", "please", "the", "stock", "price"]
text_st = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
doc_st = st.fixed_dictionaries({"name": text_st, "description": text_st, "params": text_st})


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 9), doc_st),
                 max_size=60),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
)
def test_incremental_index_matches_reference(ops: list[tuple[str, int, dict[str, str]]],
                                            query: str) -> None:
    weights = {"name": 3.0, "description": 2.0, "params": 1.0}
    index = BM25FIndex(weights)
    docs: dict[str, dict[str, str]] = {}
    for op, i, fields in ops:
        key = f"doc{i}"
        if op == "add":
            index.add(key, fields)
            docs.pop(key, None)
            docs[key] = fields
        else:
            assert index.remove(key) == (key in docs)
            docs.pop(key, None)
    assert len(index) == len(docs)
    expected = _bm25_reference(docs, weights, query)
    hits = index.search(query, top_k=100)
    got = {h.key: h.score for h in hits}
    assert set(got) == set(expected)
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, rel=1e-4, abs=1e-6)


def test_compaction_keeps_results() -> None:
    index = BM25FIndex({"name": 1.0})
    for i in range(300):
        index.add(f"k{i}", {"name": f"alpha beta{i % 7}"})
    for i in range(0, 300, 3):
        index.remove(f"k{i}")
    for i in range(0, 300, 3):
        index.remove(f"k{i + 1}")
    assert index._dead == 0 or index._dead <= len(index)  # compaction ran
    assert len(index) == 100
    hits = index.search("beta2", top_k=1000)
    assert {h.key for h in hits} == {f"k{i}" for i in range(2, 300, 3) if i % 7 == 2}


def test_ties_in_insertion_order() -> None:
    index = BM25FIndex({"name": 1.0})
    for key in ("c", "a", "b"):
        index.add(key, {"name": "shared words"})
    assert [h.key for h in index.search("shared", top_k=3)] == ["c", "a", "b"]


def test_parameters_checked() -> None:
    with pytest.raises(ValueError, match="BM25 parameters"):
        BM25FIndex(b=2.0)
    with pytest.raises(ValueError, match="unknown index field"):
        BM25FIndex({"name": 1.0}).add("x", {"nope": "text"})
