"""What the web UI shows, computed from the registry: tool rows and flags, schema sizes per
provider format, the "try it" form read from a JSON Schema, and the pending tool changes.
No web framework here: plain data for the templates and the tests."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry

TokenCounter = Callable[[str], int]
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def estimate_tokens(text: str) -> int:
    """A fast estimate of a text's tokens: its words and punctuation marks (JSON schemas are
    mostly both). Pass an exact counter (``tiktoken``) as ``token_counter=`` for real counts."""
    return len(_TOKEN.findall(text))


def compact(value: Any) -> str:
    """JSON as sent to a provider (no spaces)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@frozen
class ToolRow:
    """One tool as the tools page lists it."""

    name: str
    namespace: str
    kind: str
    source: str
    summary: str
    flags: tuple[str, ...]


def flags(registry: ToolRegistry, tool: Tool) -> tuple[str, ...]:
    """``disabled``, ``deferred``, ``changed`` (a server changed it; pending review),
    ``flagged`` (its description has screening findings)."""
    out = []
    if not registry.is_enabled(tool.name):
        out.append("disabled")
    if tool.metadata.defer:
        out.append("deferred")
    extra = tool.metadata.extra
    if extra.get("changed_since_registration"):
        out.append("changed")
    if extra.get("mcp_findings"):
        out.append("flagged")
    return tuple(out)


def tool_row(registry: ToolRegistry, tool: Tool) -> ToolRow:
    summary = tool.description.strip().split("\n", 1)[0][:160]
    prov = tool.provenance
    return ToolRow(name=tool.name, namespace=tool.namespace or "", kind=prov.kind,
                   source=prov.detail or prov.plugin or "", summary=summary,
                   flags=flags(registry, tool))


def select_tools(registry: ToolRegistry, *, q: str = "", namespace: str = "", kind: str = "",
                 flag: str = "") -> list[Tool]:
    """The tools (disabled ones too) whose name or description contains ``q`` (any case), in
    a namespace, of a provenance kind, with a flag; registration order."""
    tools = registry.get_tools(include_disabled=True)
    if namespace:
        tools = [t for t in tools if (t.namespace or "") == namespace]
    if kind:
        tools = [t for t in tools if t.provenance.kind == kind]
    if q:
        needle = q.casefold()
        tools = [t for t in tools if needle in t.name.casefold()
                 or needle in t.description.casefold()]
    if flag:
        tools = [t for t in tools if flag in flags(registry, t)]
    return tools


@frozen
class FormatView:
    """One tool's definition in one provider format."""

    api_format: str
    text: str
    bytes: int
    tokens: int
    error: str | None = None


def tool_formats(registry: ToolRegistry, name: str, count: TokenCounter) -> list[FormatView]:
    """The tool's definition in every provider format, pretty-printed, with its size."""
    out = []
    for fmt in registry.formats.names("schemas"):
        try:
            schema = registry.get_tool_schema(name, fmt)
        except Exception as exc:  # a format that cannot express this tool says why
            out.append(FormatView(fmt, "", 0, 0, f"{type(exc).__name__}: {exc}"))
            continue
        wire = compact(schema)
        out.append(FormatView(fmt, json.dumps(schema, indent=2, ensure_ascii=False),
                              len(wire.encode()), count(wire)))
    return out


def format_totals(registry: ToolRegistry, count: TokenCounter, include_deferred: bool
                  ) -> list[dict[str, Any]]:
    """Per provider format: how many tools the model is sent, their bytes and tokens."""
    rows = []
    for fmt in registry.formats.names("schemas"):
        schemas = registry.get_schemas(fmt, include_deferred=include_deferred)
        wire = [compact(s) for s in schemas]
        rows.append({"format": fmt, "tools": len(schemas),
                     "bytes": sum(len(w.encode()) for w in wire),
                     "tokens": sum(count(w) for w in wire)})
    return rows


def largest(registry: ToolRegistry, api_format: str, count: TokenCounter, limit: int,
            include_deferred: bool) -> list[dict[str, Any]]:
    """The ``limit`` largest tool definitions in ``api_format``."""
    fmt = registry.formats.get(api_format, "schemas")
    sized = []
    for schema in registry.get_schemas(api_format, include_deferred=include_deferred):
        wire = compact(schema)
        sized.append((len(wire.encode()), fmt.read_definition(schema).name, wire))
    sized.sort(key=lambda s: -s[0])
    return [{"name": name, "bytes": size, "tokens": count(wire)}
            for size, name, wire in sized[:limit]]


@frozen
class Field:
    """One input of the "try it" form, from one property of the parameters schema.

    ``name``: the input's path (``order.qty`` inside an object), ``key`` the property;
    ``widget``: text, number, integer, boolean, select, list (one item a line, of ``item``
    type), object (a fieldset of ``children``) or json; ``labels``: what each of the
    (JSON-encoded) ``choices`` shows; ``constraints``: the schema's limits as HTML attributes
    (``min``, ``max``, ``minlength``, ``maxlength``), which the browser checks."""

    name: str
    widget: str
    required: bool
    description: str
    choices: tuple[str, ...] = ()
    default: str = ""
    key: str = ""
    labels: tuple[str, ...] = ()
    children: tuple[Field, ...] = ()
    constraints: tuple[tuple[str, str], ...] = ()
    item: str = ""
    json_type: str = ""


_SCALARS = ("string", "number", "integer", "boolean")
_LIMITS = (("minimum", "min"), ("maximum", "max"), ("minLength", "minlength"),
           ("maxLength", "maxlength"), ("minItems", "data-min-items"),
           ("maxItems", "data-max-items"))


def _resolve(raw: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with a local ``$ref`` (``#/$defs/Order``) followed, and an optional value
    (``anyOf`` a type and ``null``) as that type."""
    spec: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    for _ in range(8):
        ref = spec.pop("$ref", None)
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        spec = {**(target if isinstance(target, Mapping) else {}), **spec}
    options = spec.get("anyOf")
    if isinstance(options, list):
        real = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
        if len(real) == 1:
            spec = {**_resolve(real[0], root), **{k: v for k, v in spec.items()
                                                   if k != "anyOf"}}
    return spec


def _kind(spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first real type
        kind = next((k for k in kind if k != "null"), None)
    return kind


def form_fields(parameters: Mapping[str, Any], prefix: str = "",
                root: Mapping[str, Any] | None = None, depth: int = 0) -> list[Field]:
    """The form's inputs, one per property, in the schema's order; an object's properties
    nested (as a fieldset) down to a few levels, deeper ones as JSON."""
    root = parameters if root is None else root
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    out = []
    for key, raw in props.items():
        spec = _resolve(raw, root)
        name = f"{prefix}{key}"
        kind = _kind(spec)
        default = spec.get("default")
        shown = "" if default is None else (
            default if isinstance(default, str) else json.dumps(default))
        desc = str(spec.get("description") or spec.get("title") or "")
        limits = tuple((attr, json.dumps(spec[word])) for word, attr in _LIMITS
                       if isinstance(spec.get(word), (int, float)))
        common = {"name": name, "required": key in required, "description": desc,
                  "key": key, "constraints": limits}
        items = _resolve(spec.get("items"), root) if kind == "array" else {}
        if "enum" in spec:
            out.append(Field(widget="select", choices=tuple(json.dumps(v) for v in spec["enum"]),
                             labels=tuple(v if isinstance(v, str) else json.dumps(v)
                                          for v in spec["enum"]),
                             default=json.dumps(default) if default is not None else "",
                             **common))
        elif kind in _SCALARS:
            out.append(Field(widget="text" if kind == "string" else kind, default=shown,
                             **common))
        elif kind == "object" and spec.get("properties") and depth < 4:
            out.append(Field(widget="object", children=tuple(
                form_fields(spec, f"{name}.", root, depth + 1)), **common))
        elif kind == "array" and _kind(items) in ("string", "number", "integer") \
                and "enum" not in items:
            lines = "\n".join(str(v) for v in default) if isinstance(default, list) else ""
            out.append(Field(widget="list", item=_kind(items), default=lines, **common))
        else:
            out.append(Field(widget="json", default=shown,
                             json_type=kind if kind in ("object", "array") else "", **common))
    return out


def _scalar(widget: str, raw: str) -> Any:
    if widget == "text":
        return raw
    if widget == "integer":
        return int(raw)
    if widget == "number":
        return float(raw)
    if widget == "boolean":
        if raw not in ("true", "false"):
            raise ValueError("choose true or false")
        return raw == "true"
    return json.loads(raw)  # select (JSON-encoded choices) and json


def read_form(fields: list[Field] | tuple[Field, ...],
              form: Mapping[str, str]) -> dict[str, Any]:
    """The arguments typed into the form; ``ValueError`` naming the field on bad input.
    Empty optional inputs are left out (the tool's default applies); an object whose
    inputs are all empty is left out unless it is required."""
    args: dict[str, Any] = {}
    for f in fields:
        key = f.key or f.name
        if f.widget == "object":
            inner = read_form(f.children, form)
            if inner or f.required:
                args[key] = inner
            continue
        raw = str(form.get(f"arg.{f.name}", "")).strip()
        if raw == "":
            if f.required and f.widget not in ("text", "list"):
                raise ValueError(f"{f.name}: required")
            if f.required:
                args[key] = "" if f.widget == "text" else []
            continue
        try:
            if f.widget == "list":
                args[key] = [_scalar("text" if f.item == "string" else f.item, line.strip())
                             for line in raw.splitlines() if line.strip()]
            else:
                args[key] = _scalar(f.widget, raw)
        except ValueError as exc:
            raise ValueError(f"{f.name}: {exc}") from None
    return args


def pending_changes(registry: ToolRegistry) -> list[dict[str, Any]]:
    """The tool changes waiting for review (the kernel's ``registry.pending_changes()``), each
    as a diff against the registered version, with the screening findings of the version
    under review."""
    out = []
    for change in registry.pending_changes():
        tool = registry.get_tool(change.tool)
        if tool is None:
            continue
        out.append({
            "name": change.tool,
            "hash": change.version,
            "accepted_hash": change.accepted,
            "source": change.source,
            "kept": change.kept,
            "description_diff": diff(tool.description, change.description),
            "schema_diff": diff(json.dumps(tool.parameters, indent=2, sort_keys=True),
                                json.dumps(change.parameters, indent=2, sort_keys=True)),
            "findings": [dict(f) for f in change.findings],
        })
    return out


def diff(old: str, new: str) -> list[tuple[str, str]]:
    """A unified line diff as (kind, line): kind is ``+``, ``-``, `` `` or ``@``."""
    import difflib

    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), "accepted",
                                     "pending", lineterm="", n=3):
        if line.startswith(("---", "+++")):
            continue
        kind = line[:1] if line[:1] in "+-@" else " "
        out.append((kind, line[1:] if kind in "+- " else line))
    return out


def percentile(ordered: list[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted values (``fraction`` 0.5 is the median)."""
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


def latency_table(calls: Iterable[tuple[str, float, bool]]) -> list[dict[str, Any]]:
    """Per tool, by name: calls, errors and the 50th, 90th and 99th percentile and largest
    duration (seconds) of ``(tool, duration, ok)`` of logged calls."""
    by_tool: dict[str, list[tuple[str, float, bool]]] = {}
    for call in calls:
        by_tool.setdefault(call[0], []).append(call)
    rows = []
    for name, made in sorted(by_tool.items()):
        durations = sorted(c[1] for c in made)
        rows.append({"tool": name, "calls": len(made),
                     "errors": sum(not c[2] for c in made),
                     "p50": percentile(durations, 0.5), "p90": percentile(durations, 0.9),
                     "p99": percentile(durations, 0.99), "max": durations[-1]})
    return _charted(rows)


def _charted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with the widths (0-100, of the busiest tool's calls and of the slowest p99) of
    its small charts: one bar of calls (its errors in it), three nested bars of latency."""
    most = max((r["calls"] for r in rows), default=0) or 1
    slowest = max((r["p99"] or 0.0 for r in rows), default=0.0) or 1.0

    def width(value: float | None, of: float) -> float:
        return round(max(100.0 * (value or 0.0) / of, 0.5), 2)

    for r in rows:
        r["chart"] = {"calls": width(r["calls"], most), "errors": width(r["errors"], most)
                      if r["errors"] else 0.0, "p50": width(r["p50"], slowest),
                      "p90": width(r["p90"], slowest), "p99": width(r["p99"], slowest)}
    return rows
