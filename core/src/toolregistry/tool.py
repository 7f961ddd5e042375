"""The Tool model: :class:`Tool`, :class:`ToolMetadata`, :class:`ToolTag`, :class:`Provenance`."""

from __future__ import annotations

import enum
import functools
import inspect
import json
import types
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
from attrs import define, field, frozen

from .errors import ToolRegistrationError

# Docstring parsing, schema building and validation load when a function is first made a
# tool or a tool is first called, not with the model: a registry is built without them.
if TYPE_CHECKING:
    from ._schema import Injected, Signature
    from ._validators import ArgumentsValidator, JsonSchemaValidator

__all__ = [
    "SEARCH_TOOL_TAG",
    "Injected",
    "Provenance",
    "SourceKind",
    "Tool",
    "ToolMetadata",
    "ToolTag",
]

SEARCH_TOOL_TAG = "tool-search"
"""A custom tag marking a tool through which the model finds deferred tools (the registry's
own search, ``discover_tools``): left out of ``get_schemas`` when the provider's native tool
search is sent in its place."""

SourceKind = Literal["function", "class", "mcp", "openapi", "langchain", "manual", "plugin"]


class ToolTag(enum.StrEnum):
    """Well-known tags describing what a tool does."""

    READ_ONLY = "read_only"
    DESTRUCTIVE = "destructive"
    NETWORK = "network"
    FILE_SYSTEM = "file_system"
    SLOW = "slow"
    PRIVILEGED = "privileged"
    IDEMPOTENT = "idempotent"
    EXPENSIVE = "expensive"


def _to_tags(value: Iterable[ToolTag | str] | None) -> frozenset[ToolTag]:
    if not value:
        return frozenset()
    if isinstance(value, (str, ToolTag)):
        value = [value]
    try:
        return frozenset(v if isinstance(v, ToolTag) else ToolTag(v) for v in value)
    except ValueError as exc:
        known = ", ".join(t.value for t in ToolTag)
        raise ValueError(f"{exc}; known tags: {known} (use custom_tags for others)") from None


def _to_strs(value: Iterable[str] | str | None) -> frozenset[str]:
    if not value:
        return frozenset()
    if isinstance(value, str):
        return frozenset([value])
    return frozenset(str(v) for v in value)


def _to_practices(value: Iterable[str] | str | None) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _timeout_or_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    from ._settings import TIMEOUT_RULE, valid_timeout

    if value is not None and not valid_timeout(value):
        raise ValueError(f"ToolMetadata.{attribute.name} {TIMEOUT_RULE}, or None for the "
                         f"registry's default; got {value!r}")


def _isolation(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in (None, "thread", "process"):
        raise ValueError(f'ToolMetadata.{attribute.name} must be "process", "thread" or None, '
                         f"got {value!r}")


def _optional_name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"ToolMetadata.{attribute.name} must be a non-empty string or None, "
                         f"got {value!r}")


def _to_examples(value: Iterable[Mapping[str, Any]] | Mapping[str, Any] | None
                 ) -> tuple[dict[str, Any], ...]:
    if not value:
        return ()
    if isinstance(value, Mapping):
        value = [value]
    examples = tuple(value)
    for i, example in enumerate(examples):
        if not isinstance(example, Mapping):
            raise ValueError(f"ToolMetadata.input_examples[{i}] must be a mapping of argument "
                             f"names to values (one example input), got {example!r}")
    return tuple(dict(e) for e in examples)


def _to_callers(value: Iterable[str] | str | None) -> tuple[str, ...]:
    if not value:
        return ()
    callers = (value,) if isinstance(value, str) else tuple(value)
    for caller in callers:
        if not isinstance(caller, str) or not caller:
            raise ValueError("ToolMetadata.allowed_callers must be non-empty strings (e.g. "
                             f'"direct", "code_execution_20260120"), got {caller!r}')
    return callers


@frozen(kw_only=True)
class ToolMetadata:
    """Everything about a tool beyond its schema. Immutable: change it with
    ``registry.update_tool_metadata(name, **changes)`` (or ``attrs.evolve``).

    ``think_augment``: ``None`` follows the registry, ``True`` / ``False`` override it.
    ``defer``: hidden from ``get_schemas(include_deferred=False)``, found through discovery.
    ``timeout``: seconds for this tool's calls (else the registry's default).
    ``is_concurrency_safe``: ``False`` makes its calls run alone.
    ``concurrency_group``: within one batch, a call to a tool of this group that is not
    read-only (``is_read_only``) starts after every earlier call of the group finished, and
    later calls of the group start after it; read-only calls of a group run together; calls
    outside the group are unaffected (``None``: no group).
    ``isolation``: ``"process"`` runs the tool's calls in worker processes killed at their
    deadline, ``"thread"`` in this process even when its namespace is listed in the
    ``process-namespaces`` setting; ``None`` follows that setting (default: this process).
    ``too_long_to_file``: spool long outputs to a file (spool plugin); ``None`` follows config.
    ``input_examples``: example inputs (argument mappings) sent where the provider takes them
    (Anthropic's ``input_examples``). ``allowed_callers``: who may call the tool where the
    provider asks (Anthropic's ``allowed_callers``: ``"direct"``, ``"code_execution_..."``
    for programmatic tool calling); empty: the provider's default.
    """

    think_augment: bool | None = None
    defer: bool = False
    tags: frozenset[ToolTag] = field(default=frozenset(), converter=_to_tags)
    custom_tags: frozenset[str] = field(default=frozenset(), converter=_to_strs)
    search_hint: str | None = None
    timeout: float | None = field(default=None, validator=_timeout_or_none)
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None
    is_concurrency_safe: bool = True
    concurrency_group: str | None = field(default=None, validator=_optional_name)
    isolation: Literal["process", "thread"] | None = field(default=None, validator=_isolation)
    too_long_to_file: bool | None = None
    best_practices: tuple[str, ...] = field(default=(), converter=_to_practices)
    input_examples: tuple[dict[str, Any], ...] = field(default=(), converter=_to_examples,
                                                       hash=False)
    allowed_callers: tuple[str, ...] = field(default=(), converter=_to_callers)
    prompt_injection_builder: Callable[[Mapping[str, Any]], str] | None = field(
        default=None, eq=False
    )
    extra: Mapping[str, Any] = field(factory=dict, eq=False)

    @property
    def is_read_only(self) -> bool:
        """True when hinted or tagged read-only."""
        return bool(self.read_only_hint) or ToolTag.READ_ONLY in self.tags

    @property
    def is_idempotent(self) -> bool:
        """True when hinted or tagged idempotent (or read-only, which implies it)."""
        return (
            bool(self.idempotent_hint) or ToolTag.IDEMPOTENT in self.tags or self.is_read_only
        )


DEFAULT_METADATA = ToolMetadata()


@frozen
class Provenance:
    """Where a tool came from: ``kind`` (function, class, mcp, openapi, langchain, manual,
    plugin), a human-readable ``detail`` (qualified name, server, spec), the tool's original
    name at its source, and the plugin that loaded it (``None`` for the kernel)."""

    kind: SourceKind = "manual"
    detail: str | None = None
    original_name: str | None = None
    plugin: str | None = None


_EMPTY_PARAMS: dict[str, Any] = {"type": "object", "properties": {}}


def _default_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


def _check_parameters(_inst: Any, _attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise ToolRegistrationError(
            f"Tool.parameters must be a JSON Schema object (a dict), got {type(value).__name__}"
        )
    kind = value.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise ToolRegistrationError(
            f"Tool.parameters must be a JSON Schema of type 'object', got type {kind!r}"
        )


_CO_COROUTINE = inspect.CO_COROUTINE


def _is_async_callable(fn: Any) -> bool:
    if type(fn) is types.FunctionType and not hasattr(fn, "_is_coroutine_marker"):
        # a plain function (the common case, asked once per registration): its code says it
        # (Python 3.12's markcoroutinefunction sets the marker; those go to inspect)
        return bool(fn.__code__.co_flags & _CO_COROUTINE)
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


@define(slots=True, eq=False)
class Tool:
    """A tool: a name, a description, a JSON Schema of its parameters, and what runs it.

    Build one from a Python function with :meth:`Tool.from_function`, or give the schema
    yourself (``Tool(name=..., description=..., parameters={...}, callable=fn)``); a
    schema-first tool's callable receives the validated arguments as keyword arguments (and
    the call's :class:`~toolregistry.ToolContext` as ``context_param`` when that is set).

    ``acallable`` is an optional async twin of a sync ``callable`` (same arguments): the async
    API (``ainvoke``, ``aexecute_tool_calls``) awaits it, the sync API calls ``callable`` --
    a tool backed by a remote session or client then never pays a hop between the two worlds.

    ``ends_on_cancel`` is for the source that builds the tool, not a promise from its users:
    set it when the async callable (``acallable``, else ``callable``) ends promptly once its
    task is cancelled (it awaits I/O it owns and neither swallows nor outlives the
    cancellation). The async API then awaits it in the caller's own task under its deadline,
    cancelling that task at the deadline, instead of giving it a task of its own.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(factory=_default_parameters, validator=_check_parameters)
    callable: Callable[..., Any] | None = field(default=None, repr=False)
    metadata: ToolMetadata = field(default=DEFAULT_METADATA)
    namespace: str | None = None
    provenance: Provenance = field(factory=Provenance)
    output_schema: dict[str, Any] | None = field(default=None, repr=False)
    is_async: bool | None = field(default=None, repr=False)
    acallable: Callable[..., Any] | None = field(default=None, repr=False)
    context_param: str | None = field(default=None, repr=False)
    signature: Signature | None = field(default=None, repr=False)
    ends_on_cancel: bool = field(default=False, repr=False)
    _validator: Any = field(default=None, repr=False, alias="_validator")
    _schema_hash: str | None = field(default=None, repr=False, alias="_schema_hash")

    def __attrs_post_init__(self) -> None:
        if self.is_async is None:
            self.is_async = self.callable is not None and _is_async_callable(self.callable)
        if not isinstance(self.metadata, ToolMetadata):
            raise ToolRegistrationError(
                f"tool {self.name!r}: metadata must be a ToolMetadata, "
                f"got {type(self.metadata).__name__}"
            )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        namespace: str | None = None,
        metadata: ToolMetadata | None = None,
        *,
        provenance: Provenance | None = None,
    ) -> Tool:
        """Build a tool from a sync or async Python callable.

        The schema comes from the signature (through pydantic), the description and
        per-parameter descriptions from the docstring (Google, NumPy or reST); a
        ``Best Practices:`` docstring section is kept in ``metadata.best_practices``.
        """
        module: str | None
        if type(fn) is types.FunctionType:  # the common case, without the general probes
            tool_name = name or fn.__name__ or "function"
            doc_source = fn.__doc__
            qualname, module = fn.__qualname__, fn.__module__
        else:
            if not callable(fn):
                raise ToolRegistrationError(f"cannot make a tool of {fn!r}: it is not callable")
            target = fn
            while isinstance(target, functools.partial):
                target = target.func
            tool_name = name or getattr(target, "__name__", None) or type(target).__name__
            doc_source = (inspect.getdoc(target) if not inspect.isfunction(target)
                          else target.__doc__)
            if doc_source is None and not inspect.isroutine(target):
                doc_source = inspect.getdoc(type(target).__call__)
            qualname = getattr(target, "__qualname__", tool_name)
            module = getattr(target, "__module__", None)
        from ._docstrings import parse_docstring
        from ._schema import schema_of

        doc = parse_docstring(doc_source)
        parameters, sig = schema_of(fn, tool_name, doc.params)
        meta = metadata or DEFAULT_METADATA
        if doc.best_practices and not meta.best_practices:
            meta = attrs.evolve(meta, best_practices=doc.best_practices)
        detail = f"{module}:{qualname}" if module else qualname
        return cls(
            name=tool_name,
            description=description if description is not None else doc.description,
            parameters=parameters,
            callable=fn,
            metadata=meta,
            namespace=namespace,
            provenance=provenance or Provenance("function", detail, tool_name),
            signature=_PLAIN if sig is None else sig,
            is_async=_is_async_callable(fn),  # given: no validated assignment after init
        )

    @property
    def qualified_name(self) -> str:
        """The name the registry knows this tool by (same as ``name`` once registered)."""
        return self.name

    @property
    def schema_hash(self) -> str:
        """A stable hash of the description and parameters (changes when the schema does)."""
        if self._schema_hash is None:
            canon = json.dumps(
                [self.description, self.parameters], sort_keys=True, ensure_ascii=False,
                separators=(",", ":"), default=str,
            )
            import hashlib

            self._schema_hash = hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]
        return self._schema_hash

    @property
    def validator(self) -> ArgumentsValidator | JsonSchemaValidator:
        """Validates call arguments: pydantic for Python signatures, JSON Schema for
        schema-first tools (built on first use)."""
        if self._validator is None:
            from ._validators import ArgumentsValidator, JsonSchemaValidator

            if self.signature is not None:
                self._validator = ArgumentsValidator(self.name, self.signature)
            else:
                self._validator = JsonSchemaValidator(self.name, self.parameters,
                                                      self.context_param)
        return self._validator  # type: ignore[no-any-return]

    def evolve(self, **changes: Any) -> Tool:
        """A copy with ``changes`` applied (cached derived data is reset)."""
        changes.setdefault("_schema_hash", None)
        if "name" in changes or "callable" in changes or "parameters" in changes:
            changes.setdefault("_validator", None)
        if ("signature" not in changes and "callable" not in changes
                and "parameters" not in changes and _SIGNATURE.__get__(self) is _PLAIN):
            changes["signature"] = _PLAIN  # the copy's callable and parameters are these
        return attrs.evolve(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description of the tool (no callable)."""
        m = self.metadata
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "namespace": self.namespace,
            "source": self.provenance.kind,
            "source_detail": self.provenance.detail,
            "original_name": self.provenance.original_name,
            "schema_hash": self.schema_hash,
            "defer": m.defer,
            "tags": sorted(t.value for t in m.tags),
            "custom_tags": sorted(m.custom_tags),
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying callable directly (no validation, no hooks)."""
        if self.callable is None:
            raise TypeError(f"tool {self.name!r} has no callable")
        return self.callable(*args, **kwargs)


# A tool made from a function whose schema the fast path wrote, with nothing injected, keeps
# no Signature object of its own until one is asked for: it is made from the tool's callable,
# name and parameters (all its fast-path Signature would hold) on first use -- the first call,
# which builds the validator. Registering many such tools then leaves one object per tool
# fewer for every later collection of the garbage collector to traverse. ``_PLAIN`` in the
# slot stands for that Signature; ``Tool.signature`` reads and writes the slot through
# :func:`_signature` (attrs' init, evolve and asdict see the Signature itself).
_PLAIN: Any = object()
_SIGNATURE: Any = Tool.__dict__["signature"]  # the slot


def _signature(tool: Tool) -> Signature | None:
    sig = _SIGNATURE.__get__(tool)
    if sig is _PLAIN:
        from ._schema import plain_signature

        sig = plain_signature(tool.callable, tool.name, tool.parameters)  # type: ignore[arg-type]
        _SIGNATURE.__set__(tool, sig)
    return sig  # type: ignore[no-any-return]


setattr(Tool, "signature", property(_signature, _SIGNATURE.__set__,  # noqa: B010
                                    doc="How the tool's Python callable takes its arguments "
                                        "(``None`` for a schema-first tool)."))


def __getattr__(name: str) -> Any:
    if name == "Injected":  # exported here, defined with the schema code
        from ._schema import Injected

        return Injected
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
