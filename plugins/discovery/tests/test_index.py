"""BM25FIndex and the text analysis on their own."""

from __future__ import annotations

import math
import random
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry_discovery import BM25FIndex, _analysis
from toolregistry_discovery._analysis import _WORD_RE, _ascii_words, analyze, analyze_query
from toolregistry_discovery._stem import (
    _has_vowel,
    _is_cons,
    _measure,
    _stem_letters,
    _stem_plain,
    stem,
)


def test_analyze_identifiers() -> None:
    assert analyze("read_file") == ["read", "file"]
    assert analyze("files.read-bytes") == ["file", "read", "byte"]
    assert analyze("getHTTPResponse") == ["get", "http", "respons", "gethttprespons"]


def test_analyze_cjk_bigrams_and_unigrams() -> None:
    from toolregistry_discovery import _analysis

    _analysis.use_segmenter(None)  # Chinese as without the zh extra: character bigrams
    try:
        assert analyze("压缩文件") == ["压缩", "缩文", "文件", "压", "缩", "文", "件"]
    finally:
        _analysis.use_segmenter(True)
    # rjieba's words, the shorter words inside a long one first, then the characters
    assert analyze("压缩文件") == ["压缩", "文件", "压缩文件", "压", "缩", "文", "件"]
    assert analyze("天") == ["天"]
    q = analyze_query("帮我压缩文件")
    assert q["压缩"] and q["文件"]
    assert not q.get("帮我") and not q["压"]  # filler, unigrams never anchor


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_words_are_the_regex_words(text: str) -> None:
    # The ASCII fast path (bytes.translate + split) finds exactly the regex's words.
    assert _ascii_words(text) == _WORD_RE.findall(text)


def test_ascii_words_every_character() -> None:
    every = "".join(map(chr, range(128)))
    assert _ascii_words(every) == _WORD_RE.findall(every) == ["0123456789",
                                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                                              "abcdefghijklmnopqrstuvwxyz"]
    # filler "get" kept without anchoring, "the" dropped, the number dropped beside words
    assert analyze_query("Get_the weather-report, 2 days") == {
        "get": False, "weather": True, "report": True, "dai": True}


def test_stemmer_classes() -> None:
    for a, b in [("reading", "read"), ("files", "file"), ("compressed", "compress"),
                 ("calculating", "calculate"), ("emails", "email"), ("cities", "city"),
                 ("archiving", "archive"), ("added", "add"), ("using", "use")]:
        assert stem(a) == stem(b), (a, b)
    assert stem("status") == "status"
    assert stem("translation") != stem("translate")  # light: derivations stay apart


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aeiouybcdfglmnrstwxzAY", max_size=10))
def test_stem_shortcuts_agree_with_the_letter_by_letter_rules(word: str) -> None:
    cons = [_is_cons(word, i) for i in range(len(word))]
    assert _measure(word) == sum(1 for a, b in pairwise(cons) if not a and b)
    assert _has_vowel(word) == (not all(cons))
    if len(word) > 2 and word.islower() and word[-1] not in "sdgye" and word[-1] != word[-2]:
        assert stem(word) == word  # no step applies to such an ending


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


def _check_against_reference(index: BM25FIndex, docs: dict[str, dict[str, str]],
                             weights: dict[str, float], query: str) -> None:
    assert len(index) == len(docs)
    assert index.keys() == list(docs)
    expected = _bm25_reference(docs, weights, query)
    hits = index.search(query, top_k=100)
    got = {h.key: h.score for h in hits}
    assert set(got) == set(expected)
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, rel=1e-4, abs=1e-6)


op_st = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 9), doc_st),
    st.tuples(st.just("remove"), st.integers(0, 9), st.none()),
    st.tuples(st.just("batch"), st.integers(0, 9),
              st.lists(st.tuples(st.integers(0, 9), doc_st), max_size=8)),
    st.tuples(st.just("search"), st.integers(0, 9), st.none()),
)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(op_st, max_size=60),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    small=st.booleans(),
    bulk=st.booleans(),
)
def test_incremental_index_matches_reference(ops: list[tuple[str, int, Any]], query: str,
                                            small: bool, bulk: bool) -> None:
    """Any mix of single adds, batches, removals and queries scores like the formula.

    With ``small`` thresholds, batches are cut into several segments mid-way, queries
    meet several segments, and dead documents are swept out often; with ``bulk`` every
    batch is analysed all at once (as a large one is), else document by document."""
    weights = {"name": 3.0, "description": 2.0, "params": 1.0}
    index = BM25FIndex(weights)
    index._bulk_min = 1 if bulk else 1 << 30
    if small:
        index._pending_max = 7
        index._batch_flush = 2
        index._compact_min_dead = 1
        index._sort_all = 0  # the top k partitioned out of the candidates
    docs: dict[str, dict[str, str]] = {}

    def put(key: str, fields: dict[str, str]) -> None:
        docs.pop(key, None)
        docs[key] = fields

    for op, i, arg in ops:
        key = f"doc{i}"
        if op == "add":
            index.add(key, arg)
            put(key, arg)
        elif op == "batch":
            index.add_many((f"doc{j}", fields) for j, fields in arg)
            for j, fields in arg:
                put(f"doc{j}", fields)
        elif op == "remove":
            assert index.remove(key) == (key in docs)
            docs.pop(key, None)
        else:
            _check_against_reference(index, docs, weights, query)
    _check_against_reference(index, docs, weights, query)


def test_a_batch_larger_than_one_segment_is_all_indexed() -> None:
    """A batch collected in several parts keeps every document (and ends in one segment)."""
    index = BM25FIndex({"name": 1.0})
    index._pending_max = 50
    index.add_many((f"k{i}", {"name": f"alpha beta{i % 7} gamma{i}"}) for i in range(2000))
    assert len(index._postings.segments) == 1
    assert {h.key for h in index.search("beta3", top_k=5000)} == {
        f"k{i}" for i in range(2000) if i % 7 == 3}
    assert [h.key for h in index.search("gamma1999", top_k=5)] == ["k1999"]


def test_segments_stay_few_when_adding_one_by_one() -> None:
    index = BM25FIndex({"name": 1.0})
    for i in range(3000):
        index.add(f"k{i}", {"name": f"alpha{i % 11} beta"})
        if i % 3 == 0:
            index.search("beta", top_k=1)  # each query turns the pending documents into a segment
    index.search("beta", top_k=1)
    assert len(index._postings.segments) <= 2 * 3000 .bit_length()
    assert len(index.search("alpha4", top_k=5000)) == len(range(4, 3000, 11))


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


def test_ties_across_the_cut_keep_insertion_order() -> None:
    """When equal scores straddle top_k, the first-added documents are the ones returned:
    every top_k is a prefix of the full ranking (an argpartition alone picks any of them)."""
    rng = random.Random(0)
    texts = ["shared words", "shared shared words", "shared other words here", "shared x y z w"]
    index = BM25FIndex({"name": 1.0})
    index.add_many((f"k{i:03d}", {"name": rng.choice(texts)}) for i in range(120))
    hits = index.search("shared", top_k=1000)
    full = [h.key for h in hits]
    assert len(full) == 120
    assert all(a.score > b.score or (a.score == b.score and a.key < b.key)
               for a, b in pairwise(hits))
    for sort_all in (0, 512):  # top k partitioned out first, or every candidate sorted
        index._sort_all = sort_all
        assert [h.key for h in index.search("shared", top_k=1000)] == full
        for top_k in (1, 2, 3, 5, 10, 17, 40, 119):
            assert [h.key for h in index.search("shared", top_k=top_k)] == full[:top_k]


def test_parameters_checked() -> None:
    with pytest.raises(ValueError, match="BM25 parameters"):
        BM25FIndex(b=2.0)
    with pytest.raises(ValueError, match="unknown index field"):
        BM25FIndex({"name": 1.0}).add("x", {"nope": "text"})


def test_a_document_that_fails_analysis_leaves_the_index_consistent() -> None:
    def picky(text: str) -> list[str]:
        if "boom" in text:
            raise ValueError("cannot analyse boom")
        return analyze(text)

    index = BM25FIndex({"name": 1.0, "description": 1.0}, analyzer=picky)
    index.add("a", {"name": "alpha", "description": "first"})
    with pytest.raises(ValueError, match="boom"):
        index.add_many([("b", {"name": "beta", "description": "second"}),
                        ("a", {"name": "alpha", "description": "boom"}),
                        ("c", {"name": "gamma", "description": "third"})])
    # "b" made it, the failed re-add of "a" kept the old "a", "c" never came.
    assert index.keys() == ["a", "b"]
    assert [h.key for h in index.search("alpha first", top_k=5)] == ["a"]
    assert [h.key for h in index.search("second", top_k=5)] == ["b"]
    index.add("c", {"name": "gamma", "description": "third"})
    assert [h.key for h in index.search("gamma", top_k=5)] == ["c"]
    assert set(index.explain("a", "alpha first")["terms"]) == {"alpha", "first"}


def test_indexes_share_analysis_but_number_terms_their_own_way() -> None:
    """The analysis of a text is cached for the whole process, its term ids per index: two
    indexes that meet the same texts in another order each number them as they come."""
    docs = {"a": {"name": "read file", "description": "Reads the archive of a city."},
            "b": {"name": "send email", "description": "Sends an email to a city."}}
    first, second = BM25FIndex(), BM25FIndex()
    first.add_many(docs.items())
    second.add("c", {"description": "City archive emails."})
    second.add_many(docs.items())
    assert first.term_ids("Sends an email to a city.") != second.term_ids(
        "Sends an email to a city.")
    for q in ("city", "email archive", "read"):
        got = {h.key: h.score for h in second.search(q, 10) if h.key != "c"}
        assert set(got) == {h.key for h in first.search(q, 10)}
    assert [h.key for h in first.search("email", 5)] == ["b"]
    assert [h.key for h in second.search("email", 5)] == ["b", "c"]


_AWKWARD = ["read_file", "getHTTPResponse", "JavaScript", "the of and", "x\u00b2 + y\u00b2",
            "压缩文件 and zip", "Caf\u00e9 menus", "a\x01b \x01", "", "2021 5 units",
            "Reads the FILES, archived", "iPhone iPad", "ÉCOLE", "added adding adds"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.lists(st.sampled_from(_AWKWARD), max_size=3),
                          st.sampled_from(_AWKWARD)), min_size=1, max_size=40),
       st.lists(st.sampled_from(_AWKWARD), min_size=1, max_size=3).map(" ".join))
def test_a_batch_analysed_at_once_is_the_batch_added_one_by_one(
        docs: list[tuple[int, list[str], str]], query: str) -> None:
    """The bulk path (all texts of a batch analysed together) builds the same index as
    document by document: same scores to the last bit, same explanations, whatever the
    text (camelCase, stop words only, non-ASCII, the bulk path's own separator, empty
    fields, several texts in a field, a key repeated in the batch or already indexed)."""
    weights = {"name": 3.0, "description": 2.0, "params": 0.5}
    texts = [(f"k{i}", (name, desc, tuple(params))) for i, params, desc in docs
             for name in [f"tool_{i} " + (params[0] if params else "")]]
    built = []
    for bulk_min in (1, 1 << 30):
        _analysis._word_memo.clear()  # each path analyses every word and text itself
        _analysis._text_terms.clear()
        index = BM25FIndex(weights)
        index._bulk_min = bulk_min
        index.add("k0", {"name": "an older k0", "description": "JavaScript"})
        index.add_texts(texts)
        built.append(index)
    bulk, one_by_one = built
    keys = bulk.keys()
    assert keys == one_by_one.keys()
    for q in (query, "file", "javascript http", "压缩", "x2", "ecole"):
        assert bulk.search(q, 50) == one_by_one.search(q, 50)
        for key in keys:
            assert bulk.explain(key, q) == one_by_one.explain(key, q)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aeiouybcdgslnxzAEBDGSLXYZ0129\u00e9\u00c9", min_size=1, max_size=9))
def test_the_word_cache_splits_words_as_split_word_does(word: str) -> None:
    # _word is _split_word with the common case inline; each word is computed once
    assert _analysis._word(word) == _analysis._split_word(word)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxz", min_size=3, max_size=12))
def test_the_plain_stemmer_is_the_letter_by_letter_one(word: str) -> None:
    # lower-case words without "y" take a shorter way through the same steps
    assert _stem_plain(word) == _stem_letters(word)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab1_.-/ A", max_size=8), st.text(alphabet="ab1_.-/ A", max_size=6))
def test_a_source_name_is_skipped_only_when_its_words_are_the_names(original: str,
                                                                  tail: str) -> None:
    from toolregistry_discovery._fields import _same_words

    for name in (original.replace(".", "_") + tail, tail + original, original + tail):
        assert _same_words(original, name) == set(_ascii_words(original)).issubset(
            _ascii_words(name))
