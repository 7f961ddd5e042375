"""What of a :class:`~toolregistry.Tool` goes into which index field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolregistry import Tool

__all__ = ["tool_fields"]

_MAX_DEPTH = 4


def _walk_params(schema: Mapping[str, Any], names: list[str], texts: list[str],
                 depth: int) -> None:
    """Parameter names and descriptions, nested objects and array items included."""
    if depth > _MAX_DEPTH:
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for pname, pschema in props.items():
            names.append(str(pname))
            if isinstance(pschema, Mapping):
                _describe(pschema, texts)
                _walk_params(pschema, names, texts, depth + 1)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            _walk_params(sub, names, texts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            for sub in subs:
                if isinstance(sub, Mapping):
                    _walk_params(sub, names, texts, depth + 1)


def _describe(schema: Mapping[str, Any], texts: list[str]) -> None:
    for key in ("title", "description"):
        value = schema.get(key)
        if isinstance(value, str) and value:
            texts.append(value)
    enum = schema.get("enum")
    if isinstance(enum, list):
        texts.extend(str(v) for v in enum if isinstance(v, (str, int, float)))


def tool_fields(tool: Tool) -> dict[str, str]:
    """The six index fields of ``tool``.

    ``name`` also carries the original name at the tool's source and the metadata title;
    ``tags`` carries both well-known tags and ``custom_tags``.
    """
    meta = tool.metadata
    names = [tool.name]
    original = tool.provenance.original_name
    if original and original != tool.name:
        names.append(original)
    if meta.title:
        names.append(meta.title)
    param_names: list[str] = []
    param_texts: list[str] = []
    if isinstance(tool.parameters, Mapping):
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
