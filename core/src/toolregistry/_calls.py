"""Provider-native tool calls (objects or dicts) into :class:`ToolCall`.

Recognised: OpenAI chat ``tool_calls`` items, OpenAI responses ``function_call`` items,
Anthropic ``tool_use`` blocks, Gemini ``function_call`` parts / ``FunctionCall`` objects,
LangChain ``tool_call`` dicts, and ``{"name", "arguments"}`` dicts. The shape decides, checked
in an order where no format can be mistaken for another (a responses item carries
``type: function_call`` and is matched first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .types import ToolCall


class CallParseError(ValueError):
    """A call whose shape or arguments cannot be understood; ``kind`` says which."""

    def __init__(self, message: str, kind: str, call: ToolCall) -> None:
        super().__init__(message)
        self.kind = kind
        self.call = call


def _as_mapping(obj: Any) -> Mapping[str, Any] | None:
    if isinstance(obj, Mapping):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):  # openai, anthropic and google-genai types are pydantic models
        try:
            data = dump()
        except Exception:
            return None
        return data if isinstance(data, Mapping) else None
    if hasattr(obj, "__dict__"):
        return vars(obj)
    return None


def parse_call(obj: Any, index: int = 0) -> ToolCall:
    """One provider-native call as a :class:`ToolCall` with parsed ``arguments``.

    Raises :class:`CallParseError` (carrying a best-effort ``ToolCall``) when the call or its
    arguments are malformed.
    """
    if isinstance(obj, ToolCall):
        call = obj
        if call.arguments is None:
            call.arguments = _parse_arguments(call.raw_arguments, call)
        return call
    data = _as_mapping(obj)
    if data is None:
        call = ToolCall(name="", id=None, raw=obj)
        raise CallParseError(
            f"tool call #{index} is a {type(obj).__name__}, not a tool call object or dict",
            "malformed_call", call)
    kind = data.get("type")
    if kind == "function_call":  # OpenAI responses
        call = ToolCall(name=_name(data), id=data.get("call_id") or data.get("id"),
                        raw_arguments=data.get("arguments"), format="openai-responses", raw=obj)
        call.extra["item_id"] = data.get("id")
    elif isinstance(data.get("function"), (Mapping,)) or (
        data.get("function") is not None and not isinstance(data.get("function"), str)
    ):
        fn = _as_mapping(data["function"]) or {}
        call = ToolCall(name=_name(fn), id=data.get("id"), raw_arguments=fn.get("arguments"),
                        format="openai-chat", raw=obj)
    elif kind == "tool_use":  # Anthropic
        call = ToolCall(name=_name(data), id=data.get("id"), raw_arguments=data.get("input"),
                        format="anthropic", raw=obj)
    elif data.get("function_call") is not None or data.get("functionCall") is not None:
        inner = _as_mapping(data.get("function_call") or data.get("functionCall")) or {}
        call = ToolCall(name=_name(inner), id=inner.get("id"), raw_arguments=inner.get("args"),
                        format="gemini", raw=obj)
    elif kind == "tool_call":  # LangChain
        call = ToolCall(name=_name(data), id=data.get("id"), raw_arguments=data.get("args"),
                        format="langchain", raw=obj)
    elif "args" in data and "name" in data:  # Gemini FunctionCall
        call = ToolCall(name=_name(data), id=data.get("id"), raw_arguments=data.get("args"),
                        format="gemini", raw=obj)
    elif "name" in data and ("arguments" in data or "input" in data or len(data) <= 2):
        raw_args = data.get("arguments", data.get("input"))
        call = ToolCall(name=_name(data), id=data.get("id") or data.get("call_id"),
                        raw_arguments=raw_args, format="registry", raw=obj)
    else:
        keys = ", ".join(sorted(map(str, data))) or "none"
        call = ToolCall(name=str(data.get("name") or ""), id=data.get("id"), raw=obj)
        raise CallParseError(
            f"tool call #{index} has no recognisable shape (keys: {keys}); expected an OpenAI, "
            "Anthropic, Gemini or LangChain tool call", "malformed_call", call)
    if not call.name:
        raise CallParseError(f"tool call #{index} has no tool name", "malformed_call", call)
    call.arguments = _parse_arguments(call.raw_arguments, call)
    return call


def _name(data: Mapping[str, Any]) -> str:
    name = data.get("name")
    return name if isinstance(name, str) else ""


def _parse_arguments(raw: Any, call: ToolCall) -> dict[str, Any]:
    """Arguments as a dict. Accepted: a mapping, a JSON object string, an empty string or
    ``None`` (no arguments), and a JSON string that itself holds a JSON object (a common
    double-encoding by models)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            excerpt = raw if len(raw) <= 200 else raw[:200] + "..."
            raise CallParseError(
                f"arguments for tool {call.name!r} are not valid JSON ({exc.msg} at line "
                f"{exc.lineno} column {exc.colno}): {excerpt}",
                "malformed_arguments", call) from None
        if isinstance(value, str):
            try:
                inner = json.loads(value)
            except json.JSONDecodeError:
                inner = None
            if isinstance(inner, dict):
                return inner
        if isinstance(value, dict):
            return value
        raw = value
    kind = {list: "an array", str: "a string", int: "a number", float: "a number",
            bool: "a boolean"}.get(type(raw), type(raw).__name__)
    raise CallParseError(
        f"arguments for tool {call.name!r} must be a JSON object, got {kind}",
        "malformed_arguments", call)
