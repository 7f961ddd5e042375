"""A light English stemmer: the inflectional steps of Porter (1980), 1a-1c and 5.

It folds plurals, ``-ed`` / ``-ing`` and a final ``-e`` (``reading`` / ``reads`` / ``read``,
``archives`` / ``archiving`` / ``archive``, ``cities`` / ``city``) and leaves derivations
alone (``translation`` stays apart from ``translate``): tool vocabulary is precise, and the
full Porter conflations (``general`` / ``generate``) cost more than they gain. Documents and
queries go through the same function, so only the equivalence classes matter.
"""

from __future__ import annotations

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")
_CV = str.maketrans("abcdefghijklmnopqrstuvwxz", "vcccvcccvcccccvcccccvcccc")  # not y
_STEPPED_ENDS = frozenset("sdgye")  # the last letters some step looks at (besides a double)


def _is_cons(word: str, i: int) -> bool:
    c = word[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _is_cons(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """The number of vowel-consonant sequences (Porter's *m*)."""
    if "y" not in stem and stem.islower():
        # Without a "y" each letter is a vowel or not on its own: count "vc" in the pattern.
        return stem.translate(_CV).count("vc")
    m = 0
    prev_vowel = False
    for i in range(len(stem)):
        cons = _is_cons(stem, i)
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem: str) -> bool:
    if "y" not in stem:
        return not _VOWELS.isdisjoint(stem)
    return any(not _is_cons(stem, i) for i in range(len(stem)))


def _double_cons(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_cons(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Consonant-vowel-consonant ending, the last not w, x or y (``hop``, not ``box``)."""
    if len(word) < 3:
        return False
    return (
        _is_cons(word, len(word) - 3)
        and not _is_cons(word, len(word) - 2)
        and _is_cons(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


def _step1ab(w: str) -> str:
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        # "-us" / "-is" words (status, analysis) are not plurals.
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
        return w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _double_cons(w) and w[-1] not in "lsz":
                return w[:-1]
            if _measure(w) == 1 and _cvc(w):
                return w + "e"
            return w
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and _has_vowel(w[:-1]):
        return w[:-1] + "i"
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


def _stem_letters(word: str) -> str:
    """Steps 1a-1c and 5 letter by letter (any word; :func:`stem` takes a shorter way for
    lower-case words without a "y", with the same results)."""
    w = _step5(_step1c(_step1ab(word)))
    if _double_cons(w) and w[-1] not in "lsz":
        # Step 1b undoubles "added" -> "ad"; undouble the base form too so "add" meets it.
        w = w[:-1]
    return w


def _stem_plain(w: str) -> str:
    """:func:`_stem_letters` for a word of the letters a-z without "y": whether a letter is a
    consonant does not depend on its neighbours then, so every test reads one pattern of
    "v" and "c" (``p``, kept as long as ``w``)."""
    p = w.translate(_CV)
    if w[-1] == "s":  # 1a
        if w.endswith(("sses", "ies")):
            w, p = w[:-2], p[:-2]
        elif w[-2] not in "sui":  # not -ss, and "-us" / "-is" words are not plurals
            w, p = w[:-1], p[:-1]
    if w.endswith("eed"):  # 1b
        if "vc" in p[:-3]:
            w, p = w[:-1], p[:-1]
    else:
        cut = 2 if w.endswith("ed") else 3 if w.endswith("ing") else 0
        if cut and "v" in p[:-cut]:
            w, p = w[:-cut], p[:-cut]
            if w.endswith(("at", "bl", "iz")):
                w, p = w + "e", p + "v"
            elif len(w) >= 2 and w[-1] == w[-2] and p[-1] == "c" and w[-1] not in "lsz":
                w, p = w[:-1], p[:-1]
            elif p.count("vc") == 1 and p.endswith("cvc") and w[-1] not in "wx":
                w, p = w + "e", p + "v"
    if w[-1] == "e":  # 5 (1c needs a "y")
        m = p.count("vc", 0, len(p) - 1)
        if m > 1 or (m == 1 and not (p.endswith("cvcv") and w[-2] not in "wx")):
            w, p = w[:-1], p[:-1]
    if w.endswith("ll") and p.count("vc") > 1:
        w, p = w[:-1], p[:-1]
    if len(w) >= 2 and w[-1] == w[-2] and p[-1] == "c" and w[-1] not in "lsz":
        w = w[:-1]  # undouble the base form too, as step 1b does ("add" meets "added")
    return w


def stem(word: str) -> str:
    """Stem one lower-case word; short words and non-ASCII-letter words pass through."""
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    if word[-1] not in _STEPPED_ENDS and word[-1] != word[-2]:
        return word  # no -s, -ed, -ing, -y, -e (nor -ll), no double consonant: no step applies
    if "y" in word or not word.islower():
        return _stem_letters(word)
    return _stem_plain(word)
