"""OpenAPI operations to tool descriptions: names, descriptions, one parameters schema each.

Layout of a tool's parameters (one JSON Schema object):

* path, query, header and cookie parameters are top-level properties named after the
  parameter (characters outside ``[A-Za-z0-9_.-]`` become ``_``); when two parameters in
  different places share a name, the later one is prefixed with its place (``header_id``).
* the request body, when there is one, is the single property ``body`` holding the body's
  own schema (an object for JSON / form / multipart bodies). Keeping it nested means a body
  property can never clash with a parameter, and non-object bodies (arrays, strings,
  ``oneOf``) need no special case.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ._document import Resolver
from ._errors import OpenAPIError
from ._jsonschema import SchemaConverter

__all__ = ["METHODS", "BodySpec", "Operation", "ParamSpec", "SpecInfo", "extract"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_LOCATION_ORDER = {"path": 0, "query": 1, "header": 2, "cookie": 3}
_UNSAFE_ARG = re.compile(r"[^A-Za-z0-9_.-]")
_SWAGGER2_NON_SCHEMA = frozenset({"name", "in", "required", "description", "collectionFormat",
                                  "allowEmptyValue", "schema"})


@frozen
class ParamSpec:
    """Where one tool argument goes in the request and how it is serialised."""

    arg: str
    name: str
    location: str  # path | query | header | cookie
    required: bool
    style: str
    explode: bool
    kind: str = "scalar"  # scalar | array | object | json (a ``content`` parameter)


@frozen
class BodySpec:
    """The request body: media type and, for forms, per-field encoding."""

    media_type: str
    required: bool
    file_fields: frozenset[str] = frozenset()
    deep_fields: frozenset[str] = frozenset()  # form fields encoded deepObject-style


@frozen
class Operation:
    """One HTTP operation, ready to become a tool."""

    method: str
    path: str
    name: str
    operation_id: str | None
    description: str
    tags: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    body: BodySpec | None
    security: tuple[Mapping[str, Any], ...] | None
    servers: tuple[Mapping[str, Any], ...]
    parameters: dict[str, Any] = field(repr=False)
    deprecated: bool = False


@frozen
class SpecInfo:
    """Document-level facts the calls need."""

    version: str  # "2.0" | "3.0" | "3.1"
    title: str
    servers: tuple[Mapping[str, Any], ...]
    security_schemes: Mapping[str, Mapping[str, Any]]
    operation_count: int


def spec_version(root: Mapping[str, Any], where: str) -> str:
    """"2.0", "3.0" or "3.1", or an error naming what the document says."""
    if "swagger" in root:
        if str(root["swagger"]).strip() != "2.0":
            raise OpenAPIError(f"{where}: unsupported Swagger version {root['swagger']!r}")
        return "2.0"
    raw = str(root.get("openapi", "")).strip()
    if raw.startswith("3.0"):
        return "3.0"
    if raw.startswith(("3.1", "3.2")):
        return "3.1"
    if "openapi" in root:
        raise OpenAPIError(f"{where}: unsupported OpenAPI version {root['openapi']!r} (2.0, 3.0, 3.1)")
    keys = ", ".join(sorted(str(k) for k in list(root)[:8]))
    raise OpenAPIError(
        f"{where} is not an OpenAPI document (no 'openapi' or 'swagger' field; top-level keys: "
        f"{keys or 'none'})"
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _method_path_name(method: str, path: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", path) if w]
    return "_".join([method, *words]) if words else method


def _matches(patterns: Iterable[str], keys: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(k, p) for p in patterns for k in keys)


def _schema_servers(root: Mapping[str, Any], version: str) -> tuple[Mapping[str, Any], ...]:
    if version == "2.0":
        host = root.get("host")
        base_path = _text(root.get("basePath")) or ""
        schemes = [s for s in root.get("schemes") or [] if s in ("https", "http")]
        if not host:
            return ({"url": base_path or "/"},) if base_path else ()
        scheme = "https" if "https" in schemes or not schemes else schemes[0]
        return ({"url": f"{scheme}://{host}{base_path}"},)
    servers = root.get("servers")
    if isinstance(servers, list):
        return tuple(s for s in servers if isinstance(s, dict) and isinstance(s.get("url"), str))
    return ()


def extract(
    root: Mapping[str, Any],
    resolver: Resolver,
    converter: SchemaConverter,
    *,
    where: str,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    strict: bool = True,
    on_skip: Any = None,
) -> tuple[SpecInfo, list[Operation]]:
    """Every operation in ``root`` (paths x methods) as an :class:`Operation`.

    ``include`` / ``exclude`` are glob patterns matched against the tool name, the
    operationId, ``"METHOD /path"`` and ``"tag:<tag>"``. With ``strict=False`` an operation
    that cannot be converted (a dangling or refused ``$ref``) is skipped and reported to
    ``on_skip(method, path, error)`` instead of failing the whole document.
    """
    version = converter.version
    paths = root.get("paths") or {}
    if not isinstance(paths, dict):
        raise OpenAPIError(f"{where}: 'paths' must be a mapping")
    base = resolver.root_uri
    schemes: Mapping[str, Any]
    if version == "2.0":
        schemes = root.get("securityDefinitions") or {}
    else:
        comps = root.get("components") or {}
        schemes = comps.get("securitySchemes") or {} if isinstance(comps, dict) else {}
    resolved_schemes: dict[str, Mapping[str, Any]] = {}
    for sname, scheme in (schemes.items() if isinstance(schemes, dict) else ()):
        value, _ = resolver.deref(scheme, base)
        if isinstance(value, dict):
            resolved_schemes[str(sname)] = value
    global_security = root.get("security")

    # Pass 1: names for every operation (stable whatever include/exclude select).
    raw_ops: list[tuple[str, str, Mapping[str, Any], Mapping[str, Any], str | None]] = []
    for path, item in paths.items():
        if not isinstance(path, str) or not path.startswith("/"):
            continue
        try:
            item_value, item_base = resolver.deref(item, base)
        except OpenAPIError as exc:
            if strict:
                raise OpenAPIError(f"{where}: path {path!r}: {exc}") from None
            if on_skip is not None:
                on_skip("*", path, str(exc))
            continue
        if not isinstance(item_value, dict):
            continue
        for method in METHODS:
            op = item_value.get(method)
            if isinstance(op, dict):
                raw_ops.append((method, path, item_value, op, item_base))

    from toolregistry.plugin import normalize_name

    names: list[str] = []
    used: set[str] = set()
    for method, path, _item, op, _b in raw_ops:
        op_id = op.get("operationId")
        candidate = normalize_name(op_id) if isinstance(op_id, str) and op_id.strip() else (
            normalize_name(_method_path_name(method, path)))
        name, n = candidate, 2
        while name in used:
            suffix = f"_{n}"
            name = candidate[: 64 - len(suffix)] + suffix
            n += 1
        used.add(name)
        names.append(name)

    servers = _schema_servers(root, version)
    operations: list[Operation] = []
    for (method, path, item, op, item_base), name in zip(raw_ops, names, strict=True):
        op_id = op.get("operationId") if isinstance(op.get("operationId"), str) else None
        tags = tuple(str(t) for t in op.get("tags") or () if isinstance(t, (str, int)))
        if include or exclude:
            keys = [name, f"{method.upper()} {path}", *(f"tag:{t}" for t in tags)]
            if op_id:
                keys.append(op_id)
            if include and not _matches(include, keys):
                continue
            if exclude and _matches(exclude, keys):
                continue
        try:
            operations.append(
                _operation(root, resolver, converter, method, path, item, op, item_base, name,
                           op_id, tags, global_security)
            )
        except (OpenAPIError, RecursionError) as exc:
            text = str(exc) if isinstance(exc, OpenAPIError) else "nested too deeply"
            if strict:
                raise OpenAPIError(
                    f"{where}: operation {method.upper()} {path}"
                    f"{f' ({op_id})' if op_id else ''}: {text} (pass strict=False to skip "
                    "operations that cannot be converted)"
                ) from None
            if on_skip is not None:
                on_skip(method.upper(), path, text)
    info_title = root.get("info", {}).get("title") if isinstance(root.get("info"), dict) else None
    info = SpecInfo(
        version=version,
        title=_text(info_title) or where,
        servers=servers,
        security_schemes=resolved_schemes,
        operation_count=len(raw_ops),
    )
    return info, operations


_ParamInfo = tuple[dict[str, Any], str, str, bool, frozenset[str]]


def _param_schema(value: dict[str, Any], base: str | None, loc: str, resolver: Resolver,
                  converter: SchemaConverter, refs: set[str]) -> tuple[dict[str, Any], str, str,
                                                                      bool]:
    """(schema, kind, style, explode) of one parameter; memoised by identity, since a
    ``$ref``-ed parameter is one object used by many operations."""
    memo: dict[tuple[int, str | None, str], tuple[dict[str, Any], _ParamInfo]]
    memo = converter.memo
    key = (id(value), base, loc)
    hit = memo.get(key)
    if hit is None or hit[0] is not value:
        local: set[str] = set()
        hit = (value, _param_info(value, base, loc, resolver, converter, local))
        memo[key] = hit
    schema, kind, style, explode, used = hit[1]
    refs |= used
    return schema, kind, style, explode


def _param_info(value: dict[str, Any], base: str | None, loc: str, resolver: Resolver,
                converter: SchemaConverter, refs: set[str]) -> _ParamInfo:
    kind = "scalar"
    if converter.version == "2.0":
        schema = converter.convert_shared(value, base, refs, 1, _SWAGGER2_NON_SCHEMA)
        kind = _param_kind(value, resolver, base)
        cf = value.get("collectionFormat", "csv")
        style, explode = _COLLECTION_FORMATS.get(
            cf, ("form" if loc == "query" else "simple", False))
    else:
        raw = value.get("schema")
        if raw is None and isinstance(value.get("content"), dict) and value["content"]:
            media = next(iter(value["content"].values()))
            raw = media.get("schema") if isinstance(media, dict) else None
            kind = "json"
        if isinstance(raw, dict):
            schema = converter.convert_shared(raw, base, refs, 1)
        elif raw is False:
            schema = {"not": {}}
        else:
            schema = {}
        if kind != "json":
            kind = _param_kind(raw, resolver, base) if raw is not None else "scalar"
        default_style = "form" if loc in ("query", "cookie") else "simple"
        style = str(value.get("style") or default_style)
        explode = bool(value.get("explode", style == "form"))
    desc = _text(value.get("description"))
    if desc and "description" not in schema:
        schema = {**schema, "description": desc}
    if value.get("deprecated") is True:
        schema = {**schema, "deprecated": True}
    return schema, kind, style, explode, frozenset(refs)


_COLLECTION_FORMATS = {
    "multi": ("form", True), "ssv": ("spaceDelimited", False),
    "pipes": ("pipeDelimited", False), "tsv": ("tabDelimited", False),
}


def _param_kind(schema: Any, resolver: Resolver, base: str | None) -> str:
    try:
        value, _ = resolver.deref(schema, base)
    except OpenAPIError:
        return "scalar"
    if not isinstance(value, dict):
        return "scalar"
    t = value.get("type")
    if t == "array" or (isinstance(t, list) and "array" in t):
        return "array"
    if t == "object" or (isinstance(t, list) and "object" in t) or "properties" in value:
        return "object"
    return "scalar"


def _operation(
    root: Mapping[str, Any],
    resolver: Resolver,
    converter: SchemaConverter,
    method: str,
    path: str,
    item: Mapping[str, Any],
    op: Mapping[str, Any],
    base: str | None,
    name: str,
    op_id: str | None,
    tags: tuple[str, ...],
    global_security: Any,
) -> Operation:
    version = converter.version
    converter.start_operation()
    # path-level parameters first, then the operation's, which override by (name, in)
    merged: dict[tuple[str, str], tuple[dict[str, Any], str | None]] = {}
    for source in (item.get("parameters"), op.get("parameters")):
        if not isinstance(source, list):
            continue
        for raw in source:
            value, pbase = resolver.deref(raw, base)
            if not isinstance(value, dict) or not isinstance(value.get("name"), (str, int)):
                continue
            merged[(str(value["name"]), str(value.get("in")))] = (value, pbase)

    refs: set[str] = set()
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[ParamSpec] = []
    form_params: list[tuple[Mapping[str, Any], str | None]] = []
    body_param: tuple[Mapping[str, Any], str | None] | None = None
    ordered = sorted(merged.items(), key=lambda kv: _LOCATION_ORDER.get(kv[0][1], 9))

    body: BodySpec | None = None
    body_schema: dict[str, Any] | None = None
    if version == "2.0":
        for (_pname, loc), (value, pbase) in merged.items():
            if loc == "body":
                body_param = (value, pbase)
            elif loc == "formData":
                form_params.append((value, pbase))
        body, body_schema = _swagger2_body(root, op, body_param, form_params, converter, refs)
    else:
        rb = op.get("requestBody")
        if rb is not None:
            rb_value, rb_base = resolver.deref(rb, base)
            if isinstance(rb_value, dict):
                body, body_schema = _openapi3_body(rb_value, rb_base, resolver, converter, refs)

    taken = {"body"} if body is not None else set()
    for (pname, loc), (value, pbase) in ordered:
        if loc not in _LOCATION_ORDER:
            continue
        if loc == "header" and pname.lower() in _IGNORED_HEADERS:
            continue
        arg = _UNSAFE_ARG.sub("_", pname)[:64] or "param"
        if arg in taken:
            arg = f"{loc}_{arg}"[:64]
            n = 2
            while arg in taken:
                arg = f"{loc}_{_UNSAFE_ARG.sub('_', pname)}_{n}"[:64]
                n += 1
        taken.add(arg)
        schema, kind, style, explode = _param_schema(value, pbase, loc, resolver, converter,
                                                     refs)
        properties[arg] = schema
        is_required = loc == "path" or value.get("required") is True
        if is_required:
            required.append(arg)
        params.append(ParamSpec(arg, pname, loc, is_required, style, explode, kind))

    if body is not None and body_schema is not None:
        properties["body"] = body_schema
        if body.required:
            required.append("body")

    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    if refs:
        parameters["$defs"] = converter.closure(refs)
    converter.check_size(parameters)

    summary, detail = _text(op.get("summary")), _text(op.get("description"))
    if summary and detail and not detail.startswith(summary):
        description = f"{summary}\n\n{detail}"
    else:
        description = detail or summary or f"{method.upper()} {path}"
    deprecated = op.get("deprecated") is True
    if deprecated:
        description = f"(Deprecated) {description}"
    security_raw = op.get("security", global_security)
    security = (tuple(s for s in security_raw if isinstance(s, dict))
                if isinstance(security_raw, list) else None)
    servers_raw = op.get("servers") or item.get("servers") or ()
    servers = tuple(s for s in servers_raw if isinstance(s, dict)) if isinstance(
        servers_raw, list) else ()
    return Operation(
        method=method.upper(), path=path, name=name, operation_id=op_id,
        description=description, tags=tags, params=tuple(params), body=body,
        security=security, servers=servers, parameters=parameters, deprecated=deprecated,
    )


_JSON_RE = re.compile(r"^application/(?:[\w.+-]+\+)?json(?:;.*)?$|^\*/\*$", re.IGNORECASE)


def _pick_media(content: Mapping[str, Any]) -> str | None:
    types = [str(k) for k in content]
    for mt in types:
        if _JSON_RE.match(mt) and mt != "*/*":
            return mt
    for prefix in ("application/x-www-form-urlencoded", "multipart/form-data"):
        for mt in types:
            if mt.lower().startswith(prefix):
                return mt
    return types[0] if types else None


def _is_file_schema(schema: Mapping[str, Any]) -> bool:
    # 3.0 marks uploads with format binary/byte; 3.1 with contentMediaType
    return schema.get("format") in ("binary", "byte") or "contentMediaType" in schema


def _openapi3_body(
    rb: Mapping[str, Any],
    base: str | None,
    resolver: Resolver,
    converter: SchemaConverter,
    refs: set[str],
) -> tuple[BodySpec | None, dict[str, Any] | None]:
    content = rb.get("content")
    if not isinstance(content, dict) or not content:
        return None, None
    mt = _pick_media(content)
    if mt is None:
        return None, None
    media = content[mt] if isinstance(content[mt], dict) else {}
    raw = media.get("schema")
    schema: dict[str, Any]
    if isinstance(raw, dict):
        schema = converter.convert(raw, base, refs, 1)
    elif raw is False:
        schema = {"not": {}}
    else:
        schema = {} if _JSON_RE.match(mt) else {"type": "string"}
    files: set[str] = set()
    deep: set[str] = set()
    low = mt.lower()
    if low.startswith(("multipart/", "application/x-www-form-urlencoded")) and isinstance(
        raw, Mapping
    ):
        resolved, rbase = resolver.deref(raw, base)
        props = resolved.get("properties") if isinstance(resolved, dict) else None
        for pname, pschema in (props.items() if isinstance(props, dict) else ()):
            target, _ = resolver.deref(pschema, rbase)
            if not isinstance(target, dict) or not low.startswith("multipart/"):
                continue
            if target.get("type") == "array" and isinstance(target.get("items"), dict):
                target = target["items"]
            if _is_file_schema(target):
                files.add(str(pname))
        encoding = media.get("encoding")
        for pname, enc in (encoding.items() if isinstance(encoding, dict) else ()):
            if isinstance(enc, dict) and enc.get("style") == "deepObject":
                deep.add(str(pname))
    desc = _text(rb.get("description"))
    if desc and "description" not in schema:
        schema = {**schema, "description": desc}
    return BodySpec(mt, rb.get("required") is True, frozenset(files), frozenset(deep)), schema


def _swagger2_body(
    root: Mapping[str, Any],
    op: Mapping[str, Any],
    body_param: tuple[Mapping[str, Any], str | None] | None,
    form_params: list[tuple[Mapping[str, Any], str | None]],
    converter: SchemaConverter,
    refs: set[str],
) -> tuple[BodySpec | None, dict[str, Any] | None]:
    consumes = op.get("consumes") or root.get("consumes") or []
    consumes = [str(c) for c in consumes] if isinstance(consumes, list) else []
    if body_param is not None:
        value, pbase = body_param
        raw = value.get("schema")
        schema = converter.convert(raw, pbase, refs, 1) if isinstance(raw, dict) else {}
        mt = next((c for c in consumes if _JSON_RE.match(c) and c != "*/*"), None)
        mt = mt or (consumes[0] if consumes else "application/json")
        desc = _text(value.get("description"))
        if desc and "description" not in schema:
            schema = {**schema, "description": desc}
        return BodySpec(mt, value.get("required") is True), schema
    if not form_params:
        return None, None
    props: dict[str, Any] = {}
    req: list[str] = []
    files: set[str] = set()
    for value, pbase in form_params:
        pname = str(value["name"])
        raw_schema = {k: v for k, v in value.items() if k not in _SWAGGER2_NON_SCHEMA}
        schema = converter.convert(raw_schema, pbase, refs, 2)
        if value.get("type") == "file":
            files.add(pname)
        desc = _text(value.get("description"))
        if desc:
            schema["description"] = desc
        props[pname] = schema
        if value.get("required") is True:
            req.append(pname)
    multipart = bool(files) or any(c.lower().startswith("multipart/") for c in consumes[:1])
    mt = "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
    schema = {"type": "object", "properties": props}
    if req:
        schema["required"] = req
    return BodySpec(mt, bool(req), frozenset(files)), schema
