"""Validation's two helpers: safe coercion of arguments after a failure, and the error text.

Coercion applies only conversions that cannot change what the model meant (see
docs/execution.md, "Coercion"); the message names each bad argument, what was wrong and what
was sent, at most ten of them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry._calls import short_repr
from toolregistry._redaction import value_shape
from toolregistry._validators import InvalidArguments

if TYPE_CHECKING:
    from toolregistry.tool import Tool

__all__ = ["coerce", "validation_message"]

_CONTAINER_ERRORS = frozenset({
    "dict_type", "model_type", "model_attributes_type", "dataclass_type",
    "dataclass_exact_type", "list_type", "tuple_type", "set_type", "frozen_set_type",
    "typed_dict_type", "iterable_type", "mapping_type",
})


def coerce(tool: Tool, arguments: Mapping[str, Any], exc: Exception) -> dict[str, Any] | None:
    """Arguments with safe coercions applied after a validation failure, or ``None`` when
    none applies (see docs/execution.md, "Coercion")."""
    changed = False
    out = dict(arguments)
    errors = getattr(exc, "errors", None)
    if callable(errors) and tool.signature is not None:  # pydantic: a Python tool
        try:
            items = errors(include_url=False)
        except Exception:
            return None
        for err in items:
            loc = err.get("loc", ())
            if len(loc) != 1 or err.get("type") not in _CONTAINER_ERRORS:
                continue
            key = loc[0]
            value = out.get(key)
            decoded = _json_container(value)
            if decoded is not None:
                out[key] = decoded
                changed = True
        return out if changed else None
    props = tool.parameters.get("properties")
    if not isinstance(props, dict):
        return None
    for key, value in arguments.items():
        if not isinstance(value, str):
            continue
        schema = props.get(key)
        if not isinstance(schema, dict):
            continue
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or "string" in kinds:
            continue
        new = _from_string(value, kinds)
        if new is not _NO:
            out[key] = new
            changed = True
    return out if changed else None


_NO = object()


def _json_container(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, (dict, list)) else None


def _from_string(value: str, kinds: list[Any]) -> Any:
    text = value.strip()
    if "integer" in kinds:
        body = text[1:] if text[:1] in "+-" else text
        if body.isdigit() and body.isascii():
            return int(text)
    if "number" in kinds:
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            return int(number) if number.is_integer() and "." not in text and "e" not in \
                text.lower() else number
    if "boolean" in kinds and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "object" in kinds or "array" in kinds:
        decoded = _json_container(text)
        if isinstance(decoded, dict) and "object" in kinds:
            return decoded
        if isinstance(decoded, list) and "array" in kinds:
            return decoded
    if "null" in kinds and text == "null":
        return None
    return _NO


def validation_message(name: str, exc: Exception) -> tuple[str, str]:
    """The error text for the model (each bad value quoted) and the same text without the
    values (their type and size instead), for logs and traces."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic
        parts = []
        redacted = []
        try:
            items = errors(include_url=False)
        except TypeError:
            items = errors()
        for err in items[:10]:
            loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
            msg = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden":
                msg = "unexpected argument (not in the tool's schema)"
            elif err.get("type") == "missing":
                msg = "required argument missing"
            got = err.get("input")
            missing = err.get("type") == "missing"
            parts.append(f"{loc}: {msg}" + ("" if missing else f" (got {short_repr(got)})"))
            redacted.append(f"{loc}: {msg}" + ("" if missing else f" (got {value_shape(got)})"))
        if len(items) > 10:
            parts.append(f"... and {len(items) - 10} more")
            redacted.append(parts[-1])
        detail, safe = "; ".join(parts), "; ".join(redacted)
    else:
        detail = str(exc)
        safe = exc.redacted if isinstance(exc, InvalidArguments) else \
            f"{type(exc).__name__} (its text is left out: it may quote the arguments)"
    return (_fix(name, detail), _fix(name, safe))


def _fix(name: str, detail: str) -> str:
    return (f"invalid arguments for tool {name!r}: {detail}. Fix these arguments to match the "
            "tool's parameters and call it again.")
