"""``gemini``: the Google Gemini API (google-genai SDK and REST).

Owns: the choice, per tool, between ``parameters`` (Gemini's OpenAPI subset, for schemas it
expresses exactly) and ``parametersJsonSchema`` (the JSON Schema itself, for unions, ``$ref``,
maps, tuples and whatever else the subset would lose; keywords Gemini does not document for it
are reported); the OpenAPI-subset dialect (``$ref`` inlined with recursion cut at a bounded depth
and inlining stopped past 10,000 schema objects, ``nullable`` instead of null types, unions kept as ``anyOf``, string-only enums, unsupported
keywords dropped and reported); the ``FunctionDeclaration`` envelope; reading ``function_call``
/ ``functionCall`` parts and bare ``FunctionCall`` objects (the thought signature kept); the
answer (a model content of ``function_call`` parts, then one user content of
``function_response`` parts, ``response.error`` for errors, a structured result as the
``response.output`` object, images, audio and file resources as ``inline_data`` /
``file_data`` parts after them; ids echoed only when the model sent them, otherwise Gemini
matches by order and name); ``tool_choice`` as the whole ``tool_config``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._base import Answer, ChoiceMode, Definition, ProviderFormat, RawCall, field, has_field
from ._gemini_json import JsonSchema, needs_json_schema, report_unsupported
from ._parts import split_parts, structured_of

if TYPE_CHECKING:
    from toolregistry.tool import Tool
    from toolregistry.types import ToolResult

__all__ = ["Gemini", "to_gemini"]

_GEMINI_KEYS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
})
_SILENT_DROP = frozenset({"$schema", "$id", "$comment", "additionalProperties", "examples",
                          "readOnly", "writeOnly", "deprecated", "discriminator",
                          "contentEncoding", "contentMediaType"})
_MAX_INLINE_DEPTH = 8
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
# Inlining copies a definition at every use, so a small schema whose definitions each use the
# next several times grows exponentially (six uses over ten levels: 60 million objects).
# Past this many schema objects, references are no longer inlined.
_MAX_INLINED_OBJECTS = 10_000


class _Budget:
    __slots__ = ("cut", "left")

    def __init__(self) -> None:
        self.left = _MAX_INLINED_OBJECTS
        self.cut = 0


class Gemini(ProviderFormat):
    """Google Gemini."""

    name = "gemini"
    call_shape = "a Gemini function_call part"
    aliases = ("google", "genai")

    def rewrites_schema(self, strict: bool) -> bool:
        return True

    def dialect(self, parameters: dict[str, Any], *, strict: bool, lost: list[str]
                ) -> dict[str, Any]:
        """The OpenAPI subset when it says exactly what ``parameters`` says, otherwise the
        JSON Schema itself (marked for ``parametersJsonSchema``): never a lossy rewrite."""
        if not needs_json_schema(parameters):
            subset_lost: list[str] = []
            subset = to_gemini(parameters, subset_lost)
            if not subset_lost:
                return subset
        report_unsupported(parameters, lost)
        return JsonSchema(parameters)

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        decl: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if isinstance(parameters, JsonSchema):
            decl["parametersJsonSchema"] = dict(parameters)
        elif parameters.get("properties"):
            decl["parameters"] = parameters
        return decl

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        """``parameters`` (the subset) or ``parametersJsonSchema`` (the JSON Schema), as sent;
        ``None`` for a function that takes none (Gemini wants it left out then)."""
        params = definition.get("parameters")
        if params is None:
            params = definition.get("parametersJsonSchema",
                                    definition.get("parameters_json_schema"))
        return Definition(definition["name"], definition.get("description"), params)

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        inner = field(obj, "function_call") or field(obj, "functionCall")
        if inner is not None and not isinstance(inner, (str, bytes)):
            # Gemini 3 rejects a history whose function_call parts lost their signature.
            signature = field(obj, "thought_signature") or field(obj, "thoughtSignature")
            return RawCall(field(inner, "name"), field(inner, "id"), field(inner, "args"),
                           {"thought_signature": signature} if signature is not None else None)
        if kind is None and has_field(obj, "name") and has_field(obj, "args"):
            return RawCall(field(obj, "name"), field(obj, "id"), field(obj, "args"))
        return None

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        if not answers:
            return []
        model_parts = []
        for c, _, had_id in answers:
            fc: dict[str, Any] = {"name": c.name,
                                  "args": c.arguments if c.arguments is not None else {}}
            if had_id:
                fc["id"] = c.id
            part: dict[str, Any] = {"function_call": fc}
            signature = c.extra.get("thought_signature")
            if signature is not None:
                part["thought_signature"] = signature
            model_parts.append(part)
        user_parts: list[dict[str, Any]] = []
        media_after: list[dict[str, Any]] = []
        for call, result, had_id in answers:
            structured, more = structured_of(result)
            # the text parts are the structured result as JSON unless they say more
            texts, media = split_parts(result, "gemini", _media_part,
                                       skip_text=structured is not None and not more)
            media_after.extend(media)
            text = "\n".join(texts)
            if result.is_error:
                response: dict[str, Any] = {"error": text}
            elif structured is None:
                response = {"output": _maybe_json(text, result)}
            else:  # the object itself: Gemini's response is an object
                response = {"output": structured, "text": text} if text else \
                    {"output": structured}
            fr: dict[str, Any] = {"name": call.name, "response": response}
            if had_id:
                fr["id"] = call.id
            user_parts.append({"function_response": fr})
        return [{"role": "model", "parts": model_parts},
                {"role": "user", "parts": user_parts + media_after}]

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        """The whole ``tool_config`` (``GenerateContentConfig(tool_config=...)``)."""
        if mode == "tool":
            return {"function_calling_config": {"mode": "ANY",
                                                "allowed_function_names": [tool]}}
        return {"function_calling_config": {"mode": _MODES[mode]}}


def _media_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """The ``inline_data`` / ``file_data`` part for an image, audio or file resource."""
    kind = part.get("type")
    if kind == "resource":
        resource = part["resource"]
        if resource.data is None:
            return None  # a text resource is text
        return {"inline_data": {"mime_type": resource.media_type, "data": resource.data}}
    media = part.get(kind) if kind in ("image", "audio") else None
    if media is None:
        return None
    data = media.read_bytes()
    if data is not None:
        return {"inline_data": {"mime_type": media.media_type, "data": data}}
    return {"file_data": {"mime_type": media.media_type, "file_uri": media.url}}


def _maybe_json(text: str, result: ToolResult) -> Any:
    """Structured output stays structured for Gemini (``response`` is a JSON object)."""
    if isinstance(result.content, str) and text[:1] in ("{", "[") and not isinstance(
            result.value, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


# --- the dialect --------------------------------------------------------------------------

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
