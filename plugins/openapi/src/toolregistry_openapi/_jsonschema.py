"""OpenAPI schemas (Swagger 2.0 / OpenAPI 3.0 / 3.1) to plain JSON Schema 2020-12.

Every ``$ref`` becomes ``#/$defs/<name>``; each referenced schema is converted once per
document and shared by the tools that need it, and a tool's parameters carry exactly the
``$defs`` they reach (no dangling references). Keywords JSON Schema does not know
(``discriminator``, ``xml``, ``x-*``) and values of the wrong type are dropped, so every
emitted schema passes the 2020-12 meta-schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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
        self.defs[name] = {}  # placeholder: a cycle back to this schema finds the name
        refs: set[str] = set()
        value = target.value
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
        except BaseException:
            del self.defs[name]  # never leave a placeholder that reads as "any value"
            raise
        self.defs[name] = converted
        self.def_refs[name] = frozenset(refs)
        return name

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

    def convert(self, node: Mapping[str, Any], base: str | None, refs: set[str],
                depth: int) -> dict[str, Any]:
        """One schema object to JSON Schema 2020-12; referenced names are added to ``refs``."""
        if depth > self.limits.max_schema_depth:
            self.truncated += 1
            return {}
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
