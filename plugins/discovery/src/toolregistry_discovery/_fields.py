"""What of a :class:`~toolregistry.Tool` goes into which index field."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from toolregistry import Tool

from ._analysis import _ASCII_SEP, _ascii_words, analyze

__all__ = ["DEFAULT_FIELD_WEIGHTS", "FIELDS", "tool_fields", "tool_texts"]

_MAX_DEPTH = 4
_NAME_FOLD = re.compile(r"[\s./\-]+")
# Every ASCII byte but a letter or a digit -> "_" (the separators of _ascii_words).
_UNDERSCORED = _ASCII_SEP.replace(b" ", b"_")


def fold_name(name: str) -> str:
    """``Files.Read-File`` -> ``files_read_file``: how clients commonly respell a tool name."""
    return _NAME_FOLD.sub("_", name.strip()).casefold()


_NESTED = frozenset(("properties", "items", "anyOf", "oneOf", "allOf"))


def _walk_params(schema: dict[str, Any], names: list[str], texts: list[str],
                 depth: int) -> None:
    """Parameter names and descriptions, nested objects and array items included."""
    if depth > _MAX_DEPTH:
        return
    # JSON Schemas are plain dicts; exact type checks keep this cheap for 10,000 tools, and
    # only schemas with something nested inside are descended into.
    props = schema.get("properties")
    if type(props) is dict:
        for pname, pschema in props.items():
            names.append(str(pname))
            if type(pschema) is dict:
                desc = pschema.get("description")
                if desc and type(desc) is str:
                    texts.append(desc)
                title = pschema.get("title")
                if title and type(title) is str:
                    texts.append(title)
                enum = pschema.get("enum")
                if enum and type(enum) is list:
                    texts.extend(str(v) for v in enum if isinstance(v, (str, int, float)))
                if "properties" in pschema or "items" in pschema or "anyOf" in pschema:
                    _walk_params(pschema, names, texts, depth + 1)
    items = schema.get("items")
    if type(items) is dict and not _NESTED.isdisjoint(items):
        _walk_params(items, names, texts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if type(subs) is list:
            for sub in subs:
                if type(sub) is dict and not _NESTED.isdisjoint(sub):
                    _walk_params(sub, names, texts, depth + 1)


def _same_words(original: str, name: str) -> bool:
    """Whether every word of the ASCII ``original`` is a word of ``name`` (``files.read`` in
    ``files_read_r1``): then it has no term ``name`` lacks, whatever the analysis makes of a
    word, and need not be analysed (most source names only respell the tool's name)."""
    if not (original.isascii() and name.isascii()):
        return False
    # The usual respelling first: ``original`` with "_" for every separator starts ``name``
    # and ends at one of its word ends (no word cut in two): then its words are ``name``'s.
    folded = original.encode().translate(_UNDERSCORED).decode()
    if name.startswith(folded) and (len(name) == len(folded)
                                    or not name[len(folded)].isalnum()):
        return True
    return set(_ascii_words(original)).issubset(_ascii_words(name))


FIELDS = ("name", "description", "search_hint", "tags", "params", "param_descriptions")
"""The index fields, in the order of :data:`DEFAULT_FIELD_WEIGHTS`."""

DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = {
    "name": 3.0,
    "description": 2.0,
    "search_hint": 2.0,
    "tags": 1.5,
    "params": 1.0,
    "param_descriptions": 0.5,
}
"""The spec's five fields and weights, plus parameter descriptions at a lower weight."""


def tool_texts(tool: Tool, terms: Callable[[str], Iterable[Hashable]] = analyze
               ) -> tuple[str | tuple[str, ...], ...]:
    """The texts of ``tool``'s index fields, in :data:`FIELDS` order (several texts: a tuple).

    ``name`` also carries the original name at the tool's source and the metadata title;
    ``tags`` carries both well-known tags and ``custom_tags``. Parameter names and texts stay
    separate strings: the index analyses each distinct one once, however many tools share it.
    ``terms`` analyses a name word by word (an index passes its cached analysis, to share the
    work).
    """
    meta = tool.metadata
    name = tool.name
    names: str | tuple[str, ...] = name
    original = tool.provenance.original_name
    if original and original != name and not _same_words(original, name) and not set(
            terms(original)).issubset(terms(name)):
        # Only when it adds words: "files.read" says nothing "files_read" does not, and
        # repeating it would double the weight of the name.
        names = (name, original)
    if meta.title:
        names = (*((names,) if isinstance(names, str) else names), meta.title)
    param_names: list[str] = []
    param_texts: list[str] = []
    if type(tool.parameters) is dict:
        _walk_params(tool.parameters, param_names, param_texts, 0)
    tags: tuple[str, ...] = ()
    if meta.tags or meta.custom_tags:
        tags = (*sorted(t.value for t in meta.tags), *sorted(meta.custom_tags))
    return (names, tool.description or "", meta.search_hint or "", tags, tuple(param_names),
            tuple(param_texts))


def tool_fields(tool: Tool) -> dict[str, str | tuple[str, ...]]:
    """The index fields of ``tool`` by name (see :func:`tool_texts`)."""
    return dict(zip(FIELDS, tool_texts(tool)))
