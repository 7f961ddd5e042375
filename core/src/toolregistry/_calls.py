"""Provider-native tool calls (objects or dicts) into :class:`ToolCall`, and their arguments.

Which provider a call comes from is the formats' business (``toolregistry.formats``): a call
whose ``type`` field one format claims (``function_call``, ``tool_use``, ``tool_call``, ...)
is read by that format alone; any other call is offered to each format in table order, and
what none recognises is read as the registry's own shape (a :class:`ToolCall`, or
``{name, arguments, id}``). This module owns that dispatch, the checks every call gets (an
object at all, a tool name), argument parsing, and the errors that say what was wrong.
Fields are read as attributes or keys, never through ``model_dump`` (cheap, and tolerant of SDK
versions that add fields).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import ToolRegistryError
from .formats import BUILTIN
from .formats._base import field as _get
from .formats._base import has_field as _has
from .types import ToolCall

if TYPE_CHECKING:
    from .formats import FormatTable, ProviderFormat, RawCall

Passthrough = tuple["ProviderFormat", Any]
"""An item of the model's output that is the provider's own server-side work (its tool
search), with the format that knows it."""

__all__ = ["CallParseError", "Passthrough", "next_batch_id", "parse_arguments", "parse_call",
           "split_passthrough"]

_BATCH_PREFIX = os.urandom(4).hex()
_batches = itertools.count(1)


def next_batch_id() -> str:
    """A new id for the calls of one batch, unique across processes and hosts sharing a log
    (a random prefix, the process id, a count)."""
    return f"b{_BATCH_PREFIX}{os.getpid():x}-{next(_batches)}"


class CallParseError(ToolRegistryError, ValueError):
    """A call whose shape or arguments cannot be understood; ``kind`` says which
    (``malformed_call`` or ``malformed_arguments``) and ``call`` is a best-effort record."""

    def __init__(self, message: str, kind: str, call: ToolCall) -> None:
        super().__init__(message)
        self.kind = kind
        self.call = call


def _str_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _describe(obj: Any) -> str:
    if isinstance(obj, Mapping):
        try:
            keys = ", ".join(sorted(str(k) for k in obj)) or "none"
        except Exception:
            keys = "?"
        return f"a dict with keys: {keys}"
    return f"a {type(obj).__name__}"


def parse_call(obj: Any, index: int = 0, formats: FormatTable | None = None) -> ToolCall:
    """One provider-native call as a :class:`ToolCall` with parsed ``arguments``.

    ``formats`` is the table of formats to recognise it with (default: the built-in ones; a
    registry passes its own, which includes the formats its plugins add). Raises
    :class:`CallParseError` (carrying a best-effort ``ToolCall``) when the call or its
    arguments are malformed. A :class:`ToolCall` is returned as is (its arguments parsed when
    only ``raw_arguments`` was set).
    """
    if isinstance(obj, ToolCall):
        if not isinstance(obj.name, str) or not obj.name:
            raise CallParseError(f"tool call #{index} has no tool name", "malformed_call", obj)
        if obj.arguments is None:
            obj.arguments = parse_arguments(obj.raw_arguments, obj)
        return obj
    table = BUILTIN if formats is None else formats
    if obj is None or isinstance(obj, (str, bytes, bytearray, int, float, list, tuple)):
        call = ToolCall(name="", raw=obj)
        raise CallParseError(
            f"tool call #{index} is {_describe(obj) if obj is not None else 'None'}, not a "
            "tool call: pass the call objects or dicts the model returned (one call each: "
            f"{_expected(table)})", "malformed_call", call)
    kind = _get(obj, "type")
    fmt = table.reader_for_type(kind)
    raw: RawCall | None = None
    if fmt is not None:
        raw = fmt.read_call(obj, kind)
    else:
        for fmt in table.readers:
            raw = fmt.read_call(obj, kind)
            if raw is not None:
                break
    if raw is not None:
        fmt_name = fmt.name  # type: ignore[union-attr]
        name, call_id, raw_args, extra = raw
    elif kind is None and _has(obj, "name") and (
            _has(obj, "arguments") or _has(obj, "input") or _only_name_and_id(obj)):
        raw_args = _get(obj, "arguments")
        if raw_args is None:
            raw_args = _get(obj, "input")
        fmt_name, name, call_id, extra = "registry", _get(obj, "name"), _get(obj, "id"), None
    else:
        call = ToolCall(name=_name_of(obj), id=_str_or_none(_get(obj, "id")), raw=obj)
        what = f"of type {kind!r}" if isinstance(kind, str) else _describe(obj)
        raise CallParseError(
            f"tool call #{index} ({what}) is not a tool call this registry understands; "
            f"expected {_expected(table)}", "malformed_call", call)
    call = ToolCall(name=name if isinstance(name, str) else "", id=_str_or_none(call_id),
                    raw_arguments=raw_args, format=fmt_name, raw=obj)
    if extra:
        call.extra.update(extra)
    if not call.name:
        shown = "" if name is None else f" (got {type(name).__name__} {short_repr(name)})"
        raise CallParseError(f"tool call #{index} has no tool name{shown}: call a tool by its "
                             "exact name", "malformed_call", call)
    call.arguments = parse_arguments(raw_args, call)
    return call


def split_passthrough(calls: Sequence[Any], formats: FormatTable | None = None
                      ) -> tuple[list[tuple[int, Any]], list[Passthrough], list[str]]:
    """``calls`` (the model's output items) as ``(index, call)`` for the calls, the
    passthrough items (the provider's server-side tool search: not calls to execute, echoed
    in the answer) and the names of the tools those loaded, each in order."""
    table = BUILTIN if formats is None else formats
    kept: list[tuple[int, Any]] = []
    items: list[Passthrough] = []
    revealed: list[str] = []
    for index, obj in enumerate(calls):
        kind = None if isinstance(obj, ToolCall) else _get(obj, "type")
        fmt = table.passthrough_for_type(kind)
        if fmt is None:
            kept.append((index, obj))
        else:
            items.append((fmt, obj))
            revealed += fmt.revealed_by(obj, str(kind))
    return kept, items, revealed


def _expected(table: FormatTable) -> str:
    kinds = [table.get(n).call_shape or f"a {n} tool call" for n in table.names("calls")]
    return ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else "".join(kinds)


def _only_name_and_id(obj: Any) -> bool:
    try:
        return isinstance(obj, Mapping) and set(obj) <= {"name", "id"}
    except Exception:
        return False


def _name_of(obj: Any) -> str:
    name = _get(obj, "name")
    return name if isinstance(name, str) else ""


def short_repr(value: Any) -> str:
    """``repr(value)`` cut at 80 characters, for error messages (never raises)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


_KIND_NAMES: dict[type, str] = {list: "an array", str: "a string", int: "a number",
                                float: "a number", bool: "a boolean"}


def parse_arguments(raw: Any, call: ToolCall) -> dict[str, Any]:
    """Arguments as a new dict.

    Accepted: a mapping (copied); a JSON object string; an empty string, ``"null"`` or
    ``None`` (no arguments); a JSON string that itself holds a JSON object (a double encoding
    some models produce). Anything else is a :class:`CallParseError` of kind
    ``malformed_arguments`` whose message says what was wrong.
    """
    if type(raw) is dict:
        return raw.copy()
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        try:
            return dict(raw)
        except Exception as exc:
            raise CallParseError(f"arguments for tool {call.name!r} could not be read: {exc}",
                                 "malformed_arguments", call) from None
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            excerpt = raw if len(raw) <= 200 else raw[:200] + "..."
            raise CallParseError(
                f"arguments for tool {call.name!r} are not valid JSON ({exc.msg} at line "
                f"{exc.lineno} column {exc.colno}): {excerpt} -- send the arguments as one "
                "JSON object", "malformed_arguments", call) from None
        except RecursionError:
            raise CallParseError(f"arguments for tool {call.name!r} are nested too deeply",
                                 "malformed_arguments", call) from None
        if isinstance(value, str):
            try:
                inner = json.loads(value)
            except (ValueError, RecursionError):
                inner = None
            if isinstance(inner, dict):
                return inner
        if isinstance(value, dict):
            return value
        if value is None:
            return {}
        raw = value
    kind = _KIND_NAMES.get(type(raw), type(raw).__name__)
    raise CallParseError(
        f"arguments for tool {call.name!r} must be a JSON object of named arguments, got "
        f"{kind}", "malformed_arguments", call)
