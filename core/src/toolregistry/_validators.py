"""Call-time validation of a tool's arguments: :class:`ArgumentsValidator` (a Python tool's
pydantic model, built on the first call from its :class:`~._schema.Signature`) and
:class:`JsonSchemaValidator` (a schema-first tool's JSON Schema, jsonschema-rs), both binding
the validated values to the callable's arguments; and ``null`` for optional parameters taken as
absent (:func:`optional_not_nullable`, OpenAI strict mode). The schemas themselves are written
by ``_schema``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._redaction import value_shape
from ._schema import _create_model, _first_line

if TYPE_CHECKING:
    from ._schema import Signature

__all__ = ["ArgumentsValidator", "InvalidArguments", "JsonSchemaValidator", "drop_null_optionals",
           "optional_not_nullable"]


def _admits_null(schema: Any) -> bool:
    if not isinstance(schema, dict) or not schema:
        return True
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(_admits_null(b) for b in schema.get("anyOf", ()) or schema.get("oneOf", ()))


def optional_not_nullable(parameters: dict[str, Any]) -> frozenset[str]:
    """Optional parameters whose schema does not admit ``null``.

    OpenAI strict mode makes every optional parameter required and nullable, so models send
    ``null`` for "not given". For these parameters the validators treat ``null`` as absent.
    """
    props = parameters.get("properties")
    if not isinstance(props, dict):
        return frozenset()
    required = set(parameters.get("required", ()))
    return frozenset(n for n, sub in props.items() if n not in required and not _admits_null(sub))


def drop_null_optionals(arguments: Mapping[str, Any], droppable: frozenset[str]
                        ) -> Mapping[str, Any]:
    """``arguments`` without ``null`` values of ``droppable`` parameters (a cheap no-op when
    no value is ``None``)."""
    if not droppable or None not in arguments.values():
        return arguments
    return {k: v for k, v in arguments.items() if not (v is None and k in droppable)}


class ArgumentsValidator:
    """Validates model arguments for a Python tool and binds them to ``*args, **kwargs``.

    The pydantic model is built on first use (thread-safe), so registration stays cheap.
    """

    __slots__ = ("_droppable", "_lock", "_model", "_names", "_signature", "_tool_name")

    def __init__(self, tool_name: str, signature: Signature) -> None:
        self._tool_name = tool_name
        self._signature = signature
        self._model: Any = None
        self._names: tuple[str, ...] = ()
        self._lock = threading.Lock()
        self._droppable = optional_not_nullable(signature.parameters)

    def _ensure(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    params = self._signature.params
                    self._names = tuple(f"p{i}" for i in range(len(params)))
                    self._model = _create_model(self._tool_name, params)
        return self._model

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated arguments by parameter name; raises ``pydantic.ValidationError``."""
        model = self._ensure()
        instance = model.model_validate(drop_null_optionals(arguments, self._droppable))
        values = instance.__dict__
        fields_set = instance.model_fields_set
        out: dict[str, Any] = {}
        for field_name, param in zip(self._names, self._signature.params):
            if field_name in fields_set:
                out[param.name] = values[field_name]
        return out

    def injected_params(self) -> tuple[tuple[str, str | None, bool], ...]:
        """(parameter, context key or ``None`` for the whole context, has a default)."""
        return tuple((p.name, p.key, p.has_default) for p in self._signature.injected)

    def bind(self, values: Mapping[str, Any], injected: Mapping[str, Any]
             ) -> tuple[list[Any], dict[str, Any]]:
        """Split validated values (plus injected ones) into positional and keyword arguments."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        sig = self._signature
        if not sig.injected and not any(p.positional_only for p in sig.params):
            kwargs.update(values)
            return args, kwargs
        for p in sig.params:
            if p.name in values:
                if p.positional_only:
                    args.append(values[p.name])
                else:
                    kwargs[p.name] = values[p.name]
            elif p.positional_only:
                args.append(p.default)
        for ip in sig.injected:
            if ip.name in injected:
                if ip.positional_only:
                    args.append(injected[ip.name])
                else:
                    kwargs[ip.name] = injected[ip.name]
        return args, kwargs


class InvalidArguments(ValueError):
    """Arguments a JSON Schema refused: the message quotes the values; ``redacted`` is the
    same without them."""

    def __init__(self, message: str, redacted: str) -> None:
        super().__init__(message)
        self.redacted = redacted


def _refuse_remote(uri: str) -> Any:
    raise ValueError(f"remote $ref retrieval is disabled ({uri})")


class JsonSchemaValidator:
    """Validates arguments of a schema-first tool against its JSON Schema (jsonschema-rs,
    compiled on first use; remote ``$ref`` retrieval refused)."""

    __slots__ = ("_compiled", "_context_param", "_droppable", "_error", "_lock", "_schema",
                 "_tool_name")

    def __init__(self, tool_name: str, schema: dict[str, Any], context_param: str | None) -> None:
        self._tool_name = tool_name
        self._schema = schema
        self._droppable = optional_not_nullable(schema)
        self._context_param = context_param
        self._compiled: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> Any:
        if self._compiled is None and self._error is None:
            with self._lock:
                if self._compiled is None and self._error is None:
                    import jsonschema_rs

                    try:
                        self._compiled = jsonschema_rs.validator_for(
                            self._schema, retriever=_refuse_remote)
                    except Exception as exc:
                        self._error = f"{type(exc).__name__}: {_first_line(exc)}"
        if self._error is not None:
            text = (f"the tool's parameters schema is invalid ({self._error}); the tool "
                    "cannot be called until its source fixes it")
            raise InvalidArguments(text, text)
        return self._compiled

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        compiled = self._ensure()
        args = dict(drop_null_optionals(arguments, self._droppable))
        errors = []
        redacted = []
        for err in compiled.iter_errors(args):
            path = "/".join(str(p) for p in err.instance_path) or "(arguments)"
            msg = err.message if len(err.message) <= 300 else err.message[:297] + "..."
            errors.append(f"{path}: {msg}")
            # jsonschema-rs quotes the value in its message: the log's version names the
            # schema keyword it failed instead.
            keyword = str(err.schema_path[-1]) if err.schema_path else "schema"
            redacted.append(f"{path}: {value_shape(err.instance)} does not satisfy "
                            f"{keyword!r}")
            if len(errors) >= 10:
                break
        if errors:
            raise InvalidArguments("; ".join(errors), "; ".join(redacted))
        return args

    def injected_params(self) -> tuple[tuple[str, str | None, bool], ...]:
        return ((self._context_param, None, False),) if self._context_param else ()

    def bind(self, values: Mapping[str, Any], injected: Mapping[str, Any]
             ) -> tuple[list[Any], dict[str, Any]]:
        kwargs = dict(values)
        kwargs.update(injected)
        return [], kwargs
