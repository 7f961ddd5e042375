"""Docstrings (Google, NumPy, reST) into a description, parameter descriptions and best practices."""

from __future__ import annotations

import inspect
import re

from attrs import frozen

# Markers of a structured docstring; plain prose skips the parser (registration hot path).
_SECTION_HINT = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|"
    r"Attributes|Keyword Args|Keyword Arguments|Other Parameters|See Also|Warnings?|"
    r"Best Practices)\s*:?\s*$|^\s*:(param|parameter|arg|argument|key|keyword|type|returns?|"
    r"rtype|raises?)\b",
    re.MULTILINE,
)
_BEST_PRACTICES = re.compile(r"^([ \t]*)Best Practices\s*:\s*$", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@frozen
class ParsedDoc:
    """What a docstring says: description (no parameter block), per-parameter descriptions."""

    description: str
    params: dict[str, str]
    best_practices: tuple[str, ...]


EMPTY = ParsedDoc("", {}, ())


def _split_best_practices(doc: str) -> tuple[str, tuple[str, ...]]:
    m = _BEST_PRACTICES.search(doc)
    if not m:
        return doc, ()
    indent = len(m.group(1).expandtabs())
    lines = doc[m.end() :].splitlines()
    body: list[str] = []
    rest_start = len(lines)
    for i, line in enumerate(lines):
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            rest_start = i
            break
        body.append(line)
    items: list[str] = []
    for line in body:
        text = line.strip()
        if not text:
            continue
        if _BULLET.match(line) or not items:
            items.append(_BULLET.sub("", line).strip())
        else:
            items[-1] = f"{items[-1]} {text}"
    remaining = doc[: m.start()] + "\n".join(lines[rest_start:])
    return remaining, tuple(items)


def parse_docstring(doc: str | None) -> ParsedDoc:
    """Parse ``doc``; never raises (an unparsable docstring becomes the description)."""
    if not doc or not doc.strip():
        return EMPTY
    doc = inspect.cleandoc(doc)
    if not _SECTION_HINT.search(doc):
        return ParsedDoc(doc.strip(), {}, ())
    doc, practices = _split_best_practices(doc)
    import docstring_parser

    try:
        parsed = docstring_parser.parse(doc, style=docstring_parser.DocstringStyle.AUTO)
    except docstring_parser.ParseError:
        return ParsedDoc(doc.strip(), {}, practices)
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p]
    params = {
        p.arg_name.split()[0].lstrip("*"): " ".join(p.description.split())
        for p in parsed.params
        if p.description
    }
    return ParsedDoc("\n\n".join(parts), params, practices)
