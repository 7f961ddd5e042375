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
    if "Best Practices" not in doc:  # the regex needs it; a substring test is much cheaper
        return doc, ()
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


_GOOGLE_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_GOOGLE_ARGS = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args",
                          "Keyword Arguments", "Other Parameters"})
_GOOGLE_OTHER = frozenset({"Returns", "Return", "Yields", "Yield", "Raises", "Raise",
                           "Examples", "Example", "Note", "Notes", "Warning", "Warnings",
                           "Attributes", "See Also", "Todo", "References"})
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NOT_GOOGLE = re.compile(r"^\s*(?:-{3,}|={3,})\s*$|^\s*:(?:param|parameter|arg|argument|key|"
                         r"keyword|type|returns?|rtype|raises?)\b", re.MULTILINE)


def _may_be_not_google(doc: str) -> bool:
    """False when ``doc`` has none of the substrings every match of ``_NOT_GOOGLE`` holds
    (substring tests cost a fraction of the regex's scan of the whole text)."""
    return ("---" in doc or "===" in doc or ":param" in doc or ":arg" in doc or ":key" in doc
            or ":type" in doc or ":return" in doc or ":rtype" in doc or ":raise" in doc)


def _parse_google(doc: str) -> tuple[str, dict[str, str]] | None:
    """A single pass over a plain Google-style docstring (the common case: docstring-parser's
    style detection runs every parser and costs ~10x more). ``None`` when the docstring has
    anything this pass does not know, so the full parser decides."""
    if _may_be_not_google(doc) and _NOT_GOOGLE.search(doc):
        return None
    lines = doc.splitlines()
    head: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent: int | None = None
    for line in lines:
        content = line.lstrip()
        if not content:
            if section is None:
                head.append("")
            continue
        indent = len(line) - len(content)
        m = _GOOGLE_SECTION.match(line) if indent == 0 else None
        if m:
            name = m.group(1).strip()
            if name not in _GOOGLE_ARGS and name not in _GOOGLE_OTHER:
                return None
            section, current, base_indent = name, None, None
            continue
        if section is None:
            if indent == 0 and line.rstrip().endswith(":") and " " not in line.strip():
                return None  # looks like a section header this pass does not know
            head.append(line)
            continue
        if indent == 0:
            return None  # text after a section at the top level: leave it to the parser
        if section not in _GOOGLE_ARGS:
            continue
        if base_indent is None:
            base_indent = indent
        if indent == base_indent:
            am = _GOOGLE_ARG.match(content.rstrip())
            if am is None:
                return None
            current = am.group(1).lstrip("*")
            params[current] = am.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {content.rstrip()}".strip()
        else:
            return None
    text = "\n".join(head).strip()
    short, _, rest = text.partition("\n")
    rest = rest.strip()
    description = f"{short.strip()}\n\n{rest}" if rest else short.strip()
    return description, {k: " ".join(v.split()) for k, v in params.items() if v}


def parse_docstring(doc: str | None) -> ParsedDoc:
    """Parse ``doc``; never raises (an unparsable docstring becomes the description)."""
    if not doc or not doc.strip():
        return EMPTY
    doc = inspect.cleandoc(doc)
    if not _SECTION_HINT.search(doc):
        return ParsedDoc(doc.strip(), {}, ())
    doc, practices = _split_best_practices(doc)
    fast = _parse_google(doc)
    if fast is not None:
        return ParsedDoc(fast[0], fast[1], practices)
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
