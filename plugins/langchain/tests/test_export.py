"""Registry tools exported as LangChain tools: schemas, calls through the registry, hooks."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolregistry import Injected, ToolContext, ToolRegistry, ToolResult, hookimpl
from toolregistry.errors import ToolRegistrationError
from toolregistry_langchain import RegistryTool, to_langchain, to_tool_messages


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def build_registry(**kwargs: Any) -> ToolRegistry:
    registry = ToolRegistry(default_timeout=10, **kwargs)

    @registry.register
    def add(a: int, b: int = 1) -> int:
        """Add two integers.

        Args:
            a: First addend.
            b: Second addend.
        """
        return a + b

    @registry.register
    def whoami(ctx: ToolContext, user: Annotated[str, Injected()]) -> str:
        """Say who calls, and with which call id."""
        return f"{user} via {ctx.call.id}"

    @registry.register
    def refuse(reason: str) -> str:
        """Always fail."""
        raise ValueError(f"refused: {reason}")

    registry.register_from_langchain(shout, namespace="lc")
    return registry


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {t.name: t for t in tools}


def test_export_covers_every_source_with_the_emitted_schema() -> None:
    registry = build_registry()
    tools = registry.to_langchain()
    assert [t.name for t in tools] == ["add", "whoami", "refuse", "lc-shout"]
    assert all(isinstance(t, RegistryTool) for t in tools)
    emitted = {s["function"]["name"]: s for s in registry.get_schemas()}
    for t in tools:
        # What LangChain's bind_tools sends is what the registry emits.
        assert convert_to_openai_tool(t) == emitted[t.name]
    assert tools[3].metadata == {"toolregistry_source": "langchain"}
    assert to_langchain(registry, ["add"])[0].name == "add"
    with pytest.raises(ToolRegistrationError, match="'nope'"):
        registry.to_langchain(["add", "nope"])


def test_calls_run_through_the_registry() -> None:
    registry = build_registry()
    tools = by_name(registry.to_langchain())
    add = tools["add"]
    assert add.invoke({"a": 2, "b": 3}) == "5"
    message = add.invoke({"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 2}})
    assert isinstance(message, ToolMessage)
    assert message.content == "3" and message.tool_call_id == "c1"
    assert message.status == "success"
    assert isinstance(message.artifact, ToolResult) and message.artifact.value == 3
    # The registry's validation answers, as an error ToolMessage the model can act on.
    bad = add.invoke({"type": "tool_call", "id": "c2", "name": "add", "args": {"a": "x"}})
    assert bad.status == "error" and "invalid arguments" in bad.content
    failed = tools["refuse"].invoke(
        {"type": "tool_call", "id": "c3", "name": "refuse", "args": {"reason": "no"}})
    assert failed.status == "error" and "refused: no" in failed.content


def test_call_id_and_context_reach_injected_parameters() -> None:
    registry = build_registry()
    whoami = by_name(registry.to_langchain(context={"user": "ada"}))["whoami"]
    call = {"type": "tool_call", "id": "call-42", "name": "whoami", "args": {}}
    assert whoami.invoke(call).content == "ada via call-42"
    # A run's configurable values win over the export-time context.
    msg = whoami.invoke(call, config={"configurable": {"user": "bob", "thread_id": "t"}})
    assert msg.content == "bob via call-42"


def test_async_invocation() -> None:
    registry = build_registry()
    tools = by_name(registry.to_langchain())

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(
            tools["add"].ainvoke({"type": "tool_call", "id": f"c{i}", "name": "add",
                                  "args": {"a": i, "b": i}}) for i in range(4))))

    messages = asyncio.run(main())
    assert [m.content for m in messages] == ["0", "2", "4", "6"]
    assert [m.tool_call_id for m in messages] == ["c0", "c1", "c2", "c3"]


class ReasonPlugin:
    """Stands in for the think plugin: adds a rationale field and strips it before validation."""

    seen: list[tuple[str, str | None]] = []

    @staticmethod
    @hookimpl
    def schema_transform(registry: Any, tool: Any, schema: dict[str, Any], api_format: str
                         ) -> None:
        schema["properties"]["toolcall_reason"] = {"type": "string"}

    @staticmethod
    @hookimpl
    def pre_invoke(registry: Any, tool: Any, call: Any) -> None:
        if call.arguments is not None:
            call.reason = call.arguments.pop("toolcall_reason", None)
            ReasonPlugin.seen.append((call.name, call.reason))


def test_hooks_apply_to_exported_tools() -> None:
    registry = build_registry(plugins=[ReasonPlugin])
    add = by_name(registry.to_langchain())["add"]
    assert "toolcall_reason" in add.args
    message = add.invoke({"type": "tool_call", "id": "c1", "name": "add",
                          "args": {"a": 1, "b": 2, "toolcall_reason": "need a sum"}})
    assert message.content == "3"
    assert message.artifact.reason == "need a sum"
    assert ("add", "need a sum") in ReasonPlugin.seen


def test_to_tool_messages_pairs_ids_and_marks_errors() -> None:
    registry = build_registry()
    calls = [
        {"type": "tool_call", "id": "a", "name": "add", "args": {"a": 1}},
        {"type": "tool_call", "id": "b", "name": "missing_tool", "args": {}},
    ]
    messages = to_tool_messages(registry.execute_tool_calls(calls))
    assert [(m.tool_call_id, m.status) for m in messages] == [("a", "success"), ("b", "error")]
    assert messages[0].content == "2"
    assert "missing_tool" in messages[1].content
    with pytest.raises(ValueError, match="no call id"):
        to_tool_messages([registry.invoke("add", {"a": 1})])
