"""The @tool decorator: the spec's forms, sync and async, metadata, direct calls (kernel only)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from toolregistry import Image, Tool, ToolMetadata, ToolRegistry, ToolTag
from toolregistry.decorators import tool
from toolregistry.errors import ToolRegistrationError

PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00"
       b"\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x9a\xa0"
       b"\xa0\x00\x00\x00\x00IEND\xaeB`\x82")


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry("decorator-test")
    yield reg
    reg.close()


# --- the spec's examples, with ``from SimpleLLMFunc import tool`` replaced ---------------------

@tool
async def get_weather(city: str, unit: str = "celsius") -> str:
    """
    Get current weather for a city.

    Args:
        city: City name (e.g., "Tokyo", "New York").
        unit: Temperature unit — "celsius" or "fahrenheit".

    Returns:
        Current weather description.

    Best Practices:
        - Use full city names, not abbreviations.
        - Default to celsius unless the user specifies otherwise.
    """
    # Your implementation here
    return f"Sunny, 22°C in {city}"


@tool(too_long_to_file=True)
async def read_large_file(path: str) -> str:
    """Read a potentially large file."""
    with open(path) as f:
        return f.read()


@tool(prompt_injection_builder=lambda ctx: f"Current workspace: {ctx.get('workspace', '/')}")
async def list_files(path: str) -> str:
    """List files in a directory."""
    return "\n".join(sorted(p.name for p in Path(path).iterdir()))


def test_basic_tool_is_a_tool_with_docstring_parts() -> None:
    assert isinstance(get_weather, Tool)
    assert get_weather.name == "get_weather"
    assert get_weather.description.startswith("Get current weather for a city.")
    assert "Best Practices" not in get_weather.description
    assert get_weather.metadata.best_practices == (
        "Use full city names, not abbreviations.",
        "Default to celsius unless the user specifies otherwise.",
    )
    assert get_weather.parameters["required"] == ["city"]
    assert get_weather.parameters["properties"]["city"]["description"].startswith("City name")
    assert get_weather.is_async


def test_direct_call_still_calls_the_function() -> None:
    coro = get_weather("Tokyo")
    assert inspect.iscoroutine(coro)
    assert asyncio.run(coro) == "Sunny, 22°C in Tokyo"


def test_spec_forms_set_metadata(tmp_path: Path) -> None:
    assert read_large_file.metadata.too_long_to_file is True
    builder = list_files.metadata.prompt_injection_builder
    assert builder is not None
    assert builder({"workspace": "/srv"}) == "Current workspace: /srv"
    big = tmp_path / "big.txt"
    big.write_text("x" * 10)
    assert asyncio.run(read_large_file(str(big))) == "x" * 10


def test_registered_and_executed(registry: ToolRegistry) -> None:
    registry.register(get_weather)
    registry.register(read_large_file)
    # (with toolregistry-spool installed, its reader tool joins them)
    assert {"get_weather", "read_large_file"} <= set(registry.list_tools())
    [result] = registry.execute_tool_calls(
        [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'}])
    assert result.ok
    assert result.content == "Sunny, 22°C in Paris"
    assert registry.get_tool("read_large_file").metadata.too_long_to_file is True  # type: ignore[union-attr]


def test_register_decorator_stacks(registry: ToolRegistry) -> None:
    @registry.register
    @tool(best_practices="One rule.")
    def stacked(x: int) -> int:
        """Stacked."""
        return x + 1

    assert isinstance(stacked, Tool)
    assert stacked(1) == 2
    assert registry["stacked"].metadata.best_practices == ("One rule.",)


def test_sync_functions_work_too(registry: ToolRegistry) -> None:
    @tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    assert multiply(3, 4) == 12
    assert multiply.is_async is False
    registry.register(multiply)
    assert registry.invoke("multiply", {"a": 3, "b": 4}).content == "12.0"


def test_name_first_and_keyword_options() -> None:
    @tool("multiply_numbers", description="Exact multiplication.")
    def multiply(a: float, b: float) -> float:
        """Ignored for the description."""
        return a * b

    assert multiply.name == "multiply_numbers"
    assert multiply.description == "Exact multiplication."

    @tool(name="renamed")
    async def original() -> str:
        """Original."""
        return "ok"

    assert original.name == "renamed"
    assert asyncio.run(original()) == "ok"

    with pytest.raises(ToolRegistrationError, match="give the tool's name once"):
        tool("a", name="b")


def test_metadata_passthrough() -> None:
    @tool(defer=True, tags=[ToolTag.READ_ONLY], timeout=5, search_hint="zip archive",
          metadata=ToolMetadata(title="Compressor", custom_tags={"files"}))
    def compress(path: str) -> str:
        """Compress a file."""
        return path

    meta = compress.metadata
    assert meta.defer is True
    assert meta.tags == frozenset({ToolTag.READ_ONLY})
    assert meta.timeout == 5
    assert meta.search_hint == "zip archive"
    assert meta.title == "Compressor"
    assert meta.custom_tags == frozenset({"files"})


def test_explicit_best_practices_win_over_docstring() -> None:
    @tool(best_practices=["Explicit."])
    def f() -> None:
        """F.

        Best Practices:
            - Docstring.
        """

    assert f.metadata.best_practices == ("Explicit.",)


def test_namespace_is_applied_on_register(registry: ToolRegistry) -> None:
    @tool(namespace="weather")
    def now(city: str) -> str:
        """Now."""
        return city

    registry.register(now)
    assert registry.list_tools() == ["weather-now"]


def test_errors_name_what_is_wrong() -> None:
    with pytest.raises(ToolRegistrationError, match=r"unknown option\(s\) colour.*defer"):
        @tool(colour="red")
        def a() -> None:
            """A."""

    with pytest.raises(ToolRegistrationError, match="prompt_injection_builder must be a callable"):
        @tool(prompt_injection_builder="text")  # type: ignore[call-overload, untyped-decorator]
        def b() -> None:
            """B."""

    with pytest.raises(ToolRegistrationError, match="timeout must be a finite number of seconds > 0"):
        @tool(timeout=-1)
        def c() -> None:
            """C."""

    with pytest.raises(ToolRegistrationError, match="applied twice"):
        tool(tool(lambda: None))

    with pytest.raises(ToolRegistrationError, match="metadata must be a ToolMetadata"):
        tool(metadata={"defer": True})(lambda: None)  # type: ignore[call-overload]


# --- multimodal returns: toolregistry.Image replaces ImgPath / ImgUrl ---------------------------

def test_multimodal_returns(registry: ToolRegistry, tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(PNG)

    @tool
    async def generate_chart(data: str) -> Image:
        """Generate a chart from the data."""
        return Image.from_path(chart)

    @tool
    async def fetch_screenshot(url: str) -> Image:
        """Take a screenshot of a webpage."""
        return Image.from_url("https://screenshot-api.example.com/capture?url=" + url)

    @tool
    async def analyze_image(image_path: str) -> tuple[str, Image]:
        """Analyze an image and return description + annotated version."""
        return "A landscape photo...", Image.from_path(chart)

    @tool
    async def compare_images(left: str, right: str) -> tuple[str, list[Image]]:
        """Return a comparison note and both images."""
        return "Compare these two images", [Image.from_path(left), Image.from_path(right)]

    for t in (generate_chart, fetch_screenshot, analyze_image, compare_images):
        registry.register(t)
    results = registry.execute_tool_calls([
        {"id": "1", "name": "generate_chart", "arguments": {"data": "1,2"}},
        {"id": "2", "name": "fetch_screenshot", "arguments": {"url": "example.com"}},
        {"id": "3", "name": "analyze_image", "arguments": {"image_path": str(chart)}},
        {"id": "4", "name": "compare_images", "arguments": {"left": str(chart),
                                                            "right": str(chart)}},
    ])
    assert all(r.ok for r in results), [r.content for r in results]
    assert [len(r.images) for r in results] == [1, 1, 1, 2]
    assert results[1].images[0].url.startswith("https://screenshot-api")  # type: ignore[union-attr]
    assert results[2].text == "A landscape photo..."
    assert results[3].text == "Compare these two images"
    messages = registry.build_tool_call_messages(
        [{"id": "3", "name": "analyze_image", "arguments": {"image_path": str(chart)}}],
        [results[2]], api_format="anthropic")
    block = messages[1]["content"][0]
    assert block["content"][1]["source"]["type"] == "base64"


def test_tool_is_usable_as_a_value_in_mappings() -> None:
    # The decorated object is what applications pass around (toolkits, dicts by name).
    toolkit: Mapping[str, Any] = {t.name: t for t in (get_weather, read_large_file, list_files)}
    assert sorted(toolkit) == ["get_weather", "list_files", "read_large_file"]
