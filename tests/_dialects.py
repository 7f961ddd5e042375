"""Checks that an emitted tool definition follows each provider's documented rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema_rs

from toolregistry.formats import BUILTIN

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
GEMINI_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}


def walk(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema node (not property-name maps)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            if isinstance(value, dict):
                for sub in value.values():
                    yield from walk(sub)
        elif key in ("items", "additionalProperties", "not", "contains"):
            yield from walk(value)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            for sub in value:
                yield from walk(sub)


def parameters_of(definition: dict[str, Any], api_format: str) -> dict[str, Any] | None:
    return BUILTIN.get(api_format).read_definition(definition).parameters


def name_of(definition: dict[str, Any], api_format: str) -> str:
    return BUILTIN.get(api_format).read_definition(definition).name


def check(definition: dict[str, Any], api_format: str, *, strict: bool = False) -> None:
    """Raise AssertionError when ``definition`` breaks ``api_format``'s rules."""
    assert NAME.match(name_of(definition, api_format)), name_of(definition, api_format)
    params = parameters_of(definition, api_format)
    if api_format == "gemini":
        if params is None:
            return
        _validate_gemini_declaration(definition)
        if "parametersJsonSchema" in definition:
            # the JSON Schema itself: valid JSON Schema, an object, never both fields
            assert "parameters" not in definition, definition
            assert params.get("type") == "object", params
            jsonschema_rs.meta.validate(params)
            jsonschema_rs.validator_for(params)
            return
        for node in walk(params):
            extra = set(node) - GEMINI_KEYS
            assert not extra, f"keys Gemini does not accept: {extra} in {node}"
            if "enum" in node:
                assert all(isinstance(v, str) for v in node["enum"]), node
                assert node.get("type") in (None, "string"), node
            assert node.get("type") != "null", node
            assert not isinstance(node.get("type"), list), node
        assert params.get("type") == "object"
        return
    assert params is not None
    assert params.get("type") == "object", params
    jsonschema_rs.meta.validate(params)
    jsonschema_rs.validator_for(params)  # compiles: every $ref resolves
    if strict:
        assert definition.get("strict", definition.get("function", {}).get("strict")) is True
        for node in walk(params):
            assert "default" not in node, node
            if node.get("type") == "object" or (isinstance(node.get("type"), list)
                                                and "object" in node["type"]):
                assert node.get("additionalProperties") is False, node
                assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), node


def _validate_gemini_declaration(definition: dict[str, Any]) -> None:
    """The SDK's own type accepts the declaration (skipped without google-genai)."""
    try:
        from google.genai import types
    except ImportError:
        return
    types.FunctionDeclaration.model_validate(definition)
