"""Exported tools in real LangGraph graphs with memory (issue 15, items 1-3).

The graphs are LangGraph's own: a ``StateGraph`` with the prebuilt ``ToolNode`` and
``tools_condition``, and LangChain's ``create_agent``; the memory is LangGraph's
``InMemorySaver`` and the SQLite checkpointers (sync and async); the model is langchain-core's
fake chat model with ``bind_tools``, answering from a script of tool calls.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core._api import LangChainBetaWarning
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumps, loads
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

from toolregistry import ToolRegistry
from toolregistry_langchain import from_tool_message, to_tool_messages


class ToolCallingModel(GenericFakeChatModel):
    """langchain-core's fake chat model with ``bind_tools``: it answers from a script and
    records the messages of every request (``seen``)."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def calls(*specs: tuple[str, dict[str, Any]], prefix: str = "c") -> AIMessage:
    return AIMessage(content="", tool_calls=[
        {"name": name, "args": args, "id": f"{prefix}{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(specs)])


class Forecast(BaseModel):
    city: str
    day: date
    high: float


@tool(response_format="content_and_artifact")
def top_rows(n: int) -> tuple[str, list[dict[str, int]]]:
    """Return the first n rows of a table."""
    return f"{n} rows fetched", [{"id": i} for i in range(n)]


def build_registry() -> ToolRegistry:
    registry = ToolRegistry(default_timeout=30)

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.register
    def forecast(city: str) -> Forecast:
        """Tomorrow's forecast for a city."""
        return Forecast(city=city, day=date(2026, 11, 2), high=21.5)

    @registry.register
    def refuse(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"refused: {reason}")

    registry.register_from_langchain(top_rows)
    return registry


# One turn calls every kind of tool (a plain value, a pydantic model, a LangChain tool's own
# artifact, a failing tool, invalid arguments); the second turn answers.
FIRST_TURN = [("add", {"a": 2, "b": 3}), ("forecast", {"city": "Oslo"}),
              ("top_rows", {"n": 2}), ("refuse", {"reason": "no"}), ("add", {"a": "x"})]


def script(turns: int = 1) -> Iterator[AIMessage | str]:
    for turn in range(turns):
        yield calls(*FIRST_TURN, prefix=f"t{turn}-")
        yield f"done {turn}"


def tool_graph(model: ToolCallingModel, tools: list[Any], checkpointer: Any) -> Any:
    """The classic LangGraph agent: a model node, the prebuilt ToolNode, tools_condition."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def agent_graph(model: ToolCallingModel, tools: list[Any], checkpointer: Any) -> Any:
    """LangChain's own agent (``langchain.agents.create_agent``)."""
    return create_agent(model, tools, checkpointer=checkpointer)


GRAPHS: dict[str, Callable[[ToolCallingModel, list[Any], Any], Any]] = {
    "StateGraph+ToolNode": tool_graph,
    "create_agent": agent_graph,
}


def check_tool_messages(messages: list[BaseMessage], registry: ToolRegistry) -> None:
    """The ToolMessages of one turn, as read back from a checkpoint: every artifact is there
    and equal to what the registry produced, and turns back into the registry's result."""
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_messages] == [name for name, _ in FIRST_TURN]
    assert [m.status for m in tool_messages] == ["success"] * 3 + ["error"] * 2
    assert all(isinstance(m.artifact, dict) for m in tool_messages)  # item 2: errors too
    results = [from_tool_message(m) for m in tool_messages]
    assert results[0].value == 5 and results[0].content == "5"
    assert results[1].value == {"city": "Oslo", "day": "2026-11-02", "high": 21.5}
    assert results[2].content == "2 rows fetched"
    assert results[2].artifact == [{"id": 0}, {"id": 1}]
    assert results[3].is_error and results[3].error_kind == "execution"
    assert "refused: no" in results[3].text
    assert results[4].is_error and results[4].error_kind == "invalid_arguments"
    assert [r.call_id for r in results] == [m.tool_call_id for m in tool_messages]
    # The same calls through the manual loop give the same artifacts (durations aside).
    direct = to_tool_messages(registry.execute_tool_calls(
        calls(*FIRST_TURN, prefix="t0-").tool_calls))
    strip = ("duration",)
    assert [{k: v for k, v in m.artifact.items() if k not in strip} for m in direct] == [
        {k: v for k, v in m.artifact.items() if k not in strip} for m in tool_messages[:5]]


Saver = Callable[[Path], AbstractContextManager[Any]]
ASaver = Callable[[Path], AbstractAsyncContextManager[Any]]


class _Memory:
    """InMemorySaver shares nothing between instances: reading back uses the same one."""

    def __init__(self) -> None:
        self.saver = InMemorySaver()

    def __call__(self, path: Path) -> nullcontext[InMemorySaver]:
        return nullcontext(self.saver)


def sqlite_saver(path: Path) -> AbstractContextManager[Any]:
    return SqliteSaver.from_conn_string(str(path))


def async_sqlite_saver(path: Path) -> AbstractAsyncContextManager[Any]:
    return AsyncSqliteSaver.from_conn_string(str(path))


@pytest.mark.parametrize("graph_kind", list(GRAPHS))
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_graph_with_memory_runs_tools_and_keeps_their_artifacts(
        graph_kind: str, saver_kind: str, tmp_path: Path) -> None:
    registry = build_registry()
    make: Saver = _Memory() if saver_kind == "memory" else sqlite_saver
    db = tmp_path / "memory.sqlite"
    config = {"configurable": {"thread_id": "t-1"}}
    model = ToolCallingModel(messages=script(turns=2))
    with make(db) as saver:
        app = GRAPHS[graph_kind](model, registry.to_langchain(), saver)
        out = app.invoke({"messages": [HumanMessage(content="go")]}, config)
        assert out["messages"][-1].content == "done 0"
        # Memory: the second turn on the thread starts from the checkpoint.
        out = app.invoke({"messages": [HumanMessage(content="again")]}, config)
        assert out["messages"][-1].content == "done 1"
        assert len(model.seen[-2]) == 1 + 1 + 5 + 1 + 1  # the whole first turn came back
    with make(db) as saver:  # a new saver on the same database (the same one in memory)
        app = GRAPHS[graph_kind](ToolCallingModel(messages=iter([])), [], saver)
        messages = app.get_state(config).values["messages"]
    check_tool_messages(messages[:8], registry)


@pytest.mark.parametrize("graph_kind", list(GRAPHS))
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_graph_with_memory_async(graph_kind: str, saver_kind: str, tmp_path: Path) -> None:
    registry = build_registry()
    make: ASaver = _Memory() if saver_kind == "memory" else async_sqlite_saver
    db = tmp_path / "memory.sqlite"
    config = {"configurable": {"thread_id": "t-a"}}

    async def main() -> list[BaseMessage]:
        model = ToolCallingModel(messages=script(turns=2))
        async with make(db) as saver:
            app = GRAPHS[graph_kind](model, registry.to_langchain(), saver)
            out = await app.ainvoke({"messages": [HumanMessage(content="go")]}, config)
            assert out["messages"][-1].content == "done 0"
            out = await app.ainvoke({"messages": [HumanMessage(content="again")]}, config)
            assert out["messages"][-1].content == "done 1"
        async with make(db) as saver:
            app = GRAPHS[graph_kind](ToolCallingModel(messages=iter([])), [], saver)
            state = await app.aget_state(config)
            return list(state.values["messages"])

    messages = asyncio.run(main())
    check_tool_messages(messages[:8], registry)
    if saver_kind == "sqlite":  # really on disk, in LangGraph's own tables
        with sqlite3.connect(db) as conn:
            assert conn.execute("select count(*) from checkpoints").fetchone()[0] > 0


def test_messages_round_trip_through_langchain_serializers() -> None:
    registry = build_registry()
    tools = {t.name: t for t in registry.to_langchain()}
    messages: list[BaseMessage] = [
        tools[name].invoke({"type": "tool_call", "id": f"m{i}", "name": name, "args": args})
        for i, (name, args) in enumerate(FIRST_TURN)]
    messages += to_tool_messages(registry.execute_tool_calls(calls(*FIRST_TURN).tool_calls))
    # What applications store: json.dumps of messages_to_dict, and LangChain's dumps / loads.
    text = json.dumps(messages_to_dict(messages))
    assert messages_from_dict(json.loads(text)) == messages
    with warnings.catch_warnings():  # langchain_core.load.loads is marked beta
        warnings.simplefilter("ignore", LangChainBetaWarning)
        assert loads(dumps(messages), allowed_objects="messages") == messages
    # LangGraph's serializer (msgpack), used by every checkpointer.
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    assert serde.loads_typed(serde.dumps_typed(messages)) == messages


def test_return_direct_survives_import_and_export() -> None:
    @tool(return_direct=True)
    def lookup(key: str) -> str:
        """Look a key up; the answer goes straight to the user."""
        return f"value of {key}"

    registry = ToolRegistry()
    registry.register_from_langchain(lookup)
    exported = {t.name: t for t in registry.to_langchain()}
    assert exported["lookup"].return_direct is True

    # LangChain's agent ends the run on a return_direct tool: the model is asked once.
    model = ToolCallingModel(messages=iter([calls(("lookup", {"key": "k"})), "never asked"]))
    app = create_agent(model, list(exported.values()), checkpointer=InMemorySaver())
    out = app.invoke({"messages": [HumanMessage(content="k?")]},
                     {"configurable": {"thread_id": "rd"}})
    assert len(model.seen) == 1
    assert out["messages"][-1].content == "value of k"


DOCS = Path(__file__).resolve().parents[3] / "docs" / "langchain.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_docs_artifact_and_langgraph_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    if not DOCS.exists():  # the plugin tested outside this repository
        pytest.skip(f"{DOCS} not present")
    text = DOCS.read_text(encoding="utf-8")
    first = _python_blocks(text)[0]  # "Registering LangChain tools": get_weather and registry
    artifact = text.split("### The artifact", 1)[1].split("\n## ", 1)[0]
    langgraph = text.split("## LangGraph agents with memory", 1)[1].split("\n## ", 1)[0]
    model = ToolCallingModel(messages=iter([
        calls(("get_weather", {"city": "北京"}), prefix="a"), "北京晴。",
        calls(("get_weather", {"city": "上海"}), ("multiply", {"a": 20, "b": 1.8}), prefix="b"),
        "上海晴。",
    ]))
    namespace: dict[str, Any] = {"__name__": "docs_example", "model": model}

    def run(blocks: list[str]) -> None:
        for block in blocks:
            exec(compile(block, f"{DOCS.name}:example", "exec", dont_inherit=True), namespace)

    run([first, *_python_blocks(artifact)])
    assert namespace["message"].artifact["value"] == 42.0
    result = namespace["result"]
    assert (result.value, result.ok, result.text) == (42.0, True, "42.0")  # as the page says
    run(_python_blocks(langgraph))
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in printed] == [
        ["get_weather", "True"], ["get_weather", "True"], ["multiply", "True"]]
    # The second turn was asked with the first one remembered.
    assert [type(m).__name__ for m in model.seen[2]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "HumanMessage"]
