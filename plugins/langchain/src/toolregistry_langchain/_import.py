"""LangChain tools into registry tools (``registry.register_from_langchain``).

Each LangChain tool becomes a schema-first kernel :class:`~toolregistry.Tool`: the parameters
are exactly what LangChain itself would send to a model (``convert_to_openai_tool``, injected
arguments hidden), and the callable runs the LangChain tool with a full tool call so that
LangChain keeps its own semantics: ``InjectedToolCallId``, ``handle_tool_error``,
``handle_validation_error`` and ``response_format="content_and_artifact"``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

import attrs
from attrs import frozen

from toolregistry.errors import ToolCallError, ToolRegistrationError
from toolregistry.plugin import log
from toolregistry.tool import Provenance, Tool, ToolMetadata
from toolregistry.types import ToolContext

from ._artifact import from_tool_message

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

PLUGIN = "langchain"
# The keyword under which the kernel hands the callable its ToolContext (``Tool.context_param``);
# a name no LangChain argument can have, since the model's arguments arrive as keywords too.
CONTEXT_PARAM = "__toolregistry_context__"


# --- collecting tools -----------------------------------------------------------------------

def collect_tools(source: Any) -> list[BaseTool]:
    """The LangChain tools in ``source``: a tool, a toolkit (``get_tools()``) or an iterable."""
    from langchain_core.tools import BaseTool

    found: list[BaseTool] = []

    def visit(obj: Any, depth: int) -> None:
        if isinstance(obj, BaseTool):
            found.append(obj)
            return
        get_tools = getattr(obj, "get_tools", None)
        if callable(get_tools) and depth < 4:
            visit(list(get_tools()), depth + 1)
            return
        if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes, Mapping)) and depth < 4:
            for item in obj:
                visit(item, depth + 1)
            return
        hint = ""
        if callable(obj):
            hint = (" For a plain Python function use registry.register(fn), or wrap it with "
                    "langchain_core.tools.tool first.")
        raise ToolRegistrationError(
            "register_from_langchain takes a LangChain tool (@tool, StructuredTool, a BaseTool "
            "subclass instance), a toolkit with get_tools(), or a list of them; got "
            f"{type(obj).__name__}.{hint}"
        )

    visit(source, 0)
    return found


# --- injected arguments ---------------------------------------------------------------------

@frozen
class Injection:
    """The arguments of a LangChain tool the model never sees.

    ``call_id`` arguments (``InjectedToolCallId``) are filled by LangChain from the tool-call
    id; ``context`` arguments (other ``InjectedToolArg``\\s) come from the registry call's
    ``context=`` mapping, by argument name. ``required`` are the context ones without default.
    """

    call_id: frozenset[str] = frozenset()
    context: tuple[str, ...] = ()
    required: frozenset[str] = frozenset()


def _is_call_id(annotation: Any) -> bool:
    from langchain_core.tools import InjectedToolCallId

    if get_origin(annotation) is not Annotated:
        return False
    return any(
        m is InjectedToolCallId or isinstance(m, InjectedToolCallId)
        or (isinstance(m, type) and issubclass(m, InjectedToolCallId))
        for m in get_args(annotation)[1:]
    )


def _field_names(schema: Any) -> set[str]:
    from langchain_core.utils.pydantic import get_fields

    if isinstance(schema, dict):
        return set(schema.get("properties") or {})
    return set(get_fields(schema))


def find_injection(lc_tool: BaseTool) -> Injection:
    """Which arguments of ``lc_tool`` are injected, and from where."""
    if lc_tool.args_schema is not None and isinstance(lc_tool.args_schema, dict):
        return Injection()  # a JSON-schema tool has no Python annotations to inject through
    from langchain_core.tools.base import get_all_basemodel_annotations
    from langchain_core.utils.pydantic import get_fields

    full = lc_tool.get_input_schema()
    visible = _field_names(lc_tool.tool_call_schema)
    annotations = get_all_basemodel_annotations(full)
    fields = get_fields(full)
    hidden = [n for n in fields if n not in visible]
    # Names LangChain injects from the function signature only (not part of args_schema).
    signature_keys: frozenset[str] = getattr(lc_tool, "_injected_args_keys", frozenset())
    hidden += [n for n in sorted(signature_keys) if n not in fields and n not in visible]
    call_id: set[str] = set()
    context: list[str] = []
    required: set[str] = set()
    for name in hidden:
        if _is_call_id(annotations.get(name)) or (name == "tool_call_id" and name not in fields):
            call_id.add(name)
            continue
        context.append(name)
        info = fields.get(name)
        is_required = getattr(info, "is_required", None)
        if info is None or (callable(is_required) and is_required()) or (
            not callable(is_required) and getattr(info, "required", True)
        ):
            required.add(name)
    return Injection(frozenset(call_id), tuple(context), frozenset(required))


# --- the schema -----------------------------------------------------------------------------

def model_schema(lc_tool: BaseTool) -> tuple[str, dict[str, Any]]:
    """(description, parameters) exactly as LangChain's ``bind_tools`` would send them."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        function = convert_to_openai_tool(lc_tool)["function"]
    except Exception as exc:
        raise ToolRegistrationError(
            f"LangChain tool {lc_tool.name!r}: cannot build its JSON schema: "
            f"{type(exc).__name__}: {exc}; give it an args_schema (a pydantic model or a "
            "JSON-schema dict)"
        ) from exc
    params = dict(function.get("parameters") or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    params.pop("title", None)
    params.pop("description", None)  # the tool's description, already on the Tool
    return str(function.get("description") or lc_tool.description or ""), params


def _is_async_only(lc_tool: BaseTool) -> bool:
    from langchain_core.tools import StructuredTool

    if isinstance(lc_tool, StructuredTool):
        return lc_tool.func is None and lc_tool.coroutine is not None
    return False


# --- running --------------------------------------------------------------------------------

class LangChainRunner:
    """The callable of a registry tool made from a LangChain tool.

    It takes the registry-validated arguments as keyword arguments (plus the call context
    when the kernel passes one), runs the LangChain tool with a full tool call and turns the
    ``ToolMessage`` into a :class:`~toolregistry.ToolResult`.
    """

    def __init__(self, lc_tool: BaseTool, injection: Injection) -> None:
        self.lc_tool = lc_tool
        self.injection = injection

    def __repr__(self) -> str:
        return f"LangChainRunner({self.lc_tool.name!r})"

    def tool_call(self, arguments: Mapping[str, Any], context: ToolContext | None
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The LangChain tool call and run config for one registry call."""
        args = dict(arguments)
        values: Mapping[str, Any] = context.values if context is not None else {}
        for name in self.injection.context:
            if name in values:
                args[name] = values[name]
            elif name in self.injection.required:
                raise ToolCallError(
                    f"LangChain tool {self.lc_tool.name!r} needs the injected argument {name!r}, "
                    f"which the model does not send: pass context={{{name!r}: ...}} to invoke / "
                    "execute_tool_calls",
                    kind="invalid_arguments",
                )
        call_id = context.call.id if context is not None and context.call.id else None
        # LangChain only returns a ToolMessage (with status and artifact) for a call with an id.
        call = {"type": "tool_call", "id": call_id or f"call_{uuid.uuid4().hex[:24]}",
                "name": self.lc_tool.name, "args": args}
        config: dict[str, Any] = {"run_name": self.lc_tool.name}
        if values:
            config["configurable"] = dict(values)
        return call, config

    def result(self, output: Any, context: ToolContext | None) -> Any:
        """The kernel result for what the LangChain tool returned."""
        from langchain_core.messages import ToolMessage

        if not isinstance(output, ToolMessage):
            return output  # e.g. a LangGraph Command: the kernel encodes it as a value
        # Without a kernel context the id was made up here; leave id and name for the kernel
        # to fill in (it completes a returned ToolResult with the call's own).
        return attrs.evolve(
            from_tool_message(output),
            call_id=context.call.id if context is not None else None,
            name=context.call.name if context is not None else "",
        )

    def _failed(self, exc: Exception) -> ToolCallError | None:
        from langchain_core.tools import ToolException
        from pydantic import ValidationError

        if isinstance(exc, ToolException):
            return ToolCallError(
                f"LangChain tool {self.lc_tool.name!r} failed: {exc}", kind="execution"
            )
        if isinstance(exc, ValidationError) or type(exc).__name__ == "ValidationError":
            return ToolCallError(
                f"LangChain tool {self.lc_tool.name!r} rejected its arguments: {exc}",
                kind="invalid_arguments",
            )
        return None

    def run(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Any:
        """Run the tool synchronously."""
        call, config = self.tool_call(arguments, context)
        try:
            output = self.lc_tool.invoke(call, config=config)  # type: ignore[arg-type]
        except Exception as exc:
            mapped = self._failed(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return self.result(output, context)

    async def arun(self, arguments: Mapping[str, Any], context: ToolContext | None = None
                   ) -> Any:
        """Run the tool asynchronously."""
        call, config = self.tool_call(arguments, context)
        try:
            output = await self.lc_tool.ainvoke(call, config=config)  # type: ignore[arg-type]
        except Exception as exc:
            mapped = self._failed(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return self.result(output, context)


# --- building tools -------------------------------------------------------------------------

def to_tool(lc_tool: BaseTool, *, namespace: str | None = None,
            metadata: ToolMetadata | None = None, run_async: bool | None = None) -> Tool:
    """One LangChain tool as a kernel :class:`~toolregistry.Tool` (not registered).

    ``run_async``: ``None`` runs coroutine-only tools with ``ainvoke`` and the rest with
    ``invoke`` on the registry's worker threads; ``True`` always uses ``ainvoke`` (a tool's
    native ``_arun`` then runs on the registry's event loop, where a timeout really cancels
    it -- but a tool whose ``_arun`` just calls blocking code would block that loop);
    ``False`` always uses ``invoke``.
    """
    description, parameters = model_schema(lc_tool)
    injection = find_injection(lc_tool)
    runner = LangChainRunner(lc_tool, injection)
    extra: dict[str, Any] = {"return_direct": lc_tool.return_direct,
                             "response_format": lc_tool.response_format}
    if lc_tool.metadata:
        extra["metadata"] = dict(lc_tool.metadata)
    base = metadata or ToolMetadata()
    # The caller's metadata (timeout, tags, too_long_to_file, ...) wins; LangChain's tags and
    # fields are added to it rather than lost.
    metadata = attrs.evolve(
        base,
        custom_tags=base.custom_tags | frozenset(lc_tool.tags or ()),
        extra={**base.extra, "langchain": extra},
    )
    async_only = _is_async_only(lc_tool)
    if run_async is False and async_only:
        raise ToolRegistrationError(
            f"LangChain tool {lc_tool.name!r} has only a coroutine, so it cannot run with "
            "run_async=False; leave run_async unset (or True)")
    callable_ = make_callable(runner, run_async=async_only if run_async is None else run_async)
    return Tool(
        name=lc_tool.name,
        description=description,
        parameters=parameters,
        callable=callable_,
        context_param=CONTEXT_PARAM,
        metadata=metadata,
        namespace=namespace,
        provenance=Provenance(
            kind="langchain",
            detail=_detail(lc_tool),
            original_name=lc_tool.name,
            plugin=PLUGIN,
        ),
    )


def _detail(lc_tool: BaseTool) -> str:
    """``module:qualname`` of the function behind a tool (of its class for subclasses)."""
    target: Any = getattr(lc_tool, "func", None) or getattr(lc_tool, "coroutine", None)
    if target is None or not hasattr(target, "__qualname__"):
        target = type(lc_tool)
    return f"{getattr(target, '__module__', '?')}:{target.__qualname__}"


def make_callable(runner: LangChainRunner, *, run_async: bool) -> Any:
    """The kernel callable: a coroutine function running ``ainvoke``, or a sync one."""
    if run_async:
        async def call_async(**arguments: Any) -> Any:
            context = arguments.pop(CONTEXT_PARAM, None)
            return await runner.arun(arguments, context)

        call_async.__qualname__ = call_async.__name__ = runner.lc_tool.name
        return call_async

    def call_sync(**arguments: Any) -> Any:
        context = arguments.pop(CONTEXT_PARAM, None)
        return runner.run(arguments, context)

    call_sync.__qualname__ = call_sync.__name__ = runner.lc_tool.name
    return call_sync


def tools_from_langchain(source: Any, *, namespace: str | None = None,
                         metadata: ToolMetadata | None = None,
                         run_async: bool | None = None) -> list[Tool]:
    """Kernel tools for every LangChain tool in ``source`` (not registered; see
    :func:`to_tool` for ``run_async``)."""
    return [to_tool(t, namespace=namespace, metadata=metadata, run_async=run_async)
            for t in collect_tools(source)]


def resolve_target(target: str, init: Mapping[str, Any] | None = None) -> Any:
    """The LangChain tools named by an import path ``pkg.module:attr``.

    ``attr`` may be a tool, a toolkit, a list of them, a class (a toolkit or ``BaseTool``
    subclass, instantiated with ``init``) or a factory function (called with ``init``); a
    plain module path gives the module's tools (those in ``__all__`` when it has one).
    This is what ``kind = "langchain"`` sources in ``[tool.toolregistry]`` use.
    """
    import inspect

    from langchain_core.tools import BaseTool

    from toolregistry.plugin import import_target

    obj = import_target(target, f"langchain source {target!r}")
    if inspect.ismodule(obj):
        if init:
            raise ToolRegistrationError(
                f"langchain source {target!r}: init= needs a class or a factory function, not "
                "a module; name one with 'module:attr'")
        names = getattr(obj, "__all__", None) or list(vars(obj))
        return [v for v in (getattr(obj, n, None) for n in names) if isinstance(v, BaseTool)]
    if isinstance(obj, type) or (inspect.isroutine(obj) and not isinstance(obj, BaseTool)):
        try:
            return obj(**dict(init or {}))
        except TypeError as exc:
            raise ToolRegistrationError(
                f"langchain source {target!r}: calling {obj!r} with init={dict(init or {})!r} "
                f"failed: {exc}; give its required arguments in init") from exc
    if init:
        raise ToolRegistrationError(
            f"langchain source {target!r} is already a {type(obj).__name__}: init= applies only "
            "to a class or a factory function")
    return obj


def _as_metadata(value: ToolMetadata | Mapping[str, Any] | None) -> ToolMetadata | None:
    """``metadata=`` as a ToolMetadata; a mapping (a ``[tool.toolregistry.sources]`` table)
    with ``-`` or ``_`` keys is accepted."""
    if value is None or isinstance(value, ToolMetadata):
        return value
    fields = {k.replace("-", "_"): v for k, v in value.items()}
    try:
        return ToolMetadata(**fields)
    except (TypeError, ValueError) as exc:
        known = ", ".join(a.name for a in attrs.fields(ToolMetadata))
        raise ToolRegistrationError(
            f"register_from_langchain: invalid metadata {dict(value)!r}: {exc} (fields: {known})"
        ) from exc


def load(registry: Any, source: Any, *, namespace: str | None = None, replace: bool = False,
         init: Mapping[str, Any] | None = None, run_async: bool | None = None,
         metadata: ToolMetadata | Mapping[str, Any] | None = None) -> list[Tool]:
    """The ``langchain`` loader: register the LangChain tools in ``source``.

    ``source`` is a tool, a toolkit, an iterable of them, or an import path
    ``"pkg.module:attr"`` (see :func:`resolve_target`; ``init`` goes to a class or factory).
    ``run_async`` chooses ``invoke`` or ``ainvoke`` (see :func:`to_tool`); ``metadata``
    applies to every tool (LangChain's tags and fields are added to it).
    """
    if isinstance(source, str):
        source = resolve_target(source, init)
    elif init:
        raise ToolRegistrationError(
            "register_from_langchain: init= applies only to an import-path source "
            "('pkg.module:ToolkitClass'); instantiate the toolkit yourself otherwise")
    meta = _as_metadata(metadata)
    tools = tools_from_langchain(source, metadata=meta, run_async=run_async)
    registered: list[Tool] = registry.register_tools(tools, namespace=namespace, replace=replace)
    log.info("langchain.registered", count=len(registered), namespace=namespace)
    return registered


async def aload(registry: Any, source: Any, *, namespace: str | None = None,
                replace: bool = False, init: Mapping[str, Any] | None = None,
                run_async: bool | None = None,
                metadata: ToolMetadata | Mapping[str, Any] | None = None) -> list[Tool]:
    """The ``langchain:async`` loader (building LangChain tools does no I/O)."""
    return load(registry, source, namespace=namespace, replace=replace, init=init,
                run_async=run_async, metadata=metadata)
