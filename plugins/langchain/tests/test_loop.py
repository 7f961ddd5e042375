"""The LangChain chapter's manual loop on our registry, with langchain-core's fake chat model."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from toolregistry import ToolRegistry
from toolregistry_langchain import from_tool_message, to_tool_messages

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langchain_loop.py"


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("langchain_loop_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # pydantic resolves the example's (postponed) annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_loop_pairs_every_call_and_ends_when_the_model_stops(example: ModuleType) -> None:
    registry: ToolRegistry = example.build_registry()
    model = example.scripted_model()
    messages: list[BaseMessage] = example.run_loop(model, registry, "北京和上海天气怎么样?")

    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage",
                     "AIMessage", "ToolMessage", "AIMessage"]
    # Every AIMessage's calls are answered, in order, by ToolMessages with matching ids.
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            answers = messages[i + 1 : i + 1 + len(message.tool_calls)]
            assert [a.tool_call_id for a in answers] == [c["id"] for c in message.tool_calls]  # type: ignore[attr-defined]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert tool_messages[0].content == "模拟数据:北京晴,温度 20,单位 celsius。"
    assert tool_messages[1].content == "模拟数据:上海晴,温度 68,单位 fahrenheit。"
    assert tool_messages[2].content == "36.0"
    assert tool_messages[3].status == "error" and "city" in str(tool_messages[3].content)
    assert not messages[-1].tool_calls  # type: ignore[attr-defined]
    # The model was bound to exactly what the registry emits, on every round.
    assert model.seen_tools == [registry.get_schemas()] * 3


def test_chapter_loop_with_tool_objects(example: ModuleType) -> None:
    # The chapter's own form: a name -> tool mapping and tool.invoke(call) -> ToolMessage.
    registry: ToolRegistry = example.build_registry()
    tool_registry = {t.name: t for t in registry.to_langchain()}
    bound_model = example.scripted_model().bind_tools(list(tool_registry.values()))
    messages: list[BaseMessage] = [HumanMessage(content="北京天气怎么样?")]
    for _ in range(5):
        ai_message = bound_model.invoke(messages)
        messages.append(ai_message)
        if not ai_message.tool_calls:
            break
        for call in ai_message.tool_calls:
            selected_tool = tool_registry.get(call["name"])
            if selected_tool is None:
                raise ValueError(f"未注册的工具:{call['name']}")
            messages.append(selected_tool.invoke(call))
    else:
        raise RuntimeError("达到示例调用上限,仍未完成。")
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_messages] == ["call_1", "call_2", "call_3", "call_4"]
    assert [m.status for m in tool_messages] == ["success"] * 3 + ["error"]
    assert from_tool_message(tool_messages[2]).value == 36.0


def test_async_loop(example: ModuleType) -> None:
    registry: ToolRegistry = example.build_registry()
    bound_model = example.scripted_model().bind_tools(registry.to_langchain())

    async def main() -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(content="?")]
        for _ in range(5):
            ai_message = await bound_model.ainvoke(messages)
            messages.append(ai_message)
            if not ai_message.tool_calls:
                return messages
            results = await registry.aexecute_tool_calls(ai_message.tool_calls)
            messages.extend(to_tool_messages(results))
        raise RuntimeError("round limit")

    messages = asyncio.run(main())
    assert sum(isinstance(m, ToolMessage) for m in messages) == 4


def test_round_limit_stops_a_model_that_never_stops(example: ModuleType) -> None:
    def always_calling() -> Any:
        i = 0
        while True:
            i += 1
            yield AIMessage(content="", tool_calls=[
                {"name": "multiply", "args": {"a": i, "b": 2}, "id": f"c{i}", "type": "tool_call"}])

    model = example.ScriptedChatModel(messages=always_calling())
    with pytest.raises(RuntimeError, match="round limit"):
        example.run_loop(model, example.build_registry(), "loop", max_rounds=3)


def test_example_runs_as_a_script() -> None:
    out = subprocess.run([sys.executable, "-W", "error", str(EXAMPLE)], capture_output=True,
                         text=True, timeout=60, check=True)
    assert "tool: #call_3 [success] 36.0" in out.stdout
    assert out.stdout.strip().endswith("上海晴,68 °F(约 20 °C)。")


def test_tool_choice_for_bind_tools_comes_from_the_kernel_helper(example: ModuleType) -> None:
    from toolregistry.errors import ToolNotFoundError
    from toolregistry.tool_choice import tool_choice

    registry: ToolRegistry = example.build_registry()
    tools = registry.to_langchain()
    model = example.scripted_model()
    forced = model.bind_tools(tools, tool_choice=tool_choice("get_weather", "langchain",
                                                             registry=registry))
    assert forced.kwargs["tool_choice"] == "get_weather"
    assert [tool_choice(v, "langchain") for v in ("auto", "none", "required", "any")] == [
        "auto", "none", "any", "any"]
    with pytest.raises(ToolNotFoundError, match="get_wether"):
        tool_choice("get_wether", "langchain", registry=registry)
    # The forced request still runs through the loop: the first turn calls tools, the rest
    # of the script answers.
    messages = forced.invoke([HumanMessage(content="北京天气怎么样?")])
    assert messages.tool_calls
