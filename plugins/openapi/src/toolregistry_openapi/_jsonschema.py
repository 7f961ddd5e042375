"""OpenAPI schemas (Swagger 2.0 / OpenAPI 3.0 / 3.1) to plain JSON Schema 2020-12.

Every ``$ref`` becomes ``#/$defs/<name>``; each referenced schema is converted once per
document and shared by the tools that need it, and a tool's parameters carry exactly the
``$defs`` they reach (no dangling references). Keywords JSON Schema does not know
(``discriminator``, ``xml``, ``x-*``) and values of the wrong type are dropped, so every
emitted schema passes the 2020-12 meta-schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

from ._document import Limits, Resolver
from ._errors import OpenAPIError

__all__ = ["SchemaConverter"]

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_STRING_KEYS = frozenset({"title", "description", "format", "pattern", "contentMediaType",
                          "contentEncoding", "$comment"})
_NUMBER_KEYS = frozenset({"minimum", "maximum", "multipleOf"})
_COUNT_KEYS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties",
                         "maxProperties", "minContains", "maxContains"})
_BOOL_KEYS = frozenset({"uniqueItems", "readOnly", "writeOnly", "deprecated"})
_ANY_KEYS = frozenset({"default", "const"})
_SCHEMA_KEYS = frozenset({"not", "contains", "propertyNames", "if", "then", "else",
                          "unevaluatedItems", "unevaluatedProperties", "additionalItems"})
_SCHEMA_LIST_KEYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP_KEYS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_UNSAFE_DEF = re.compile(r"[^A-Za-z0-9_.-]+")
_REF_SIBLINGS_OLD = frozenset({"description", "title"})


class SchemaConverter:
    """Converts schemas of one document set; named schemas once, shared across tools."""

    def __init__(self, resolver: Resolver, version: str, limits: Limits) -> None:
        self.resolver = resolver
        self.version = version  # "2.0", "3.0" or "3.1"
        self.limits = limits
        self.defs: dict[str, Any] = {}
        self.def_refs: dict[str, frozenset[str]] = {}
        self._names: dict[tuple[str | None, str], str] = {}
        self._closures: dict[str, frozenset[str]] = {}
        self._shared: dict[tuple[int, str | None, int],
                           tuple[Mapping[str, Any], dict[str, Any], frozenset[str]]] = {}
        self.truncated = 0
        self.memo: dict[Any, Any] = {}  # for callers' per-object results (parameters)
        # Conversion work is bounded per unit (one operation's inline schemas, one named
        # schema): every converted node is at least "{}" in the JSON text, so a unit of more
        # than half of max_tool_schema_bytes nodes cannot fit in any tool that reaches it.
        self._nodes = 0
        self._node_budget = max(1, limits.max_tool_schema_bytes // 2)
        self._failed: dict[str, str] = {}  # named schemas that cannot be converted, and why
        self._sizes: dict[int, tuple[Any, int]] = {}  # JSON sizes of values, by identity
        self._entry_sizes: dict[str, int] = {}  # JSON sizes of '"name":def' in $defs

    # -- naming ---------------------------------------------------------------------------
    def _def_name(self, uri: str | None, pointer: str) -> str:
        key = (uri, pointer)
        name = self._names.get(key)
        if name is not None:
            return name
        parts = [p for p in pointer.split("/") if p]
        if (len(parts) == 3 and parts[:2] == ["components", "schemas"]) or (
            len(parts) == 2 and parts[0] == "definitions"
        ):
            base = parts[-1]
        else:
            base = "_".join(p for p in parts if p not in ("components", "schemas")) or "root"
        if uri is not None and uri != self.resolver.root_uri:
            stem = re.split(r"[\\/]", uri.rstrip("/"))[-1].rsplit(".", 1)[0]
            base = f"{stem}.{base}" if parts else stem
        base = _UNSAFE_DEF.sub("_", base.replace("~1", "_").replace("~0", "_"))[:80] or "schema"
        name = base
        n = 2
        taken = set(self._names.values())
        while name in taken:
            name = f"{base}_{n}"
            n += 1
        self._names[key] = name
        return name

    def ref(self, ref: Any, base: str | None) -> str:
        """The ``$defs`` name of the schema ``ref`` points at (converted on first use)."""
        target = self.resolver.resolve(ref, base)
        name = self._def_name(target.uri, target.pointer)
        if name in self.defs:
            return name
        failed = self._failed.get(name)
        if failed is not None:  # converting it again would fail again, at the same cost
            raise OpenAPIError(failed)
        self.defs[name] = {}  # placeholder: a cycle back to this schema finds the name
        refs: set[str] = set()
        value = target.value
        outer_nodes, self._nodes = self._nodes, 0
        try:
            if isinstance(value, bool):
                converted: Any = value
            elif isinstance(value, dict):
                converted = self.convert(value, target.uri, refs, 0)
            else:
                raise OpenAPIError(
                    f"$ref {ref!r} in {base or 'the document'} points at a "
                    f"{type(value).__name__}, not a schema: fix the reference"
                )
        except BaseException as exc:
            del self.defs[name]  # never leave a placeholder that reads as "any value"
            if isinstance(exc, OpenAPIError):
                self._failed[name] = str(exc)
            raise
        finally:
            self._nodes = outer_nodes
        self.defs[name] = converted
        self.def_refs[name] = frozenset(refs)
        cycle = self._ref_cycle(name)
        if cycle is not None:
            # Each schema of the cycle is only a $ref to the next: no value is described,
            # and a validator following them never ends. Every one of them is refused.
            root = self.resolver.root_uri
            where = {n: f"{u if u != root else ''}#{p}" for (u, p), n in self._names.items()}
            text = " -> ".join(where.get(n, n) for n in cycle)
            message = (f"$ref cycle with no schema in it: {text} (each only refers to the "
                       "next): fix the references")
            for member in cycle:
                self.defs.pop(member, None)
                self.def_refs.pop(member, None)
                self._failed[member] = message
            raise OpenAPIError(message)
        return name

    def _ref_cycle(self, start: str) -> list[str] | None:
        """The names of a cycle through ``start`` made only of ``$ref`` (``start`` first and
        last), or ``None``. Cycles that pass through properties, items or combinators
        describe values (a tree, a discriminated union) and are kept."""
        chain = [start]
        while True:
            node = self.defs.get(chain[-1])
            ref = node.get("$ref") if isinstance(node, dict) else None
            if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
                return None
            nxt = ref[len("#/$defs/"):]
            if nxt == start:
                return [*chain, start]
            if nxt in chain:
                return None
            chain.append(nxt)

    def closure(self, names: Iterable[str]) -> dict[str, Any]:
        """``$defs`` for a schema that references ``names`` directly."""
        out: set[str] = set()
        for name in names:
            cached = self._closures.get(name)
            if cached is None:
                cached = self._closure_of(name)
            out |= cached
        return {n: self.defs[n] for n in sorted(out)}

    def _closure_of(self, start: str) -> frozenset[str]:
        seen = {start}
        todo = [start]
        while todo:
            for nxt in self.def_refs.get(todo.pop(), ()):
                if nxt not in seen:
                    cached = self._closures.get(nxt)
                    if cached is not None:
                        seen |= cached
                    else:
                        seen.add(nxt)
                        todo.append(nxt)
        result = frozenset(seen)
        self._closures[start] = result
        return result

    # -- conversion -----------------------------------------------------------------------
    def convert_shared(self, node: Mapping[str, Any], base: str | None, refs: set[str],
                       depth: int, strip: frozenset[str] = frozenset()) -> dict[str, Any]:
        """:meth:`convert` memoised by object identity, for schemas many operations share
        (a ``$ref``-ed parameter's schema is one object in the document). ``strip``: keys
        of ``node`` that are not schema keywords (a Swagger 2 parameter is its own schema).
        The result is shared: callers copy before changing it."""
        key = (id(node), base, depth)
        hit = self._shared.get(key)
        if hit is None or hit[0] is not node:
            local: set[str] = set()
            source = {k: v for k, v in node.items() if k not in strip} if strip else node
            hit = (node, self.convert(source, base, local, depth), frozenset(local))
            self._shared[key] = hit
        refs |= hit[2]
        return hit[1]

    def start_operation(self) -> None:
        """Begin the conversion budget of one operation's own (inline) schemas."""
        self._nodes = 0

    def convert(self, node: Mapping[str, Any], base: str | None, refs: set[str],
                depth: int) -> dict[str, Any]:
        """One schema object to JSON Schema 2020-12; referenced names are added to ``refs``."""
        if depth > self.limits.max_schema_depth:
            self.truncated += 1
            return {}
        self._nodes += 1
        if self._nodes > self._node_budget:
            raise OpenAPIError(
                f"its schema has more than {self._node_budget} nodes, so it cannot fit in "
                f"Limits.max_tool_schema_bytes ({self.limits.max_tool_schema_bytes} bytes of "
                "JSON per tool; shared YAML aliases expand here): raise "
                "limits=Limits(max_tool_schema_bytes=...) if you trust the document"
            )
        if "$ref" in node:
            name = self.ref(node["$ref"], base)
            refs.add(name)
            out: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
            if self.version == "3.1":
                rest = {k: v for k, v in node.items() if k != "$ref"}
                if rest:
                    out.update(self.convert(rest, base, refs, depth + 1))
            else:  # siblings of $ref are ignored before 3.1; keep what helps the model
                for key in _REF_SIBLINGS_OLD:
                    if isinstance(node.get(key), str):
                        out[key] = node[key]
            return out
        old = self.version != "3.1"
        out = {}
        nullable = old and (node.get("nullable") is True or node.get("x-nullable") is True)
        for key, value in node.items():
            if not isinstance(key, str):
                continue
            if key == "type":
                t = self._type(value, out)
                if t is not None:
                    out["type"] = t
            elif key in _SCHEMA_MAP_KEYS:
                if isinstance(value, dict):
                    out[key] = {
                        str(k): self._sub(v, base, refs, depth) for k, v in value.items()
                        if isinstance(v, (dict, bool))
                    }
            elif key == "items":
                if isinstance(value, (dict, bool)):
                    out["items"] = self._sub(value, base, refs, depth)
                elif isinstance(value, list):  # draft-4 tuple form
                    prefix = [self._sub(v, base, refs, depth) for v in value
                              if isinstance(v, (dict, bool))]
                    if prefix:
                        out["prefixItems"] = prefix
            elif key == "additionalProperties" or key in _SCHEMA_KEYS:
                if isinstance(value, (dict, bool)):
                    out[key] = self._sub(value, base, refs, depth)
            elif key in _SCHEMA_LIST_KEYS:
                if isinstance(value, list):
                    items = [self._sub(v, base, refs, depth) for v in value
                             if isinstance(v, (dict, bool))]
                    if items:
                        out[key] = items
            elif key == "required":
                if isinstance(value, list):
                    out[key] = list(dict.fromkeys(str(v) for v in value
                                                  if isinstance(v, (str, int))
                                                  and not isinstance(v, bool)))
            elif key == "enum":
                if isinstance(value, list) and value:
                    out[key] = list(value)
            elif key in _STRING_KEYS:
                if isinstance(value, str):
                    out[key] = value
            elif key in _NUMBER_KEYS:
                if _is_number(value) and not (key == "multipleOf" and value <= 0):
                    out[key] = value
            elif key in _COUNT_KEYS:
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    out[key] = value
            elif key in _BOOL_KEYS:
                if isinstance(value, bool):
                    out[key] = value
            elif key in _ANY_KEYS:
                out[key] = value
            elif key in ("exclusiveMinimum", "exclusiveMaximum"):
                if _is_number(value):
                    out[key] = value
            elif key == "example":
                out.setdefault("examples", [value])
            elif key == "examples":
                if isinstance(value, list):
                    out["examples"] = value
            elif key == "dependentRequired" and isinstance(value, dict):
                out[key] = {str(k): list(dict.fromkeys(x for x in v if isinstance(x, str)))
                            for k, v in value.items() if isinstance(v, list)}
            # everything else (discriminator, xml, externalDocs, x-*, $id, $defs, ...) dropped:
            # nested $defs are reached only through $ref, which makes them top-level defs.
        if old:
            for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
                if node.get(key) is True and bound in out:
                    out[key] = out.pop(bound)
        if nullable:
            _add_null(out)
        return out

    def check_size(self, parameters: Mapping[str, Any]) -> None:
        """Refuse a tool whose parameters schema is larger than
        ``Limits.max_tool_schema_bytes`` (its compact JSON text, ``$defs`` included)."""
        limit = self.limits.max_tool_schema_bytes
        if self.schema_size(parameters, limit) > limit:
            raise OpenAPIError(
                f"its parameters schema is more than {limit} bytes of JSON "
                "(Limits.max_tool_schema_bytes; enum, default or example values and the "
                "$defs it reaches all count): raise limits=Limits(max_tool_schema_bytes=...) "
                "if you trust the document, or exclude= the operation"
            )

    def schema_size(self, parameters: Mapping[str, Any], limit: int) -> int:
        """The length of ``json.dumps(parameters, separators=(",", ":"))``, or some number
        above ``limit`` once it is known to be larger."""
        size = 1 + max(len(parameters), 1)
        for key, value in parameters.items():
            size += 1 + len(encode_basestring_ascii(key))
            if key == "$defs":  # the same entries in many tools: each measured once
                size += 1 + max(len(value), 1)
                for name in value:
                    size += self._def_entry_size(name, limit)
                    if size > limit:
                        break
            else:
                size += json_size(value, limit, self._sizes)
            if size > limit:
                break
        return size

    def _def_entry_size(self, name: str, limit: int) -> int:
        size = self._entry_sizes.get(name)
        if size is None:
            size = len(encode_basestring_ascii(name)) + 1 + json_size(
                self.defs[name], limit, self._sizes)
            self._entry_sizes[name] = size
        return size

    def _sub(self, value: Any, base: str | None, refs: set[str], depth: int) -> Any:
        if isinstance(value, bool):
            return value
        return self.convert(value, base, refs, depth + 1)

    def _type(self, value: Any, out: dict[str, Any]) -> Any:
        if isinstance(value, str):
            if value in _TYPES:
                return value
            if value == "file":  # Swagger 2 upload
                out.setdefault("format", "binary")
                return "string"
            return None
        if isinstance(value, list):
            kinds = list(dict.fromkeys(v for v in value if isinstance(v, str) and v in _TYPES))
            if not kinds:
                return None
            return kinds[0] if len(kinds) == 1 else kinds
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _add_null(out: dict[str, Any]) -> None:
    t = out.get("type")
    if isinstance(t, str):
        if t != "null":
            out["type"] = [t, "null"]
    elif isinstance(t, list):
        if "null" not in t:
            out["type"] = [*t, "null"]
    else:
        return  # no type: already admits null unless a combinator says otherwise
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]


def json_size(value: Any, limit: int, memo: dict[int, tuple[Any, int]]) -> int:
    """``len(json.dumps(value, separators=(",", ":")))`` without building the text: shared
    containers (a YAML alias, a ``$defs`` entry in every tool) are measured once, by identity,
    so the cost is linear in the distinct values while the size is that of the expanded text.
    Stops early: any result above ``limit`` means "too large". ``memo`` keeps what it measured
    alive, so that an identity is never reused for another value."""
    kind: Any = type(value)
    if kind is str:
        return len(encode_basestring_ascii(value))
    if kind is not dict and kind is not list:
        if isinstance(value, Mapping):
            kind = dict
        elif isinstance(value, (list, tuple)):
            kind = list
        else:
            return _scalar_size(value)
    key = id(value)
    known = memo.get(key)
    if known is not None and known[0] is value:
        return known[1]
    total = 1 + max(len(value), 1)  # brackets and the commas between items
    enc = encode_basestring_ascii
    if kind is dict:
        for k, v in value.items():
            total += 1 + (len(enc(k)) if type(k) is str else len(_key(k)) + 2)
            total += len(enc(v)) if type(v) is str else json_size(v, limit, memo)
            if total > limit:
                break
    else:
        for v in value:
            total += len(enc(v)) if type(v) is str else json_size(v, limit, memo)
            if total > limit:
                break
    memo[key] = (value, total)
    return total


def _scalar_size(value: Any) -> int:
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, (int, float)):
        return len(_number(value))
    if isinstance(value, str):
        return len(encode_basestring_ascii(value))
    return len(repr(value))  # not JSON: the emission fails on it anyway


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return int.__repr__(value)
    if math.isfinite(value):
        return float.__repr__(value)
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def _key(key: Any) -> str:
    # json.dumps writes non-string keys as their JSON text, quoted
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    return _number(key) if isinstance(key, (int, float)) else str(key)
