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
    """One input of the "try it" form, from one property of the parameters schema."""

    name: str
    widget: str  # text, number, integer, boolean, select, json
    required: bool
    description: str
    choices: tuple[str, ...] = ()
    default: str = ""


def form_fields(parameters: Mapping[str, Any]) -> list[Field]:
    """The form's inputs, one per top-level property, in the schema's order."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    out = []
    for name, spec in props.items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = spec.get("type")
        if isinstance(kind, list):  # ["string", "null"]: the first real type
            kind = next((k for k in kind if k != "null"), None)
        default = spec.get("default")
        shown = "" if default is None else (
            default if isinstance(default, str) else json.dumps(default))
        desc = str(spec.get("description") or spec.get("title") or "")
        if "enum" in spec:
            out.append(Field(name, "select", name in required, desc,
                             tuple(json.dumps(v) for v in spec["enum"]),
                             json.dumps(default) if default is not None else ""))
        elif kind in ("string", "number", "integer", "boolean"):
            out.append(Field(name, "text" if kind == "string" else kind, name in required,
                             desc, default=shown))
        else:
            out.append(Field(name, "json", name in required, desc, default=shown))
    return out


def read_form(fields: list[Field], form: Mapping[str, str]) -> dict[str, Any]:
    """The arguments typed into the form; ``ValueError`` naming the field on bad input.
    Empty optional inputs are left out (the tool's default applies)."""
    args: dict[str, Any] = {}
    for f in fields:
        raw = str(form.get(f"arg.{f.name}", "")).strip()
        if raw == "":
            if f.required and f.widget not in ("text",):
                raise ValueError(f"{f.name}: required")
            if f.required:
                args[f.name] = ""
            continue
        try:
            if f.widget == "text":
                args[f.name] = raw
            elif f.widget == "integer":
                args[f.name] = int(raw)
            elif f.widget == "number":
                args[f.name] = float(raw)
            elif f.widget == "boolean":
                if raw not in ("true", "false"):
                    raise ValueError("choose true or false")
                args[f.name] = raw == "true"
            else:  # select (JSON-encoded choices) and json
                args[f.name] = json.loads(raw)
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


def latency_table(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """Per tool, by name: calls, errors and the 50th, 90th and 99th percentile and largest
    duration (seconds) of the logged calls."""
    by_tool: dict[str, list[Any]] = {}
    for e in entries:
        by_tool.setdefault(e.tool, []).append(e)
    rows = []
    for name, calls in sorted(by_tool.items()):
        durations = sorted(e.duration for e in calls)
        rows.append({"tool": name, "calls": len(calls),
                     "errors": sum(not e.ok for e in calls),
                     "p50": percentile(durations, 0.5), "p90": percentile(durations, 0.9),
                     "p99": percentile(durations, 0.99), "max": durations[-1]})
    return rows
