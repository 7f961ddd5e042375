"""OpenAI strict mode, shared by the chat and responses formats: closed objects, every
property required, optional ones nullable, no ``default``."""

from __future__ import annotations

from typing import Any

__all__ = ["to_strict"]


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
