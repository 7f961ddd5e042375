"""Docstrings (Google, NumPy, reST) into a description, parameter descriptions and best practices."""

from __future__ import annotations

import inspect
import re
from typing import NamedTuple

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


class ParsedDoc(NamedTuple):
    """What a docstring says: description (no parameter block), per-parameter descriptions.
    (A named tuple: one is made per registered tool, and attrs' frozen init costs three
    ``object.__setattr__`` calls.)"""

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
# The header lines as they are nearly always written, and whether they start an argument
# section (any other line at indent 0 goes through _GOOGLE_SECTION).
_HEADER_LINES = {f"{name}:": name in _GOOGLE_ARGS for name in _GOOGLE_ARGS | _GOOGLE_OTHER}
# Those of them that _SECTION_HINT finds.
_HINTED_HEADERS = frozenset(line for line in _HEADER_LINES if _SECTION_HINT.match(line))
_NOT_GOOGLE = re.compile(r"^\s*(?:-{3,}|={3,})\s*$|^\s*:(?:param|parameter|arg|argument|key|"
                         r"keyword|type|returns?|rtype|raises?)\b", re.MULTILINE)


_COLON_WORD = re.compile(r":[a-z]")  # in every ":param", ":arg", ... of _NOT_GOOGLE


def _may_be_not_google(doc: str) -> bool:
    """False when ``doc`` has none of the substrings every match of ``_NOT_GOOGLE`` holds
    (two substring tests and a search for one literal character cost a fraction of the
    regex's scan of the whole text, and of nine substring tests)."""
    return "---" in doc or "===" in doc or _COLON_WORD.search(doc) is not None


def _parse_google(doc: str) -> tuple[str, dict[str, str]] | None:
    """A single pass over a plain Google-style docstring (the common case: docstring-parser's
    style detection runs every parser first). ``None`` when the docstring has
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


def _odd_blanks(doc: str) -> bool:
    """Whether ASCII ``doc`` holds a character that str.lstrip, str.splitlines or
    str.expandtabs treat as blank, a line break or a tab, other than " " and "\n"."""
    return ("\t" in doc or "\r" in doc or "\x0b" in doc or "\x0c" in doc or "\x1c" in doc
            or "\x1d" in doc or "\x1e" in doc or "\x1f" in doc)


def _parse_plain(doc: str) -> ParsedDoc | None:
    """``parse_docstring(doc)`` for the common docstring -- ASCII whose only blanks are spaces
    and newlines, no line ending in a space, a Google-style section at least, nothing of
    another style, no best practices -- or ``None`` for any other (the general path decides).

    Registering thousands of tools parses thousands of docstrings, and the general path
    reads every line in Python twice (``inspect.cleandoc``, then ``_parse_google``). Here the
    margin comes off every line by substring operations, the text before the first section
    is found by looking at the lines that end in ':' only, and only the lines of the
    sections are read one by one. The result is the general path's (tests/test_docstrings.py
    checks both on generated docstrings)."""
    if (not doc.isascii() or _odd_blanks(doc) or " \n" in doc or "Best Practices" in doc
            or _may_be_not_google(doc)):
        return None
    # inspect.cleandoc: the margin is the indentation of the first non-blank line after the
    # first, if every later line is empty or indented at least as deep (counted, not read)
    lines = doc.split("\n")
    margin = 0
    for line in lines[1:]:
        content = line.lstrip(" ")
        if content:
            margin = len(line) - len(content)
            break
    if margin:
        prefix = "\n" + " " * margin
        if doc.count(prefix) + lines.count("") - (lines[0] == "") != len(lines) - 1:
            return None
        doc = doc.replace(prefix, "\n")
    first, newline, rest = doc.partition("\n")
    doc = (first.lstrip(" ") + newline + rest).strip("\n")
    if doc.endswith(" "):
        return None  # the last line ends in a space: a section header may hide there
    # _parse_google: the first section header is a line at indent 0 ending in ':'
    lined = doc + "\n"
    head_end = -1
    end = lined.find(":\n")
    while end >= 0:
        start = lined.rfind("\n", 0, end) + 1
        if lined[start] != " ":
            line = lined[start : end + 1]
            if _GOOGLE_SECTION.match(line):
                head_end = start
                break
            if " " not in line:  # looks like a section header this pass does not know
                return None if _SECTION_HINT.search(doc) else ParsedDoc(doc.strip(), {}, ())
        end = lined.find(":\n", end + 1)
    if head_end < 0:  # no section (the general path formats such a text)
        return None if _SECTION_HINT.search(doc) else ParsedDoc(doc.strip(), {}, ())
    # the general path reads sections only when _SECTION_HINT finds one; a first header
    # among its names ("Args:") is such a line, any other asks the regex
    if line not in _HINTED_HEADERS and not _SECTION_HINT.search(doc):
        return ParsedDoc(doc.strip(), {}, ())
    params: dict[str, str] = {}
    args = False
    current: str | None = None
    base = -1  # the indentation of the section's argument lines
    for line in doc[head_end:].split("\n"):
        if not line:
            continue
        if line[0] != " ":
            args_header = _HEADER_LINES.get(line)
            if args_header is None:
                m = _GOOGLE_SECTION.match(line)
                if m is None:
                    return None  # text after a section at the top level
                name = m.group(1).strip()
                args_header = name in _GOOGLE_ARGS
                if not args_header and name not in _GOOGLE_OTHER:
                    return None
            args, current, base = args_header, None, -1
            continue
        if not args:
            continue
        content = line.lstrip(" ")
        indent = len(line) - len(content)
        if base < 0:
            base = indent
        if indent == base:
            am = _GOOGLE_ARG.match(content)
            if am is None:
                return None
            current = am.group(1).lstrip("*")
            params[current] = am.group(2)
        elif current is not None:
            params[current] += " " + content
        else:
            return None
    text = doc[:head_end].strip()
    short, _, rest = text.partition("\n")
    rest = rest.strip()
    description = f"{short.strip()}\n\n{rest}" if rest else short.strip()
    # a value is its words joined by single spaces (the only blanks here are spaces)
    return ParsedDoc(description, {k: v if "  " not in v and v[0] != " " else " ".join(v.split())
                                   for k, v in params.items() if v}, ())


def parse_docstring(doc: str | None) -> ParsedDoc:
    """Parse ``doc``; never raises (an unparsable docstring becomes the description)."""
    if not doc or not doc.strip():
        return EMPTY
    plain = _parse_plain(doc)
    return plain if plain is not None else _parse_general(doc)


def _parse_general(doc: str) -> ParsedDoc:
    """``parse_docstring`` of a non-blank ``doc``, every style."""
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
    except Exception:  # ParseError, or a parser's own slip on odd text: keep it as text
        return ParsedDoc(doc.strip(), {}, practices)
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p]
    params = {}
    for p in parsed.params:
        # An entry with no name (``Args:`` then ``    : text``) describes no parameter.
        name = p.arg_name.split()[0].lstrip("*") if p.arg_name.split() else ""
        if name and p.description:
            params[name] = " ".join(p.description.split())
    return ParsedDoc("\n\n".join(parts), params, practices)
