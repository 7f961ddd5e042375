"""Docstrings: the single-pass Google reader agrees with docstring-parser; other styles fall
back to docstring-parser."""

from __future__ import annotations

import inspect

import docstring_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry._docstrings import _parse_general, _parse_google, _parse_plain, parse_docstring

WORD = st.from_regex(r"[A-Za-z][a-z]{0,8}", fullmatch=True)
SENTENCE = st.lists(WORD, min_size=1, max_size=8).map(lambda ws: " ".join(ws) + ".")


def _reference(doc: str) -> tuple[str, dict[str, str]]:
    parsed = docstring_parser.parse(inspect.cleandoc(doc), style=docstring_parser.DocstringStyle.AUTO)
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p]
    return "\n\n".join(parts), {p.arg_name.split()[0].lstrip("*"): " ".join(p.description.split())
                                for p in parsed.params if p.description}


@st.composite
def google_docstrings(draw: st.DrawFn) -> str:
    lines = [draw(SENTENCE)]
    if draw(st.booleans()):
        lines += ["", *draw(st.lists(SENTENCE, min_size=1, max_size=3))]
    names = draw(st.lists(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True), min_size=1,
                          max_size=5, unique=True))
    lines += ["", draw(st.sampled_from(["Args:", "Arguments:", "Parameters:"]))]
    for name in names:
        typ = draw(st.sampled_from(["", " (int)", " (str, optional)"]))
        lines.append(f"    {name}{typ}: {draw(SENTENCE)}")
        if draw(st.booleans()):
            lines.append(f"        {draw(SENTENCE)}")
    if draw(st.booleans()):
        lines += ["", "Returns:", f"    {draw(SENTENCE)}"]
    if draw(st.booleans()):
        lines += ["", "Raises:", f"    ValueError: {draw(SENTENCE)}"]
    return "\n".join(lines)


@settings(max_examples=200, deadline=None)
@given(google_docstrings())
def test_the_fast_google_reader_agrees_with_docstring_parser(doc: str) -> None:
    fast = _parse_google(doc)
    assert fast is not None
    assert fast == _reference(doc)


def test_other_styles_fall_back() -> None:
    numpy_doc = "Sum.\n\nParameters\n----------\na : int\n    First.\n"
    rest_doc = "Sum.\n\n:param a: First.\n"
    assert _parse_google(numpy_doc) is None and _parse_google(rest_doc) is None
    assert parse_docstring(numpy_doc).params == {"a": "First."}
    assert parse_docstring(rest_doc).params == {"a": "First."}
    unknown = "Sum.\n\nCustom Section:\n    stuff\n"
    assert _parse_google(unknown) is None
    assert parse_docstring(unknown).description.startswith("Sum.")


# --- the plain path: the same answer as the general one -------------------------------------
_BLANKS = st.sampled_from(["", "", " ", "  "])
_INDENT = st.sampled_from(["    ", "    ", "        ", "", "  ", "\t"])
_TEXT = st.lists(st.sampled_from(["Alpha", "beta", "x", "ok.", "e.g.", "value:", "a:b", "Note:",
                                  "Returns", "Args", "(int)", "*", "-", "1.", "Todo:", "é"]),
                 min_size=1, max_size=6).map(" ".join)
_HEADER = st.sampled_from(["Args:", "Arguments:", "Parameters:", "Keyword Args:", "Returns:",
                           "Raises:", "Yields:", "Examples:", "Note:", "Todo:", "See Also:",
                           "Custom:", "Args :", "args:", "Args:  "])
_ARG_NAME = st.sampled_from(["query", "count", "*args", "**kw", "a_b", "bad name"])


@st.composite
def docstrings_like_code(draw: st.DrawFn) -> str:
    """Docstrings as they appear in code (indented after the first line), mostly Google
    style, with the irregularities the plain path must hand over or read alike."""
    indent = draw(_INDENT)
    lines = [draw(_BLANKS) + draw(_TEXT)]
    if draw(st.booleans()):
        deeper = indent + draw(st.sampled_from(["", "", "  "]))  # a margin guessed too deep
        lines += ["", *(deeper + t for t in draw(st.lists(_TEXT, min_size=1, max_size=3)))]
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["", indent])) + draw(_TEXT))
    for _ in range(draw(st.integers(0, 3))):
        lines += [draw(st.sampled_from(["", "", "  "])), indent + draw(_HEADER)]
        sub = indent + draw(st.sampled_from(["    ", "  ", "      "]))
        for _ in range(draw(st.integers(0, 4))):
            typ = draw(st.sampled_from(["", "", " (int)", " (str, optional)"]))
            sep = draw(st.sampled_from([": ", ":", " : ", ":  "]))
            lines.append(f"{sub}{draw(_ARG_NAME)}{typ}{sep}{draw(_TEXT)}")
            if draw(st.booleans()):
                lines.append(sub + draw(st.sampled_from(["    ", " ", "", "   "])) + draw(_TEXT))
    doc = "\n".join(lines)
    return doc + draw(st.sampled_from(["", "\n" + indent, "\n\n", "\n" + indent + "  "]))


@settings(max_examples=2000, deadline=None)
@given(docstrings_like_code())
def test_the_plain_path_answers_as_the_general_one(doc: str) -> None:
    plain = _parse_plain(doc)
    if plain is not None:
        assert plain == _parse_general(doc)


@pytest.mark.parametrize("doc", [
    "Sum.\n\n        Deep first.\n    Shallow later.\n\n    Args:\n        a: First.",
    "Sum.\nvalue:\n\nArgs:\n    a: First.",  # looks like a header the reader does not know
    "Sum.\n\nArgs:  \n    a: First.\n\nReturns:\n    Sum.",  # blanks after a header
    "Sum.\n\n    Args:\n        a: First.\n    Returns:  ",  # the last line too
    "Sum.\n\nArgs:\n    a: First.\n\n:param b: Second.",  # two styles
    "Sum.\n\nArgs:\n    a: First.\n    ---",
    "Sum.\n    :param b: Second.\n\nArgs:\n    a: First.",
    "Sum.\n\nArgs:\n    a: First. ",  # a blank at the very end
    "Sum.\n\nArgs:\n    a: First\u00a0one.",  # a blank str.split knows, not ' '
    "Sum.\n\nArgs:\n\ta: First.",
    "Sum.\n\nArgs:\n    a: First  one.\n    b:\n        Second.",  # blanks to join
    "Sum.\n\nArgs:\n    a: First.\nOops.\n",  # text after a section at indent 0
    "Sum.\n\nCustom:\n    a: First.",
    "Sum.\n\n    Best Practices:\n        - Do.\n\n    Args:\n        a: First.",
])
def test_the_plain_path_hands_over_or_agrees(doc: str) -> None:
    plain = _parse_plain(doc)
    assert plain is None or plain == _parse_general(doc)
    assert parse_docstring(doc) == _parse_general(doc)


def test_common_docstrings_take_the_plain_path() -> None:
    def tool(query: str, count: int = 10) -> str:
        """Search the index.

        Looks the query up and formats the answer.

        Args:
            query: Free-text search query,
                several words.
            count: How many items to return.

        Returns:
            A short text answer.
        """
        return query

    assert _parse_plain(tool.__doc__ or "") == _parse_general(tool.__doc__ or "") == (
        "Search the index.\n\nLooks the query up and formats the answer.",
        {"query": "Free-text search query, several words.", "count": "How many items to return."},
        (),
    )


def test_an_entry_without_a_name_describes_no_parameter() -> None:
    # Found by fuzzing: docstring-parser reads "    : d" under Args: as a parameter named "".
    doc = "Summary.\n\nArgs:\n    : d Raises:\nYields\n    :param\nRaises: Parameters  : int\n    >>>\n"
    parsed = parse_docstring(doc)
    assert "" not in parsed.params
    assert parsed.description.startswith("Summary.")


_PIECES = ["Args:", "Parameters", "----------", ":param", ":param x:", "x:", " : int", "Returns:",
           "Raises:", "    ", "x (int): d", "*args:", "**kw:", ":", "  : desc", "Example:", ">>>",
           "@param", ":type x:", "Yields", "Attributes:", ":param :", "Args:\n    : d", "\t"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from([" ", "\n", "\n    ", ""])),
                min_size=1, max_size=10))
def test_any_docstring_parses_without_raising(parts: list[tuple[str, str]]) -> None:
    doc = "Summary.\n\n" + "".join(a + b for a, b in parts)
    parsed = parse_docstring(doc)
    assert all(name and not name.startswith("*") for name in parsed.params)
