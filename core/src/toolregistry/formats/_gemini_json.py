"""When a Gemini tool goes out as ``parametersJsonSchema``, and what Gemini may ignore in it.

Gemini takes a function's parameters two ways: ``parameters``, a Schema object of its OpenAPI
subset, and ``parametersJsonSchema``, JSON Schema as such. The subset has no ``$ref``, no maps
(``additionalProperties`` with a value schema), no tuples, and an ``anyOf`` beside other
fields is refused by some endpoints; rewriting such a schema into the subset loses or bends
it. Those schemas are sent as they are, and the keywords outside what Gemini documents for
JSON Schema are reported (sent, but the model may not follow them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["JsonSchema", "needs_json_schema", "report_unsupported"]

# What Gemini documents as supported in JSON Schema (structured output and
# parametersJsonSchema), plus annotations that constrain nothing.
_SUPPORTED = frozenset({
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
    "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
    "properties", "additionalProperties", "required", "propertyOrdering",
    "default", "examples", "deprecated", "readOnly", "writeOnly", "$schema", "$comment",
})
# Keywords whose value maps names to schemas (the names are not keywords).
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains", "if", "then", "else",
                  "propertyNames", "unevaluatedProperties", "unevaluatedItems")


class JsonSchema(dict[str, Any]):
    """A parameters schema to send as ``parametersJsonSchema`` (the dialect's verdict,
    carried to the envelope on the value itself: formats keep no state)."""

    __slots__ = ()


def _nodes(schema: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with where it is (``a.b[]``), property-name maps looked through."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                where = name if key == "properties" else f"{key}/{name}"
                yield from _nodes(sub, f"{path}.{where}" if path else where)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for sub in value:
                yield from _nodes(sub, path)
        elif key in _SCHEMA_VALUES:
            yield from _nodes(value, f"{path}[]" if key == "items" else path)


def _union(node: dict[str, Any]) -> bool:
    """Two or more non-null alternatives (``null`` alone is the subset's ``nullable``)."""
    kinds = node.get("type")
    if isinstance(kinds, list) and len([k for k in kinds if k != "null"]) > 1:
        return True
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and len(
                [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        ) > 1:
            return True
    return False


def needs_json_schema(schema: dict[str, Any]) -> bool:
    """Whether the subset cannot carry ``schema`` as it is: a reference, a union, ``allOf``,
    a map of free-form keys (the subset's own conversion reports the rest)."""
    for _, node in _nodes(schema, ""):
        if "$ref" in node or "allOf" in node or _union(node):
            return True
        extra = node.get("additionalProperties")
        if extra is True or isinstance(extra, dict):
            return True
    return False


def report_unsupported(schema: dict[str, Any], lost: list[str]) -> None:
    """Note every keyword outside what Gemini documents for JSON Schema, once per place."""
    for path, node in _nodes(schema, ""):
        for key in sorted(k for k in node if k not in _SUPPORTED):
            lost.append(f"{path or '(root)'}: keyword {key!r} sent in parametersJsonSchema, "
                        "which Gemini does not document (the model may not follow it)")
