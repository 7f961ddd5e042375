"""Python signatures into JSON Schema parameter objects: :func:`inspect_function`, the
:class:`Signature` it keeps (model-visible and injected parameters), and the pydantic model of
a signature's arguments.

Simple signatures (str / int / float / bool, their Optional forms, lists of them, string and
number Literals) take a fast path that writes the schema pydantic would write, without
building a model: registering thousands of functions stays cheap. Everything else goes
through pydantic. Validating a call's arguments is ``_validators``' (its pydantic model is
built on the first call, not at registration).
"""

from __future__ import annotations

import enum
import inspect
import json
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from attrs import frozen

from ._annotations import resolve_hints
from .errors import ToolRegistrationError
from .types import ToolContext

_PRIMS: dict[Any, dict[str, str]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}
_NONE_SCHEMA = {"type": "null"}
_UNION_TYPES = (Union, types.UnionType)


class Injected:
    """Marks a parameter the model must not see: ``Annotated[T, Injected()]``.

    At call time it receives ``context[key]`` (``key`` defaults to the parameter name) from the
    ``context=`` mapping passed to ``invoke`` / ``execute_tool_calls``; a parameter annotated
    :class:`~toolregistry.ToolContext` receives the whole call context instead.
    """

    __slots__ = ("key",)

    def __init__(self, key: str | None = None) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"Injected({self.key!r})" if self.key else "Injected()"


@frozen
class Param:
    """One model-visible parameter of a Python tool."""

    name: str
    annotation: Any
    default: Any
    positional_only: bool
    description: str | None


@frozen
class InjectedParam:
    """A parameter filled at call time (``key is None``: the whole :class:`ToolContext`)."""

    name: str
    key: str | None
    positional_only: bool
    has_default: bool


class Signature:
    """What the kernel keeps of a function's signature: its ``parameters`` schema, the
    ``injected`` parameters and the model-visible ``params`` (for the validator).

    ``params`` of a signature the fast path wrote are worked out again from the function on
    first use (the first call builds the validator): a registry of many tools then keeps a
    few objects per tool fewer, which the garbage collector no longer traverses.
    """

    __slots__ = ("_fn", "_params", "_tool_name", "injected", "parameters")

    def __init__(self, params: tuple[Param, ...] | None, injected: tuple[InjectedParam, ...],
                 parameters: dict[str, Any],
                 source: tuple[Callable[..., Any], str, Mapping[str, str]] | None = None
                 ) -> None:
        self._params = params
        if params is None:
            if source is None:
                raise ValueError("Signature needs its params or the function to read them from")
            # two slots, not the tuple: one object fewer per tool; the parameter docs are
            # read back from the schema (the fast path writes every non-empty one there)
            self._fn, self._tool_name = source[0], source[1]
        self.injected = injected
        self.parameters = parameters

    @property
    def params(self) -> tuple[Param, ...]:
        """The model-visible parameters, in order."""
        params = self._params
        if params is None:
            props = self.parameters.get("properties") or {}
            docs = {name: sub["description"] for name, sub in props.items()
                    if isinstance(sub, dict) and sub.get("description")}
            params = self._params = inspect_function(self._fn, self._tool_name, docs,
                                                     eager=True).params
            del self._fn, self._tool_name
        return params

    def __repr__(self) -> str:
        params = "(not read yet)" if self._params is None else repr(self._params)
        return f"Signature(params={params}, injected={self.injected!r})"


def _fast_schema(annotation: Any) -> dict[str, Any] | None:
    """The schema pydantic would emit for a simple annotation, or ``None`` (not simple)."""
    prim = _PRIMS.get(annotation)
    if prim is not None:
        return dict(prim)
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = get_origin(annotation)
    if origin in _UNION_TYPES:
        args = get_args(annotation)
        if len(args) == 2 and type(None) in args:
            inner = _fast_schema(args[0] if args[1] is type(None) else args[1])
            if inner is None or not inner:
                return None
            return {"anyOf": [inner, dict(_NONE_SCHEMA)]}
        return None
    if origin is list:
        args = get_args(annotation)
        if not args:
            return {"items": {}, "type": "array"}
        item = _PRIMS.get(args[0])
        return {"items": dict(item), "type": "array"} if item is not None else None
    if origin is Literal:
        values = get_args(annotation)
        if values and all(type(v) is str for v in values):
            return {"enum": list(values), "type": "string"} if len(values) > 1 else {
                "const": values[0], "type": "string"}
        return None
    return None


def _json_default(value: Any) -> tuple[bool, Any]:
    if value is None or type(value) in (str, int, float, bool):
        return True, value
    if isinstance(value, enum.Enum):
        return _json_default(value.value)
    if isinstance(value, (tuple, list)):
        try:
            return True, json.loads(json.dumps(list(value)))
        except (TypeError, ValueError):
            return False, None
    return False, None


def _injected_marker(annotation: Any) -> tuple[bool, str | None]:
    """(is injected, key) for a parameter annotation."""
    if annotation is ToolContext:
        return True, None
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        for m in meta:
            if isinstance(m, Injected) or m is Injected:
                return True, getattr(m, "key", None) if isinstance(m, Injected) else None
        if base is ToolContext:
            return True, None
    if get_origin(annotation) in _UNION_TYPES and ToolContext in get_args(annotation):
        return True, None
    return False, None


def _resolve_hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    try:
        return resolve_hints(fn)
    except Exception as exc:  # a forward reference that cannot be resolved
        raise ToolRegistrationError(
            f"tool {tool_name!r}: cannot resolve the type hints of {fn!r}: {exc}"
        ) from exc


_Parameter = tuple[str, Any, Any, Any]
"""The part of ``inspect.Parameter`` this module reads: name, kind, default, annotation (a
tuple: registering thousands of tools makes one per parameter)."""


_EMPTY = inspect.Parameter.empty
_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POSITIONAL = inspect.Parameter.VAR_POSITIONAL
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def _parameters(fn: Callable[..., Any]) -> list[_Parameter]:
    """The parameters of ``fn``. Plain functions are read from their code object (what
    ``inspect.signature`` does, at a fifth of the cost: registration of thousands of tools);
    everything else (methods, partials, callables, ``__signature__``) goes to inspect."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__") or hasattr(
            fn, "__signature__"):
        return [(p.name, p.kind, p.default, p.annotation)
                for p in inspect.signature(fn).parameters.values()]
    code = fn.__code__
    names = code.co_varnames
    npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    ann = fn.__annotations__
    first_default = npos - len(defaults)
    out: list[_Parameter] = []
    for i in range(npos):
        name = names[i]
        kind = _POSITIONAL_ONLY if i < nposonly else _POSITIONAL_OR_KEYWORD
        default = defaults[i - first_default] if i >= first_default else _EMPTY
        out.append((name, kind, default, ann.get(name, _EMPTY)))
    index = npos + nkw
    if code.co_flags & _CO_VARARGS:
        name = names[index]
        out.append((name, _VAR_POSITIONAL, _EMPTY, ann.get(name, _EMPTY)))
        index += 1
    for name in names[npos:npos + nkw]:
        out.append((name, _KEYWORD_ONLY, kwdefaults.get(name, _EMPTY), ann.get(name, _EMPTY)))
    if code.co_flags & _CO_VARKEYWORDS:
        name = names[index]
        out.append((name, _VAR_KEYWORD, _EMPTY, ann.get(name, _EMPTY)))
    return out


def inspect_function(
    fn: Callable[..., Any], tool_name: str, param_docs: Mapping[str, str], *,
    eager: bool = False
) -> Signature:
    """Build the parameters schema of ``fn``; raise a clear error for what cannot be a tool.

    The signature's ``params`` are kept when pydantic wrote the schema (or ``eager``), else
    worked out again on first use."""
    parameters, signature = schema_of(fn, tool_name, param_docs, eager=eager)
    return signature if signature is not None else plain_signature(fn, tool_name, parameters)


def plain_signature(fn: Callable[..., Any], tool_name: str, parameters: dict[str, Any]
                    ) -> Signature:
    """The signature of ``fn`` whose ``parameters`` the fast path wrote, with nothing
    injected (its params are read on first use)."""
    return Signature(None, (), parameters, (fn, tool_name, {}))


def schema_of(
    fn: Callable[..., Any], tool_name: str, param_docs: Mapping[str, str], *,
    eager: bool = False
) -> tuple[dict[str, Any], Signature | None]:
    """:func:`inspect_function`'s parameters schema and signature, the signature ``None``
    when it is :func:`plain_signature` of ``fn`` (made by the caller when it needs one)."""
    try:
        parameters_of_fn = _parameters(fn)
    except (TypeError, ValueError) as exc:
        raise ToolRegistrationError(f"tool {tool_name!r}: no signature for {fn!r}: {exc}") from exc
    hints: dict[str, Any] = {}
    for _, _, _, annotation in parameters_of_fn:
        if isinstance(annotation, str):
            hints = _resolve_hints(fn, tool_name)
            break

    visible: list[tuple[str, Any, Any, bool, str | None]] = []
    injected: list[InjectedParam] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    slow = False
    kinds = _KINDS
    for name, pkind, default, annotation in parameters_of_fn:
        if pkind is _VAR_POSITIONAL:
            raise ToolRegistrationError(
                f"tool {tool_name!r}: parameter *{name} cannot be expressed in a JSON schema; "
                "declare explicit parameters (or a list parameter) instead"
            )
        if pkind is _VAR_KEYWORD:
            raise ToolRegistrationError(
                f"tool {tool_name!r}: parameter **{name} cannot be expressed in a JSON schema; "
                "declare explicit keyword parameters instead"
            )
        if hints:
            annotation = hints.get(name, annotation)
        positional_only = pkind is _POSITIONAL_ONLY
        hit = kinds.get(id(annotation))  # _kind_of's cache, inline (a call per parameter)
        kind = hit[1] if hit is not None and hit[0] is annotation else _kind_of(annotation)
        if kind.injected:
            injected.append(
                InjectedParam(name, kind.key or (None if kind.context else name),
                              positional_only, default is not _EMPTY)
            )
            continue
        description = param_docs.get(name)
        visible.append((name, annotation, default, positional_only, description))
        make = kind.make
        if make is None:
            slow = True
            continue
        schema = make()
        if description:
            schema["description"] = description
        if default is _EMPTY:
            required.append(name)
        elif default is None or type(default) in _ATOMS:
            schema["default"] = default
        else:
            ok, value = _json_default(default)
            if ok:
                schema["default"] = value
        properties[name] = schema

    params = tuple(Param(*v) for v in visible) if slow or eager else None
    parameters: dict[str, Any]
    if params is not None and slow:
        parameters = _pydantic_schema(tool_name, list(params))
    else:
        parameters = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
    if params is None and not injected:
        return parameters, None
    return parameters, Signature(params, tuple(injected) if injected else (), parameters,
                                 None if params is not None else (fn, tool_name, param_docs))


@frozen
class _Kind:
    """What an annotation means for a tool: injected (with its context key, or the whole
    context), or visible with the schema of the fast path, ``make()`` returning a fresh copy
    of it (``None``: pydantic's)."""

    injected: bool
    key: str | None
    context: bool
    make: Callable[[], dict[str, Any]] | None


# Annotation objects seen, by identity (the object is kept, so the identity stays its): a
# module repeats the same few, and in PEP 563 modules they come out of one cache.
_KINDS: dict[int, tuple[Any, _Kind]] = {}
_MAX_KINDS = 4096


def _kind_of(annotation: Any) -> _Kind:
    hit = _KINDS.get(id(annotation))
    if hit is not None and hit[0] is annotation:
        return hit[1]
    is_injected, key = _injected_marker(annotation)
    schema = None if is_injected else _fast_schema(annotation)
    kind = _Kind(is_injected, key, is_injected and _is_context(annotation),
                 None if schema is None else _maker(schema))
    if len(_KINDS) >= _MAX_KINDS:
        _KINDS.clear()
    _KINDS[id(annotation)] = (annotation, kind)
    return kind


_ATOMS = (str, int, float, bool)


def _maker(schema: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """A function returning a fresh copy of a (small) fast-path schema: callers add the
    description and the default, and no two tools share a part. A schema of atoms is copied
    by ``dict.copy``; one with lists or dicts inside by a function whose body is the schema
    as a literal, built in one go instead of by a recursive copy (a quarter of its cost; the
    values are strings, numbers, booleans and ``None``, whose repr is their literal)."""
    if not any(type(v) in (dict, list) for v in schema.values()):
        return schema.copy
    make: Callable[[], dict[str, Any]] = eval(f"lambda: {schema!r}", {})
    if make() == schema:
        return make
    return lambda: _copy(schema)  # a value whose repr is not its literal (not the fast path's)


def _copy(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    for key, value in out.items():
        if type(value) is dict:
            out[key] = _copy(value)
        elif type(value) is list:
            out[key] = [_copy(v) if type(v) is dict else v for v in value]
    return out


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if get_origin(annotation) is Annotated:
        return get_args(annotation)[0] is ToolContext
    return get_origin(annotation) in _UNION_TYPES and ToolContext in get_args(annotation)


# --- pydantic path -------------------------------------------------------------------------

def _field_definitions(params: tuple[Param, ...] | list[Param]) -> dict[str, Any]:
    from pydantic import Field
    from pydantic.fields import FieldInfo

    fields: dict[str, Any] = {}
    for i, p in enumerate(params):
        annotation = Any if p.annotation is inspect.Parameter.empty else p.annotation
        default = ... if p.default is inspect.Parameter.empty else p.default
        described = _has_description(annotation)
        info: FieldInfo = Field(
            default,
            alias=p.name,
            description=None if described else p.description,
        )
        fields[f"p{i}"] = (annotation, info)
    return fields


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(getattr(m, "description", None) for m in get_args(annotation)[1:])


def _create_model(tool_name: str, params: tuple[Param, ...] | list[Param]) -> Any:
    from pydantic import ConfigDict, create_model

    config = ConfigDict(
        extra="forbid",
        arbitrary_types_allowed=True,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
    )
    model_name = "".join(c if c.isalnum() else "_" for c in tool_name) + "Arguments"
    return create_model(model_name, __config__=config, **_field_definitions(params))


def _pydantic_schema(tool_name: str, params: list[Param]) -> dict[str, Any]:
    from pydantic import PydanticUserError
    from pydantic.errors import PydanticInvalidForJsonSchema, PydanticSchemaGenerationError

    failures = (PydanticSchemaGenerationError, PydanticInvalidForJsonSchema, PydanticUserError,
                TypeError, ValueError, NameError)
    try:
        model = _create_model(tool_name, params)
        schema = model.model_json_schema(by_alias=True)
    except failures as exc:
        bad = _find_bad_param(tool_name, params, failures)
        where = f"parameter {bad.name!r} (annotation {bad.annotation!r})" if bad else "a parameter"
        raise ToolRegistrationError(
            f"tool {tool_name!r}: {where} has no JSON schema: {_first_line(exc)}; use JSON-"
            "compatible types (str, int, float, bool, list, dict, Literal, Enum, pydantic "
            "models, dataclasses, TypedDict) or mark it Injected()"
        ) from exc
    return clean_pydantic_schema(schema)


def _find_bad_param(tool_name: str, params: list[Param], failures: tuple[type[BaseException], ...]
                    ) -> Param | None:
    for p in params:
        try:
            _create_model(tool_name, [p]).model_json_schema(by_alias=True)
        except failures:
            return p
    return None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _auto_title(name: str) -> str:
    return name.replace("_", " ").title().strip()


def clean_pydantic_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the titles pydantic generates (model and field titles) and the top-level
    ``additionalProperties: false`` of the arguments model (the validator still refuses
    unknown arguments; the fast path writes the same compact schema). Keep everything else."""
    schema.pop("title", None)
    if schema.get("additionalProperties") is False:
        del schema["additionalProperties"]
    _strip_titles(schema)
    for sub in schema.get("$defs", {}).values():
        _strip_titles(sub)
    schema.setdefault("properties", {})
    return schema


def _strip_titles(node: Any) -> None:
    if not isinstance(node, dict):
        return
    props = node.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                if sub.get("title") == _auto_title(key):
                    del sub["title"]
                _strip_titles(sub)
    for kw in ("items", "additionalProperties", "not"):
        if isinstance(node.get(kw), dict):
            _strip_titles(node[kw])
    for kw in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in node.get(kw, ()) or ():
            _strip_titles(sub)
