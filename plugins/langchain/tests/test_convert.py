"""LangChain tools into kernel Tool objects, without a registry: schemas, injection, results."""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Any, Literal

import pytest
from langchain_core.tools import (
    BaseTool,
    BaseToolkit,
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    ToolException,
    tool,
)
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from toolregistry.errors import ToolCallError, ToolRegistrationError
from toolregistry.types import Image, ToolCall, ToolContext, ToolResult
from toolregistry_langchain._content import from_langchain_content, to_langchain_content
from toolregistry_langchain._import import (
    LangChainRunner,
    collect_tools,
    find_injection,
    to_tool,
    tools_from_langchain,
)


class WeatherInput(BaseModel):
    city: str = Field(min_length=1, description="城市名称,例如北京")
    unit: Literal["celsius", "fahrenheit"] = Field(default="celsius", description="温度单位")


@tool(args_schema=WeatherInput)
def get_weather(city: str, unit: str = "celsius") -> str:
    """查询演示天气数据;这是教学模拟结果,不是实时天气。"""
    temperature = 20 if unit == "celsius" else 68
    return f"模拟数据:{city}晴,温度 {temperature},单位 {unit}。"


@tool
def multiply(a: float, b: float) -> float:
    """计算两个数的乘积,适合精确乘法运算。"""
    return a * b


@tool(parse_docstring=True)
def whoami(
    greeting: str,
    user_id: Annotated[str, InjectedToolArg],
    call_id: Annotated[str, InjectedToolCallId],
    locale: Annotated[str, InjectedToolArg] = "en",
) -> str:
    """Greet the current user.

    Args:
        greeting: The greeting word.
    """
    return f"{greeting} {user_id} ({locale}) via {call_id}"


def ctx(name: str, call_id: str | None = "call-1", **values: Any) -> ToolContext:
    return ToolContext(registry=None, call=ToolCall(name=name, id=call_id), values=values)


def test_schema_is_what_langchain_sends_to_models() -> None:
    for lc in (get_weather, multiply, whoami):
        t = to_tool(lc)
        expected = convert_to_openai_tool(lc)["function"]
        assert t.name == lc.name
        assert t.description == expected["description"] == lc.description
        assert t.parameters == expected["parameters"]
        assert t.provenance.kind == "langchain"
        assert t.provenance.plugin == "langchain"
        assert t.provenance.original_name == lc.name
    w = to_tool(get_weather).parameters
    assert w["properties"]["city"] == {
        "description": "城市名称,例如北京", "minLength": 1, "type": "string"}
    assert w["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert w["required"] == ["city"]
    assert "test_convert:get_weather" in str(to_tool(get_weather).provenance.detail)


def test_injected_arguments_are_hidden_and_classified() -> None:
    t = to_tool(whoami)
    assert set(t.parameters["properties"]) == {"greeting"}
    assert t.parameters["properties"]["greeting"]["description"] == "The greeting word."
    inj = find_injection(whoami)
    assert inj.call_id == frozenset({"call_id"})
    assert set(inj.context) == {"user_id", "locale"}
    assert inj.required == frozenset({"user_id"})


def test_runner_injects_call_id_and_context_values() -> None:
    runner = LangChainRunner(whoami, find_injection(whoami))
    result = runner.run({"greeting": "hi"}, ctx("whoami", user_id="u42"))
    assert isinstance(result, ToolResult)
    assert result.ok
    assert result.content == "hi u42 (en) via call-1"
    assert result.call_id == "call-1"
    result = runner.run({"greeting": "hi"}, ctx("whoami", user_id="u1", locale="fr"))
    assert result.content == "hi u1 (fr) via call-1"


def test_missing_injected_value_names_the_argument() -> None:
    runner = LangChainRunner(whoami, find_injection(whoami))
    with pytest.raises(ToolCallError, match=r"'user_id'.*context=") as info:
        runner.run({"greeting": "hi"}, ctx("whoami"))
    assert info.value.kind == "invalid_arguments"


def test_callable_without_context_still_runs_injected_call_id() -> None:
    # The kernel may call the callable with the arguments only: an id is made up so that
    # LangChain still returns a ToolMessage; id and name are left for the kernel to fill.
    @tool
    def echo_id(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Echo."""
        return f"{x}:{tool_call_id[:5]}"

    result = to_tool(echo_id).callable(x=3)  # type: ignore[misc]
    assert result.content == "3:call_"
    assert result.call_id is None
    assert result.name == ""


def test_content_and_artifact_keeps_artifact_off_the_model() -> None:
    @tool(response_format="content_and_artifact")
    def sample(n: int) -> tuple[str, list[int]]:
        """Sample n numbers."""
        return f"sampled {n} numbers", list(range(n))

    result = to_tool(sample).callable(n=4)  # type: ignore[misc]
    assert result.content == "sampled 4 numbers"
    assert result.artifact == [0, 1, 2, 3]
    assert result.ok


def test_handled_tool_error_becomes_an_error_result() -> None:
    def fragile(x: int) -> str:
        """Fail on purpose."""
        raise ToolException(f"x={x} is not allowed")

    handled = StructuredTool.from_function(fragile, handle_tool_error=True)
    result = to_tool(handled).callable(x=2)  # type: ignore[misc]
    assert result.is_error and result.error_kind == "execution"
    assert result.content == "x=2 is not allowed"

    custom = StructuredTool.from_function(
        fragile, handle_tool_error=lambda e: f"please retry: {e}")
    assert to_tool(custom).callable(x=1).content == "please retry: x=1 is not allowed"  # type: ignore[misc]
    fixed = StructuredTool.from_function(fragile, handle_tool_error="tool unavailable")
    assert to_tool(fixed).callable(x=1).content == "tool unavailable"  # type: ignore[misc]


def test_unhandled_tool_exception_is_a_tool_call_error() -> None:
    def fragile(x: int) -> str:
        """Fail on purpose."""
        raise ToolException("backend down")

    t = to_tool(StructuredTool.from_function(fragile))
    with pytest.raises(ToolCallError, match="backend down") as info:
        t.callable(x=1)  # type: ignore[misc]
    assert info.value.kind == "execution"


def test_pydantic_validation_inside_langchain_is_invalid_arguments() -> None:
    t = to_tool(get_weather)
    with pytest.raises(ToolCallError, match="rejected its arguments") as info:
        t.callable(city="")  # type: ignore[misc]
    assert info.value.kind == "invalid_arguments"


def test_async_only_structured_tool_gives_an_async_callable() -> None:
    async def fetch(q: str) -> dict[str, str]:
        """Fetch q."""
        await asyncio.sleep(0)
        return {"q": q, "source": "async"}

    lc = StructuredTool.from_function(coroutine=fetch)
    t = to_tool(lc)
    assert t.is_async
    result = asyncio.run(t.callable(q="x"))  # type: ignore[misc]
    assert result.content == '{"q": "x", "source": "async"}'
    sync_t = to_tool(multiply)
    assert not sync_t.is_async


def test_json_schema_args_schema_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "query"},
                       "limit": {"type": "integer", "minimum": 1}},
        "required": ["q"],
    }
    lc = StructuredTool.from_function(
        lambda **kw: sorted(kw.items()), name="search", description="Search things.",
        args_schema=schema)
    t = to_tool(lc)
    assert t.parameters == schema
    assert t.description == "Search things."
    assert t.callable(q="a", limit=2).content == '[["limit", 2], ["q", "a"]]'  # type: ignore[misc]


class Counter(BaseTool):
    name: str = "count_words"
    description: str = "Count the words of a text."

    def _run(self, text: str) -> int:
        return len(text.split())

    async def _arun(self, text: str) -> int:
        return len(text.split())


def test_basetool_subclass_and_toolkit() -> None:
    class Kit(BaseToolkit):
        def get_tools(self) -> list[BaseTool]:
            return [Counter(), multiply]

    tools = tools_from_langchain([Kit(), get_weather])
    assert [t.name for t in tools] == ["count_words", "multiply", "get_weather"]
    counter = tools[0]
    assert counter.parameters["properties"] == {"text": {"type": "string"}}
    assert counter.callable(text="a b c").content == "3"  # type: ignore[misc]
    assert collect_tools(multiply) == [multiply]


def test_plain_function_is_refused_with_a_hint() -> None:
    def plain(a: int) -> int:
        return a

    with pytest.raises(ToolRegistrationError, match=r"registry\.register\(fn\)"):
        collect_tools([plain])
    with pytest.raises(ToolRegistrationError, match="got dict"):
        collect_tools({"name": "x"})


def test_tool_metadata_keeps_langchain_fields() -> None:
    lc = StructuredTool.from_function(
        lambda a, b: a * b, name="mul", description="m", tags=["math"], metadata={"team": "x"},
        return_direct=True)
    t = to_tool(lc)
    assert t.metadata.custom_tags == frozenset({"math"})
    assert t.metadata.extra["langchain"] == {
        "return_direct": True, "response_format": "content", "metadata": {"team": "x"}}


def test_multimodal_content_both_ways() -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 8
    b64 = base64.b64encode(png).decode()
    parts = from_langchain_content([
        {"type": "text", "text": "look"},
        {"type": "image", "base64": b64, "mime_type": "image/png"},
        {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64}},
        {"type": "json", "json": {"a": 1}},
    ])
    assert isinstance(parts, list)
    assert parts[0] == {"type": "text", "text": "look"}
    images = [p["image"] for p in parts if p["type"] == "image"]
    assert images[0].read_bytes() == png and images[0].media_type == "image/png"
    assert images[1].url == "https://example.org/a.png"
    assert images[2].media_type == "image/jpeg"
    assert parts[-1]["type"] == "text" and '"a": 1' in parts[-1]["text"]
    assert from_langchain_content(["a", {"type": "text", "text": "b"}]) == "a\nb"

    back = to_langchain_content([{"type": "text", "text": "t"},
                                 {"type": "image", "image": Image.from_bytes(png)},
                                 {"type": "image", "image": Image.from_url("https://x/y.png")}])
    assert back == [{"type": "text", "text": "t"},
                    {"type": "image", "base64": b64, "mime_type": "image/png"},
                    {"type": "image", "url": "https://x/y.png"}]
