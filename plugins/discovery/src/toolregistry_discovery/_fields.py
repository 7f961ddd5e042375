"""What of a :class:`~toolregistry.Tool` goes into which index field."""

from __future__ import annotations

import re
from typing import Any

from toolregistry import Tool

from ._analysis import analyze

__all__ = ["tool_fields"]

_MAX_DEPTH = 4
_NAME_FOLD = re.compile(r"[\s./\-]+")


def fold_name(name: str) -> str:
    """``Files.Read-File`` -> ``files_read_file``: how clients commonly respell a tool name."""
    return _NAME_FOLD.sub("_", name.strip()).casefold()


def _walk_params(schema: dict[str, Any], names: list[str], texts: list[str],
                 depth: int) -> None:
    """Parameter names and descriptions, nested objects and array items included."""
    if depth > _MAX_DEPTH:
        return
    # JSON Schemas are plain dicts; exact type checks keep this cheap for 10,000 tools.
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
    if type(items) is dict:
        _walk_params(items, names, texts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if type(subs) is list:
            for sub in subs:
                if type(sub) is dict:
                    _walk_params(sub, names, texts, depth + 1)


def tool_fields(tool: Tool) -> dict[str, str]:
    """The six index fields of ``tool``.

    ``name`` also carries the original name at the tool's source and the metadata title;
    ``tags`` carries both well-known tags and ``custom_tags``.
    """
    meta = tool.metadata
    names = [tool.name]
    original = tool.provenance.original_name
    if original and original != tool.name and not set(analyze(original)) <= set(analyze(tool.name)):
        # Only when it adds words: "files.read" says nothing "files_read" does not, and
        # repeating it would double the weight of the name.
        names.append(original)
    if meta.title:
        names.append(meta.title)
    param_names: list[str] = []
    param_texts: list[str] = []
    if isinstance(tool.parameters, dict):
        _walk_params(tool.parameters, param_names, param_texts, 0)
    tags = sorted(t.value for t in meta.tags) + sorted(meta.custom_tags)
    return {
        "name": " ".join(names),
        "description": tool.description or "",
        "search_hint": meta.search_hint or "",
        "tags": " ".join(tags),
        "params": " ".join(param_names),
        "param_descriptions": " ".join(param_texts),
    }
