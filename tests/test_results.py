"""Tool return values into model content (docs/execution.md, "Results")."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid
from pathlib import Path
from typing import Any

import pydantic
import pytest

from toolregistry import Image, ToolRegistry, ToolResult
from toolregistry._results import encode_content

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int
    label: str


class City(pydantic.BaseModel):
    name: str
    population: int


@pytest.mark.parametrize("value, text", [
    ("plain text, 中文", "plain text, 中文"),
    (None, "null"),
    (True, "true"),
    (7, "7"),
    (1.5, "1.5"),
    ({"城市": "東京", "n": 1}, '{"城市":"東京","n":1}'),
    ([1, "二"], '[1,"二"]'),
    ((1, 2), "[1,2]"),
    (Point(1, "é"), '{"x":1,"label":"é"}'),
    (City(name="Zürich", population=3), '{"name":"Zürich","population":3}'),
    (dt.datetime(2024, 5, 1, 12, 30), '"2024-05-01T12:30:00"'),
    (dt.date(2024, 5, 1), '"2024-05-01"'),
    (decimal.Decimal("1.10"), '"1.10"'),
    (Color.RED, '"red"'),
    (Level.HIGH, "3"),
    ({"when": dt.datetime(2024, 1, 1), "price": decimal.Decimal("9.99"), "c": Color.RED},
     '{"when":"2024-01-01T00:00:00","price":"9.99","c":"red"}'),
    (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
    (b"bytes as text", "bytes as text"),
])
def test_encoding(value: Any, text: str) -> None:
    assert encode_content(value) == text


def test_json_output_is_valid_json_and_not_ascii_escaped() -> None:
    text = encode_content({"天气": "晴", "items": [Point(1, "a")]})
    assert isinstance(text, str)
    assert "\\u" not in text
    assert json.loads(text) == {"天气": "晴", "items": [{"x": 1, "label": "a"}]}


def test_unknown_objects_fall_back_to_str() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert encode_content({"t": Thing()}) == '{"t":"a thing"}'


def test_image_from_path_url_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    path.write_bytes(PNG)
    for image in (Image.from_path(path), Image.from_url("https://example.test/a.jpg"),
                  Image.from_bytes(PNG)):
        assert encode_content(image) == [{"type": "image", "image": image}]
    assert Image.from_path(path).media_type == "image/png"
    assert Image.from_url("https://example.test/a.jpg").media_type == "image/jpeg"
    assert Image.from_path(path).read_bytes() == PNG
    assert Image.from_bytes(PNG).as_url().startswith("data:image/png;base64,")


def test_image_bytes_are_recognised() -> None:
    parts = encode_content(PNG)
    assert isinstance(parts, list) and parts[0]["image"].media_type == "image/png"


def test_text_and_image_tuple_and_lists() -> None:
    a, b = Image.from_bytes(PNG), Image.from_url("https://example.test/b.png")
    assert encode_content(("A landscape", a)) == [
        {"type": "text", "text": "A landscape"}, {"type": "image", "image": a}]
    assert encode_content([a, b]) == [{"type": "image", "image": a},
                                      {"type": "image", "image": b}]
    assert encode_content(("Compare these", [a, b])) == [
        {"type": "text", "text": "Compare these"}, {"type": "image", "image": a},
        {"type": "image", "image": b}]
    assert encode_content(("data", {"k": 1}, a)) == [
        {"type": "text", "text": "data"}, {"type": "text", "text": '{"k":1}'},
        {"type": "image", "image": a}]


def test_lists_without_images_stay_json() -> None:
    assert encode_content(["a", "b"]) == '["a","b"]'


def test_results_through_the_registry(registry: ToolRegistry, tmp_path: Path) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(PNG)

    @registry.register
    def chart(title: str) -> tuple[str, Image]:
        """Draw a chart."""
        return title, Image.from_path(path)

    @registry.register
    def city() -> City:
        """A city."""
        return City(name="Zürich", population=3)

    @registry.register
    def ready() -> ToolResult:
        """A ready result."""
        return ToolResult(call_id=None, name="", content="custom", metadata={"k": 1})

    result = registry.invoke("chart", {"title": "Sales"}, call_id="c1")
    assert result.ok and result.text == "Sales"
    assert [i.path for i in result.images] == [str(path)]
    result = registry.invoke("city", {})
    assert result.content == '{"name":"Zürich","population":3}'
    assert isinstance(result.value, City)  # the raw value stays available to the application
    result = registry.invoke("ready", {}, call_id="c9")
    assert (result.content, result.call_id, result.name, result.metadata) == (
        "custom", "c9", "ready", {"k": 1})
