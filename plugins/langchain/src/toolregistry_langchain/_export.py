"""Registry tools as LangChain tools (``registry.to_langchain(...)``).

Every exported tool is a :class:`RegistryTool`: a LangChain ``BaseTool`` whose JSON-schema
``args_schema`` is what the registry emits for the tool (``schema_transform`` applied, so the
think plugin's ``toolcall_reason`` is there when enabled) and whose calls go through
``registry.invoke`` / ``registry.ainvoke``: validation, rationale stripping, timeouts,
spooling, and the registry's :class:`~toolregistry.ToolResult` kept as the ``ToolMessage``
artifact, as JSON data (see ``_artifact``) so that LangGraph checkpointers can store it.

This module imports langchain-core at the top: it is only imported when an export is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForToolRun,
    CallbackManagerForToolRun,
)
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import Field

from toolregistry.errors import ToolRegistrationError
from toolregistry.types import ToolResult

from ._approval import Decide, await_approved, wait_approved
from ._artifact import result_artifact
from ._content import to_langchain_content

# Keys of RunnableConfig["configurable"] that LangChain / LangGraph set for themselves and
# that are no business of the registry's tools.
_RESERVED_CONFIGURABLE = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "run_id"})


class RegistryTool(BaseTool):
    """A LangChain tool that runs a registry tool through its registry.

    Called with a LangChain tool call it returns a ``ToolMessage`` whose ``content`` is what
    the model should read and whose ``artifact`` is the registry's result as JSON data
    (:func:`~toolregistry_langchain.from_tool_message` turns it back into a
    :class:`~toolregistry.ToolResult`); error results become ``ToolMessage(status="error")``
    with the same artifact. Called with a plain argument dict it returns the content.
    """

    registry: Any = Field(exclude=True, repr=False)
    """The :class:`~toolregistry.ToolRegistry` that owns the tool."""
    registry_name: str
    """The tool's name in the registry."""
    context: Mapping[str, Any] | None = Field(default=None, exclude=True, repr=False)
    """Values for the registry tool's injected parameters (merged under the run config's
    ``configurable``, which wins)."""
    timeout: float | None = None
    """Per-call timeout passed to the registry (``None``: the tool's or the registry's)."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    approvals: Literal["message", "interrupt"] = "message"
    """What a call held for approval gives: an error ``ToolMessage`` saying it waits
    (``"message"``), or a LangGraph ``interrupt()`` that pauses the graph until it is resumed
    (``"interrupt"``; see ``_approval``)."""
    decide: Any = Field(default=None, exclude=True, repr=False)
    """With ``approvals="interrupt"``: ``decide(approval, answer)`` applies the graph's resume
    value to the held call and returns its final result (``None``: send the call again)."""
    handle_tool_error: Any = True

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # Overridden to keep the LangChain tool-call id: the registry call gets the same id,
        # so traces, think rationales and spool files line up with the ToolMessage.
        if isinstance(tool_input, str):
            raise ToolException(
                f"tool {self.name!r} takes a JSON object of arguments, got a string; call it "
                "with a dict or a tool call"
            )
        return (), {"arguments": dict(tool_input), "call_id": tool_call_id}

    def _context(self, config: RunnableConfig | None) -> dict[str, Any] | None:
        values: dict[str, Any] = dict(self.context or {})
        configurable = (config or {}).get("configurable") or {}
        values.update(
            (k, v) for k, v in configurable.items()
            if k not in _RESERVED_CONFIGURABLE and not k.startswith("__")
        )
        return values or None

    def _output(self, result: ToolResult, call_id: str | None) -> Any:
        with_artifact = self.response_format == "content_and_artifact"
        artifact = result_artifact(result) if with_artifact else None
        if result.is_error:
            if call_id is None or not self.handle_tool_error:
                # No tool call (plain arguments), or the application wants the exception:
                # LangChain's own ToolException handling applies.
                raise ToolException(result.text)
            # LangChain's handling of a ToolException would drop the artifact, so the error
            # ToolMessage is made here; a ToolMessage is returned as it is (as the content of
            # the (content, artifact) pair when that is the response format).
            message = ToolMessage(
                content=self._error_content(result), tool_call_id=call_id, name=self.name,
                status="error", artifact=artifact,
            )
            return (message, None) if with_artifact else message
        content = to_langchain_content(result.content)
        return (content, artifact) if with_artifact else content

    def _error_content(self, result: ToolResult) -> Any:
        """The error message's content, by ``handle_tool_error`` like LangChain's own."""
        flag = self.handle_tool_error
        if isinstance(flag, str):
            return flag
        if callable(flag):
            return flag(ToolException(result.text))
        return to_langchain_content(result.content)

    def _run(
        self,
        arguments: dict[str, Any],
        call_id: str | None,
        config: RunnableConfig,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> Any:
        def call() -> ToolResult:
            result: ToolResult = self.registry.invoke(
                self.registry_name, arguments, context=self._context(config),
                timeout=self.timeout, call_id=call_id,
            )
            return result

        result = call()
        if self.approvals == "interrupt" and result.pending:
            result = wait_approved(result, call, self.decide)
        return self._output(result, call_id)

    async def _arun(
        self,
        arguments: dict[str, Any],
        call_id: str | None,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
    ) -> Any:
        async def call() -> ToolResult:
            result: ToolResult = await self.registry.ainvoke(
                self.registry_name, arguments, context=self._context(config),
                timeout=self.timeout, call_id=call_id,
            )
            return result

        result = await call()
        if self.approvals == "interrupt" and result.pending:
            result = await await_approved(result, call, self.decide)
        return self._output(result, call_id)


def to_langchain(
    registry: Any,
    names: Iterable[str] | None = None,
    *,
    include_deferred: bool = True,
    tags: Iterable[str] | str | None = None,
    exclude_tags: Iterable[str] | str | None = None,
    context: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact",
    approvals: Literal["message", "interrupt"] = "message",
    decide: Decide | None = None,
) -> list[BaseTool]:
    """Registry tools as LangChain tools, usable with ``model.bind_tools(...)`` and agents.

    ``names`` picks tools (default: every enabled tool, filtered by ``include_deferred``,
    ``tags`` and ``exclude_tags`` like ``registry.get_schemas``). The schemas are the
    registry's ``openai-chat`` emission at export time: export again after changing the
    registry (e.g. toggling ``think_augment``). ``context`` supplies injected parameters;
    a run's ``config["configurable"]`` adds to it. ``approvals="interrupt"``: a call held for
    approval pauses a LangGraph graph (``interrupt()``) until it is resumed, instead of
    answering with a "waits for approval" error message; ``decide(approval, answer)`` applies
    the resume value (see :func:`~toolregistry_langchain.interrupt_for_approval`).
    """
    if approvals not in ("message", "interrupt"):
        raise ValueError(f"to_langchain(approvals=...) takes 'message' or 'interrupt', got "
                         f"{approvals!r}")
    if decide is not None and (approvals != "interrupt" or not callable(decide)):
        raise ValueError("to_langchain(decide=...) takes a callable decide(approval, answer), "
                         "with approvals='interrupt'")
    selected = list(names) if names is not None else None
    if selected is not None:
        missing = [n for n in selected if n not in registry]
        if missing:
            known = ", ".join(registry.list_tools()[:20]) or "none"
            raise ToolRegistrationError(
                f"to_langchain: no registered tool named {', '.join(map(repr, missing))} "
                f"(registered: {known})"
            )
    schemas = registry.get_schemas(
        api_format="openai-chat", include_deferred=include_deferred, tags=tags,
        exclude_tags=exclude_tags, names=selected,
    )
    tools: list[BaseTool] = []
    for schema in schemas:
        fn = schema["function"]
        tool = registry[fn["name"]]
        meta = tool.metadata
        lc_tags = sorted({t.value for t in meta.tags} | set(meta.custom_tags)) or None
        # What register_from_langchain kept of a LangChain tool (or an application set under
        # extra["langchain"]) comes back out, so an import -> export round trip keeps it.
        kept = meta.extra.get("langchain")
        if not isinstance(kept, Mapping):
            kept = {}
        lc_metadata = dict(kept.get("metadata") or {})
        tools.append(RegistryTool(
            name=fn["name"],
            description=fn.get("description") or "",
            args_schema=fn.get("parameters") or {"type": "object", "properties": {}},
            registry=registry,
            registry_name=fn["name"],
            context=context,
            timeout=timeout,
            response_format=response_format,
            approvals=approvals,
            decide=decide,
            tags=lc_tags,
            return_direct=bool(kept.get("return_direct", False)),
            metadata={**lc_metadata, "toolregistry_source": tool.provenance.kind},
        ))
    return tools


def to_tool_messages(results: Iterable[ToolResult]) -> list[ToolMessage]:
    """The ``ToolMessage`` objects answering the calls that produced ``results`` (ids matched).

    For the manual loop: ``messages.extend(to_tool_messages(registry.execute_tool_calls(
    ai_message.tool_calls)))``. Error results get ``status="error"``; each message's
    ``artifact`` is the result as JSON data, never sent to the model
    (:func:`~toolregistry_langchain.from_tool_message` gives the ``ToolResult`` back; a
    LangChain tool's own artifact is its ``artifact``).
    """
    messages = []
    for i, result in enumerate(results):
        if not result.call_id:
            raise ValueError(
                f"result #{i} ({result.name!r}) has no call id, so no ToolMessage can answer "
                "it; pass the AIMessage's tool_calls (they carry ids) to execute_tool_calls"
            )
        messages.append(ToolMessage(
            content=to_langchain_content(result.content),
            tool_call_id=result.call_id,
            name=result.name,
            status="error" if result.is_error else "success",
            artifact=result_artifact(result),
        ))
    return messages

