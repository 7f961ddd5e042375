"""Registry tools exported as LangChain tools: schemas, calls through the registry, hooks."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolregistry import Injected, ToolContext, ToolRegistry, ToolResult, hookimpl
from toolregistry.errors import ToolRegistrationError
from toolregistry_langchain import (
    RegistryTool,
    from_tool_message,
    to_langchain,
    to_tool_messages,
)


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
    assert message.artifact["value"] == 3 and message.artifact["call_id"] == "c1"
    result = from_tool_message(message)
    assert isinstance(result, ToolResult) and result.value == 3 and result.content == "3"
    # The registry's validation answers, as an error ToolMessage the model can act on.
    bad = add.invoke({"type": "tool_call", "id": "c2", "name": "add", "args": {"a": "x"}})
    assert bad.status == "error" and "invalid arguments" in bad.content
    assert from_tool_message(bad).error_kind == "invalid_arguments"
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
    assert message.artifact["reason"] == "need a sum"
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


def _without_duration(message: ToolMessage) -> dict[str, Any]:
    return {k: v for k, v in message.artifact.items() if k != "duration"}


@pytest.mark.parametrize("call", [
    {"type": "tool_call", "id": "e1", "name": "refuse", "args": {"reason": "no"}},
    {"type": "tool_call", "id": "e2", "name": "add", "args": {"a": "x"}},
    {"type": "tool_call", "id": "e3", "name": "add", "args": {}},
])
def test_error_messages_match_to_tool_messages(call: dict[str, Any]) -> None:
    # An exported tool's error ToolMessage and the manual loop's say the same thing: status
    # "error", the same content and the same artifact (issue 15, item 2).
    registry = build_registry()
    exported = by_name(registry.to_langchain())[call["name"]]
    [expected] = to_tool_messages(registry.execute_tool_calls([call]))
    for message in (exported.invoke(call), asyncio.run(exported.ainvoke(call))):
        assert isinstance(message, ToolMessage)
        assert message.status == expected.status == "error"
        assert message.content == expected.content
        assert message.tool_call_id == call["id"] and message.name == call["name"]
        assert message.artifact is not None
        assert _without_duration(message) == _without_duration(expected)
        assert from_tool_message(message).is_error


def test_error_handling_follows_handle_tool_error() -> None:
    registry = build_registry()
    call = {"type": "tool_call", "id": "h1", "name": "refuse", "args": {"reason": "no"}}
    refuse = by_name(registry.to_langchain())["refuse"]
    refuse.handle_tool_error = "the tool failed, try another"
    message = refuse.invoke(call)
    assert message.content == "the tool failed, try another" and message.status == "error"
    assert message.artifact["error_kind"] == "execution"
    refuse.handle_tool_error = lambda exc: f"handled: {exc}"
    assert "handled: " in refuse.invoke(call).content
    refuse.handle_tool_error = False
    with pytest.raises(ToolException, match="refused: no"):
        refuse.invoke(call)
    # Plain arguments (no tool call): the error text, as LangChain gives it.
    refuse.handle_tool_error = True
    assert "refused: no" in refuse.invoke({"reason": "no"})
    # response_format="content": an error message without artifact, like the successes.
    plain = by_name(registry.to_langchain(response_format="content"))
    message = plain["refuse"].invoke(call)
    assert message.status == "error" and message.artifact is None
    assert plain["add"].invoke({**call, "name": "add", "args": {"a": 1}}).artifact is None


def test_from_tool_message_reads_any_tool_message() -> None:
    foreign = ToolMessage(content=[{"type": "text", "text": "ok"}], tool_call_id="f1",
                          name="other", artifact={"rows": 3})
    result = from_tool_message(foreign)
    assert (result.call_id, result.name, result.content, result.is_error) == (
        "f1", "other", "ok", False)
    assert result.artifact == {"rows": 3}
    failed = from_tool_message(ToolMessage(content="boom", tool_call_id="f2", status="error"))
    assert failed.is_error and failed.error_kind == "execution"


def test_artifact_values_are_json_data() -> None:
    import datetime as dt
    import json
    from decimal import Decimal

    registry = ToolRegistry()

    @registry.register
    def odd_values() -> dict[str, Any]:
        """Values JSON has no type for."""
        return {"when": dt.datetime(2026, 1, 2, 3, 4, 5), "price": Decimal("1.10"),
                "tags": {"a"}, "obj": object.__new__(ReasonPlugin)}

    @registry.register
    def raw() -> bytes:
        """Bytes that are not text."""
        return b"\x00\xff"

    tools = by_name(registry.to_langchain())
    message = tools["odd_values"].invoke(
        {"type": "tool_call", "id": "j1", "name": "odd_values", "args": {}})
    value = message.artifact["value"]
    assert json.loads(json.dumps(message.artifact)) == message.artifact
    assert value["when"] == "2026-01-02T03:04:05" and value["price"] == "1.10"
    assert value["tags"] == ["a"]
    assert value["obj"].startswith("<") and "ReasonPlugin" in value["obj"]
    # Bytes stay whole, in base64 (the model got them as text).
    message = tools["raw"].invoke({"type": "tool_call", "id": "j2", "name": "raw", "args": {}})
    assert message.status == "success" and message.artifact["value"] == "AP8="


def test_langchain_fields_survive_import_and_export() -> None:
    def look(key: str) -> str:
        """Look a key up."""
        return key

    lookup = StructuredTool.from_function(look, name="lookup", return_direct=True,
                                          tags=["kv"], metadata={"owner": "ops"})
    registry = ToolRegistry()
    registry.register_from_langchain(lookup, namespace="lc")
    [exported] = registry.to_langchain()
    assert exported.return_direct is True
    assert exported.tags == ["kv"]
    assert exported.metadata == {"owner": "ops", "toolregistry_source": "langchain"}
    # A registry tool of another source asks for it through the same metadata.
    from toolregistry import ToolMetadata

    @registry.register(metadata=ToolMetadata(extra={"langchain": {"return_direct": True}}))
    def final_answer(text: str) -> str:
        """Give the final answer."""
        return text

    assert by_name(registry.to_langchain())["final_answer"].return_direct is True
    assert by_name(registry.to_langchain())["lc-lookup"].name == "lc-lookup"
