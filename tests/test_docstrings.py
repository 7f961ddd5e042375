"""Docstrings: the single-pass Google reader agrees with docstring-parser; other styles fall
back to docstring-parser."""

from __future__ import annotations

import inspect

import docstring_parser
from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry._docstrings import _parse_google, parse_docstring

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
