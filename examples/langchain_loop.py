"""The LangChain chapter's manual tool-calling loop, run on a toolregistry registry.

A LangChain ``@tool`` and a plain Python function live in one registry; the model is bound to
``registry.to_langchain()``; each AIMessage's ``tool_calls`` (several per turn) run through
``registry.execute_tool_calls``; ``to_tool_messages`` answers them with ToolMessages whose
``tool_call_id`` matches; the loop ends when the model stops asking for tools.

No network and no API key: a scripted langchain-core fake chat model stands in for a real
one (any chat model with ``bind_tools`` works the same way).
Needs: toolregistry, toolregistry-langchain.  Run: ``python examples/langchain_loop.py``
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from toolregistry import ToolRegistry
from toolregistry_langchain import to_tool_messages


class WeatherInput(BaseModel):
    city: str = Field(min_length=1, description="城市名称,例如北京")
    unit: Literal["celsius", "fahrenheit"] = Field(default="celsius", description="温度单位")


@tool(args_schema=WeatherInput)
def get_weather(city: str, unit: str = "celsius") -> str:
    """查询演示天气数据;这是教学模拟结果,不是实时天气。"""
    temperature = 20 if unit == "celsius" else 68
    return f"模拟数据:{city}晴,温度 {temperature},单位 {unit}。"


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register_from_langchain([get_weather])  # a LangChain tool ...

    @registry.register  # ... and a plain Python function, side by side
    def multiply(a: float, b: float) -> float:
        """计算两个数的乘积,适合精确乘法运算。"""
        return a * b

    return registry


class ScriptedChatModel(GenericFakeChatModel):
    """langchain-core's fake chat model, with ``bind_tools`` like a real integration.

    It answers with the scripted messages in order and records the tool definitions it was
    bound to (``seen_tools``), the way a provider would receive them.
    """

    seen_tools: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[Any, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen_tools.append(kwargs.get("tools"))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted_model() -> ScriptedChatModel:
    script: Iterator[AIMessage | str] = iter([
        AIMessage(content="", tool_calls=[  # one turn, three calls
            {"name": "get_weather", "args": {"city": "北京"}, "id": "call_1", "type": "tool_call"},
            {"name": "get_weather", "args": {"city": "上海", "unit": "fahrenheit"},
             "id": "call_2", "type": "tool_call"},
            {"name": "multiply", "args": {"a": 20, "b": 1.8}, "id": "call_3", "type": "tool_call"},
        ]),
        AIMessage(content="", tool_calls=[  # a bad argument: the model gets an error to fix
            {"name": "get_weather", "args": {"city": ""}, "id": "call_4", "type": "tool_call"},
        ]),
        AIMessage(content="北京晴,20 °C;上海晴,68 °F(约 20 °C)。"),
    ])
    return ScriptedChatModel(messages=script)


def run_loop(model: ScriptedChatModel, registry: ToolRegistry, question: str,
             max_rounds: int = 5) -> list[BaseMessage]:
    """The chapter's loop: model -> tool calls -> ToolMessages -> model, until no calls."""
    bound_model = model.bind_tools(registry.to_langchain())
    messages: list[BaseMessage] = [HumanMessage(content=question)]
    for _ in range(max_rounds):  # an explicit bound on model rounds
        ai_message = bound_model.invoke(messages)
        messages.append(ai_message)
        if not ai_message.tool_calls:
            return messages
        results = registry.execute_tool_calls(ai_message.tool_calls)
        messages.extend(to_tool_messages(results))
    raise RuntimeError("the model still asks for tools after the round limit")


def main() -> None:
    registry = build_registry()
    messages = run_loop(scripted_model(), registry, "北京和上海天气怎么样?")
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = ", ".join(f"{c['name']}({c['args']}) #{c['id']}" for c in message.tool_calls)
            print(f"   ai: {calls}")
        elif isinstance(message, ToolMessage):
            print(f" tool: #{message.tool_call_id} [{message.status}] {message.content}")
        else:
            print(f"{message.type:>5}: {message.content}")


if __name__ == "__main__":
    main()
