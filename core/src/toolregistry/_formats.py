"""Schemas in each provider's dialect: OpenAI chat / responses (strict too), Anthropic, Gemini, MCP.

Every transformation works on a private copy and reports what a dialect cannot express
(``schema.degraded`` events, and the ``lost`` list returned to the caller) instead of
emitting something broken or silently different.
"""

from __future__ import annotations

from typing import Any

API_FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "mcp")
_ALIASES = {
    "openai": "openai-chat",
    "openai_chat": "openai-chat",
    "openai-chatcompletion": "openai-chat",
    "chat": "openai-chat",
    "openai_responses": "openai-responses",
    "responses": "openai-responses",
    "claude": "anthropic",
    "google": "gemini",
    "genai": "gemini",
}


def normalise_format(api_format: str) -> str:
    """Canonical name of an API format; a clear error for an unknown one."""
    fmt = api_format.strip().lower()
    fmt = _ALIASES.get(fmt, fmt)
    if fmt not in API_FORMATS:
        raise ValueError(
            f"unknown api_format {api_format!r}: use one of {', '.join(API_FORMATS)}"
        )
    return fmt


def copy_json(node: Any) -> Any:
    """A fast deep copy of JSON-like data (dicts, lists, scalars)."""
    if isinstance(node, dict):
        return {k: copy_json(v) if isinstance(v, (dict, list)) else v for k, v in node.items()}
    if isinstance(node, list):
        return [copy_json(v) if isinstance(v, (dict, list)) else v for v in node]
    return node


# --- OpenAI strict ------------------------------------------------------------------------

def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema or "allOf" in schema or "oneOf" in schema:
        rest = {k: v for k, v in schema.items() if k == "description"}
        core = {k: v for k, v in schema.items() if k != "description"}
        return {"anyOf": [core, {"type": "null"}], **rest}
    if "anyOf" in schema:
        if not any(s.get("type") == "null" for s in schema["anyOf"] if isinstance(s, dict)):
            schema["anyOf"].append({"type": "null"})
        return schema
    t = schema.get("type")
    if isinstance(t, str):
        if t != "null":
            schema["type"] = [t, "null"]
    elif isinstance(t, list):
        if "null" not in t:
            schema["type"] = [*t, "null"]
    elif not schema or set(schema) <= {"description"}:
        return schema  # any value already admits null
    else:
        return {"anyOf": [schema, {"type": "null"}]}
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema


def to_strict(schema: dict[str, Any], lost: list[str], path: str = "") -> dict[str, Any]:
    """OpenAI strict mode: closed objects, every property required, optional ones nullable,
    no ``default``. Works in place on a private copy and returns it."""
    schema.pop("default", None)
    t = schema.get("type")
    is_object = t == "object" or (isinstance(t, list) and "object" in t) or "properties" in schema
    if is_object:
        ap = schema.get("additionalProperties")
        if isinstance(ap, dict) and ap:
            lost.append(f"{path or '(root)'}: free-form keys (additionalProperties) are not "
                        "allowed in strict mode")
        schema["additionalProperties"] = False
        props = schema.setdefault("properties", {})
        required = set(schema.get("required", ()))
        for name, sub in list(props.items()):
            if not isinstance(sub, dict):
                continue
            sub = to_strict(sub, lost, f"{path}.{name}" if path else name)
            props[name] = sub if name in required else _nullable(sub)
        schema["required"] = list(props)
    for kw in ("items",):
        if isinstance(schema.get(kw), dict):
            schema[kw] = to_strict(schema[kw], lost, f"{path}[]")
    for kw in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(kw), list):
            schema[kw] = [to_strict(s, lost, path) if isinstance(s, dict) else s
                          for s in schema[kw]]
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        for name, sub in defs.items():
            if isinstance(sub, dict):
                defs[name] = to_strict(sub, lost, f"$defs.{name}")
    return schema


# --- Gemini -------------------------------------------------------------------------------

_GEMINI_KEYS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
})
_SILENT_DROP = frozenset({"$schema", "$id", "$comment", "additionalProperties", "examples",
                          "readOnly", "writeOnly", "deprecated", "discriminator",
                          "contentEncoding", "contentMediaType"})
_MAX_INLINE_DEPTH = 8
# Inlining copies a definition at every use, so a small schema whose definitions each use the
# next several times grows exponentially (six uses over ten levels: 60 million objects).
# Past this many schema objects, references are no longer inlined.
_MAX_INLINED_OBJECTS = 10_000


class _Budget:
    __slots__ = ("cut", "left")

    def __init__(self) -> None:
        self.left = _MAX_INLINED_OBJECTS
        self.cut = 0


def _resolve_ref(ref: str, root: dict[str, Any]) -> dict[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def to_gemini(schema: dict[str, Any], lost: list[str]) -> dict[str, Any]:
    """Gemini's OpenAPI subset: ``$ref`` inlined, ``nullable`` instead of null types,
    ``anyOf`` kept for unions, string-only enums, unsupported keywords dropped and reported."""
    budget = _Budget()
    out = _gem(schema, schema, lost, "", (), budget)
    if budget.cut:
        lost.append(f"{budget.cut} references not inlined (sent as any value): inlined, the "
                    f"schema would exceed {_MAX_INLINED_OBJECTS} schema objects")
    return out


def _gem(node: dict[str, Any], root: dict[str, Any], lost: list[str], path: str,
         stack: tuple[str, ...], budget: _Budget) -> dict[str, Any]:
    where = path or "(root)"
    budget.left -= 1
    if "$ref" in node:
        ref = node["$ref"]
        target = _resolve_ref(ref, root) if isinstance(ref, str) else None
        if target is None:
            lost.append(f"{where}: unresolvable reference {ref!r} (sent as any value)")
            return {}
        if ref in stack or len(stack) >= _MAX_INLINE_DEPTH:
            lost.append(f"{where}: recursive reference {ref!r} cut at depth {len(stack)}")
            return {"type": "object"} if target.get("type") == "object" else {}
        if budget.left <= 0:
            budget.cut += 1
            return {"type": "object"} if target.get("type") == "object" else {}
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _gem(merged, root, lost, path, (*stack, ref), budget)
    out: dict[str, Any] = {}
    nullable = False
    t = node.get("type")
    if isinstance(t, list):
        kinds = [x for x in t if x != "null"]
        nullable = len(kinds) != len(t)
        if len(kinds) == 1:
            out["type"] = kinds[0]
        elif kinds:
            variants = [_gem({**{k: v for k, v in node.items() if k != "type"}, "type": k},
                             root, lost, path, stack, budget) for k in kinds]
            result: dict[str, Any] = {"anyOf": variants}
            if nullable:
                result["nullable"] = True
            if "description" in node:
                result["description"] = node["description"]
            return result
        else:
            out["type"] = "null"
    elif t is not None:
        out["type"] = t
    for key, value in node.items():
        if key in ("type", "$defs", "definitions"):
            continue
        if key == "properties" and isinstance(value, dict):
            out["properties"] = {
                name: _gem(sub, root, lost, f"{path}.{name}" if path else name, stack, budget)
                for name, sub in value.items() if isinstance(sub, dict)
            }
        elif key == "items" and isinstance(value, dict):
            out["items"] = _gem(value, root, lost, f"{path}[]", stack, budget)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            branches = [b for b in value if isinstance(b, dict)]
            non_null = [b for b in branches if b.get("type") != "null"]
            if len(non_null) != len(branches):
                nullable = True
            converted = [_gem(b, root, lost, path, stack, budget) for b in non_null]
            if len(converted) == 1:
                for k, v in converted[0].items():
                    out.setdefault(k, v)
            elif converted:
                out["anyOf"] = converted
        elif key == "allOf" and isinstance(value, list):
            for sub in value:
                if isinstance(sub, dict):
                    for k, v in _gem(sub, root, lost, path, stack, budget).items():
                        out.setdefault(k, v)
        elif key == "const":
            out["enum"] = [value]
        elif key == "enum" and isinstance(value, list):
            out["enum"] = value
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, (int, float)):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            out.setdefault(bound, value)
            lost.append(f"{where}: {key} sent as inclusive {bound}")
        elif key == "examples" and isinstance(value, list) and value:
            out.setdefault("example", value[0])
        elif key == "additionalProperties" and isinstance(value, dict) and value:
            lost.append(f"{where}: value schema of free-form keys (additionalProperties) dropped")
        elif key in _GEMINI_KEYS:
            out[key] = value
        elif key not in _SILENT_DROP:
            lost.append(f"{where}: keyword {key!r} is not supported by Gemini and was dropped")
    if "enum" in out:
        values = [v for v in out["enum"] if v is not None]
        if len(values) != len(out["enum"]):
            nullable = True
        if all(isinstance(v, str) for v in values):
            out["enum"] = values
            out.setdefault("type", "string")
        else:
            del out["enum"]
            listed = ", ".join(repr(v) for v in values)
            desc = out.get("description", "")
            out["description"] = f"{desc} (one of: {listed})".strip()
            lost.append(f"{where}: non-string enum sent as a description ({listed})")
    if out.get("type") == "null":
        del out["type"]
        nullable = True
    if nullable:
        out["nullable"] = True
    if "required" in out and "properties" in out:
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    return out


# --- the tool envelope of each format -------------------------------------------------------

def envelope(api_format: str, name: str, description: str, parameters: dict[str, Any],
             *, strict: bool, extras: dict[str, Any]) -> dict[str, Any]:
    """Wrap a finished parameters schema in the tool definition ``api_format`` expects."""
    if api_format == "openai-chat":
        fn: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}
    if api_format == "openai-responses":
        return {"type": "function", "name": name, "description": description,
                "parameters": parameters, "strict": strict}
    if api_format == "anthropic":
        return {"name": name, "description": description, "input_schema": parameters}
    if api_format == "gemini":
        decl: dict[str, Any] = {"name": name, "description": description}
        if parameters.get("properties"):
            decl["parameters"] = parameters
        return decl
    # mcp
    tool: dict[str, Any] = {"name": name, "description": description, "inputSchema": parameters}
    tool.update(extras)
    return tool

