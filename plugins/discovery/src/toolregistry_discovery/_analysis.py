"""Text analysis shared by documents and queries.

Pipeline: Unicode NFKC, identifier splitting (``read_file``, ``a.b-c``, ``getHTTPResponse``),
case folding, light stemming of English words (plurals, -ed, -ing), and overlapping character bigrams plus
unigrams for runs of Han, Kana and Hangul (these scripts do not put spaces between words, so
``压缩文件`` becomes ``压缩 缩文 文件`` + ``压 缩 文 件``). With the ``zh`` extra (rjieba: jieba's
dictionary and algorithm in Rust) Chinese text gets words instead of bigrams: the segmenter's
words, with the shorter words inside long ones, plus the characters (``压缩 文件`` + ``压 缩 文
件``); text with Kana or Hangul in it (Japanese, Korean) keeps the bigrams.

Queries also learn which of their terms may *anchor* a hit: stop words are dropped, filler
words ("please", "tool", 帮我, ...) and CJK unigrams next to bigrams still add to the score but
never make a tool match on their own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import is_
from typing import TypeVar

from ._stem import _STEPPED_ENDS, stem

__all__ = ["FILLER_WORDS", "STOP_WORDS", "Memo", "Vocabulary", "analyze", "analyze_query",
           "term_ids", "texts_terms"]

T = TypeVar("T")

_CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0003134f"  # CJK Extensions B-G
)
_TOKEN_RE = re.compile(f"([{_CJK_CLASS}]+)|([^\\W_]+)")
_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")
# Kana or Hangul anywhere in a text: Japanese or Korean, which a Chinese segmenter would cut
# wrongly; their Han runs keep the bigrams.
_NOT_CHINESE = re.compile("[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\uac00-\ud7af]")
_WORD_RE = re.compile(r"[^\W_]+")
# The same words in ASCII text, found faster: every byte but a letter or a digit becomes a
# space, then ``split()`` (``_ascii_words``; the regex scans character by character).
_ASCII_SEP = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
# The same for many texts at once, joined by "\x01" (kept, to cut them apart again).
_TEXT_SEP = "\x01"
_BULK_SEP = _ASCII_SEP[:1] + b"\x01" + _ASCII_SEP[2:]
# Split points inside an identifier: lower/digit -> Upper, and ACRONYMWord.
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CAMEL_SEARCH = _CAMEL_RE.search


def _words(*blocks: str) -> frozenset[str]:
    return frozenset(w for block in blocks for w in block.split())


STOP_WORDS = _words(
    """
    a an the of to in on at by for with from into onto and or nor but is are was were be been
    being am this that these those it its as than then there their theirs which who whom whose
    what when where why how if so such do does did doing i me my mine we us our ours you your
    yours he him his she her hers they them have has had having would should could can will
    shall may might must also just very too some both either neither here while because etc
    e g ie eg whether
    """
)
"""Function words: dropped from documents and queries alike. Words that can carry a tool's
meaning ("between", "before", "up", "not", "all") are kept."""

FILLER_WORDS = _words(
    """
    please pls kindly help want wants wanted need needs needed like would tool tools function
    functions method methods api use using used call calling invoke something someone thing
    things way able try hi hello hey thanks thank let lets know tell give show find get make
    """,
    """
    请 帮 我 你 的 了 吗 呢 吧 啊 和 与 及 或 在 是 把 被 给 用 想 要 能 会 个 一 这 那
    帮我 请帮 我想 我要 想要 需要 一个 一下 可以 能够 使用 工具 函数 方法 如何 怎么 怎样
    什么 哪个 这个 那个 帮忙 麻烦 请问 的话
    の は が を に で と も て た だ です ます する した ください ツール 関数
    을 를 이 가 은 는 에 의 도 로 으로 하다 주세요 도구 함수
    """,
)
"""Words that add to a score but never make a tool match on their own."""

_MAX_CACHE = 200_000

_segmenter: list[Callable[[str], list[str]] | None] = []  # resolved on first Chinese text


def _load_segmenter() -> Callable[[str], list[str]] | None:
    """The Chinese word segmenter (rjieba, the ``zh`` extra) or ``None`` where it is not
    installed: Chinese then gets character bigrams like the other CJK scripts."""
    try:
        import rjieba
    except ImportError:
        return None
    cut: Callable[[str], list[str]] = rjieba.cut_for_search
    return cut


def _chinese_segmenter() -> Callable[[str], list[str]] | None:
    if not _segmenter:
        _segmenter.append(_load_segmenter())
    return _segmenter[0]


def _segment(run: str) -> list[str]:
    cut = _chinese_segmenter()
    assert cut is not None
    return cut(run)


def use_segmenter(cut: Callable[[str], list[str]] | bool | None) -> None:
    """Set the Chinese segmenter of this process: a function from a run of Han characters to
    its words, ``None``/``False`` for bigrams, ``True`` for the default (rjieba where it is
    installed). The process-wide caches of analysed text start over."""
    _segmenter[:] = [_load_segmenter() if cut is True else (cut or None)]
    _text_terms.clear()
    _chinese_memo.clear()


def _ascii_words(text: str) -> list[str]:
    """``_WORD_RE.findall(text)`` for ASCII ``text``."""
    return text.encode().translate(_ASCII_SEP).decode().split()


def _word(raw: str) -> tuple[str, ...]:
    """:func:`_split_word`, the common case (a word that does not split: lower case,
    capitalised, all capitals or digits) done inline: what the word cache computes."""
    if _CAMEL_SEARCH(raw) is not None:
        return _split_word(raw)
    low = raw.casefold()
    if low in STOP_WORDS:
        return ()
    if len(low) > 2 and (low[-1] in _STEPPED_ENDS or low[-1] == low[-2]):
        return (stem(low),)
    return (low,)  # stem() would leave it as it is


def _split_word(raw: str) -> tuple[str, ...]:
    """Terms for one alphanumeric token: camelCase parts, plus the whole word when split."""
    if raw.isdigit():
        return (raw,)  # common in names and texts ("00017", "5"): the term as it is
    # Only mixed case can split ("getHTTP").
    cased = raw.islower() or raw.isupper()
    parts = [raw] if cased else _CAMEL_RE.split(raw)
    out: list[str] = []
    for part in parts:
        low = part.casefold()
        if low in STOP_WORDS or not low:
            continue
        out.append(stem(low))
    if len(parts) > 1:
        # Keep the compound too, so "JavaScript" still meets "javascript".
        whole = raw.casefold()
        if whole not in STOP_WORDS:
            out.append(stem(whole))
    return tuple(out)


class Memo(dict[str, T]):
    """A dict that computes a missing value with ``compute`` (lookups of known keys stay in
    C), holding at most ``limit`` entries: it starts over when full."""

    def __init__(self, compute: Callable[[str], T], limit: int = _MAX_CACHE) -> None:
        super().__init__()
        self._compute = compute
        self._limit = limit

    def __missing__(self, key: str) -> T:
        value = self._compute(key)
        if len(self) >= self._limit:
            self.clear()
        self[key] = value
        return value


def _split_cjk(run: str) -> tuple[str, ...]:
    if len(run) == 1:
        return (run,)
    return tuple(run[i : i + 2] for i in range(len(run) - 1)) + tuple(run)


def _split_chinese(run: str) -> tuple[str, ...]:
    """Terms of a run of Han characters in Chinese text: the words the segmenter finds (with
    the shorter words inside long ones), then the characters."""
    if len(run) == 1:
        return (run,)
    return tuple(w for w in _segment(run) if len(w) > 1) + tuple(run)


# Shared by every index of the process: words recur across registries.
_word_memo = Memo(_word)
_word_terms = _word_memo.__getitem__
_cjk_terms = Memo(_split_cjk).__getitem__
_chinese_memo = Memo(_split_chinese)
_chinese_terms = _chinese_memo.__getitem__


# The terms of each text, shared by every index of the process: an index rebuilt, the
# private suggestion index of a registry that changed, another registry of the same tools.
# Filled by term_ids() (ASCII texts, inline: no call per new text) and texts_terms(), emptied
# when it reaches the limit.
_TEXT_LIMIT = 1 << 16
_text_terms: dict[str, tuple[str, ...]] = {}


def _normalize(text: str) -> str:
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def analyze(text: str) -> list[str]:
    """Index terms of a document field (order kept, repeats kept for term frequency)."""
    if not text:
        return []
    if text.isascii():
        # Fast path (most tool text): no normalisation and no CJK runs to look for.
        return list(chain.from_iterable(map(_word_terms, _ascii_words(text))))
    terms: list[str] = []
    extend = terms.extend
    text = _normalize(text)
    han = _han_terms(text)
    for cjk, word in _TOKEN_RE.findall(text):
        extend((han if han is not None and _HAN_RUN.fullmatch(cjk) else _cjk_terms)(cjk)
               if cjk else _word_terms(word))
    return terms


def _han_terms(text: str) -> Callable[[str], tuple[str, ...]] | None:
    """The terms of Han runs in ``text`` when it is Chinese and a segmenter is installed (the
    segmenter loads on the first text with Han characters, not on other non-ASCII text)."""
    if _NOT_CHINESE.search(text) or not _HAN_RUN.search(text) or _chinese_segmenter() is None:
        return None
    return _chinese_terms


def _query_word(word: str) -> tuple[tuple[str, bool], ...]:
    """(term, may anchor) for one alphanumeric query token."""
    cased = word.islower() or word.isupper() or word.isdigit()
    parts = [word] if cased else _CAMEL_RE.split(word)
    out: list[tuple[str, bool]] = []
    for part in parts + ([word] if len(parts) > 1 else []):
        low = part.casefold()
        if not low or low in STOP_WORDS:
            continue
        out.append((stem(low), low not in FILLER_WORDS))
    return tuple(out)


_query_terms = Memo(_query_word).__getitem__


def analyze_query(text: str) -> dict[str, bool]:
    """Query terms mapped to whether they may anchor a hit (``False`` for filler).

    Bare numbers ("5 units", "in 2021") are left out when the query has words to match:
    they are arguments to a tool, not a description of it.
    """
    out: dict[str, bool] = {}
    if text.isascii():  # most queries: no normalisation, no CJK run to look for
        for word in _ascii_words(text):
            for term, anchor in _query_terms(word):
                out[term] = out.get(term, False) or anchor
    else:
        text = _normalize(text)
        han = _han_terms(text)
        for cjk, word in _TOKEN_RE.findall(text):
            if cjk and han is not None and len(cjk) > 1 and _HAN_RUN.fullmatch(cjk):
                run = set(cjk)
                for term in han(cjk):
                    if term in run:  # a character: ranks, never anchors
                        out.setdefault(term, False)
                    else:
                        out[term] = out.get(term, False) or term not in FILLER_WORDS
                continue
            if cjk:
                if len(cjk) == 1:
                    out[cjk] = out.get(cjk, False) or cjk not in FILLER_WORDS
                    continue
                for i in range(len(cjk) - 1):
                    gram = cjk[i : i + 2]
                    out[gram] = out.get(gram, False) or gram not in FILLER_WORDS
                for ch in cjk:
                    # Unigrams help ranking but would match half a corpus on their own.
                    out.setdefault(ch, False)
                continue
            for term, anchor in _query_terms(word):
                out[term] = out.get(term, False) or anchor
    if any(anchor and not t.isdigit() for t, anchor in out.items()):
        out = {t: a for t, a in out.items() if not t.isdigit()}
    return out


def texts_terms(texts: list[str]) -> list[tuple[str, ...]]:
    """:func:`analyze` of each of ``texts``, as tuples, through the process-wide cache of
    texts; the ASCII texts it does not hold yet are cut apart in one pass for all of them."""
    known = _text_terms
    got: list[tuple[str, ...] | None] = list(map(known.get, texts))
    if None not in got:
        return got  # type: ignore[return-value]
    missing = list(dict.fromkeys(compress(texts, map(is_, got, repeat(None)))))
    fresh: dict[str, tuple[str, ...]] = {}
    plain = [t for t in missing if t.isascii()]
    if len(plain) < len(missing):
        fresh.update((t, tuple(analyze(t))) for t in missing if not t.isascii())
    if plain:
        parts = _TEXT_SEP.join(plain).encode().translate(_BULK_SEP).decode().split(_TEXT_SEP)
        if len(parts) != len(plain):  # a text holds the separator itself
            fresh.update((t, tuple(analyze(t))) for t in plain)
        else:
            terms = _word_terms
            fresh.update(zip(plain, [tuple(chain.from_iterable(map(terms, part.split())))
                                     for part in parts]))
    if len(known) + len(fresh) > _TEXT_LIMIT:
        known.clear()
    known.update(fresh)
    return list(map(fresh.get, texts, got))  # type: ignore[arg-type]


class Vocabulary(dict[str, int]):
    """Term -> id; looking up an unknown term numbers it (ids are dense, never reused)."""

    def __missing__(self, term: str) -> int:
        i = self[term] = len(self)
        return i


def term_ids(vocab: Vocabulary, analyzer: Callable[[str], list[str]], limit: int
             ) -> Memo[tuple[int, ...]]:
    """Text -> the term ids of its analysis under ``vocab``, each distinct text analysed once
    (at most ``limit`` held). With the default analyser ASCII text goes straight from words to
    ids through the process-wide word cache."""
    to_id = vocab.__getitem__
    known = _text_terms
    known_terms = known.get
    sep = _ASCII_SEP

    def compute(text: str) -> tuple[int, ...]:
        if analyzer is analyze and text.isascii():
            terms = known_terms(text)
            if terms is None:
                words = text.encode().translate(sep).decode().split()  # _ascii_words, inlined
                terms = tuple(chain.from_iterable(map(_word_terms, words)))
                if len(known) >= _TEXT_LIMIT:
                    known.clear()
                known[text] = terms
            return tuple(map(to_id, terms))
        return tuple(map(to_id, analyzer(text)))

    return Memo(compute, limit)
