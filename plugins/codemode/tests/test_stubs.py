"""Tool schemas as typed Python signatures: annotations, defaults, names, binding."""

from __future__ import annotations

from typing import Any, Literal

import pydantic
import pytest

from toolregistry import Tool
from toolregistry_codemode import render_type
from toolregistry_codemode._stubs import function_for, identifier


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "string"}, "str"),
    ({"type": "integer"}, "int"),
    ({"type": "number"}, "float"),
    ({"type": "boolean"}, "bool"),
    ({"type": "null"}, "None"),
    ({}, "Any"),
    ({"type": "string", "enum": ["a", "b"]}, "Literal['a', 'b']"),
    ({"enum": ["a", None]}, "Literal['a'] | None"),
    ({"const": 3}, "Literal[3]"),
    ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
    ({"type": "array"}, "list[Any]"),
    ({"type": ["string", "null"]}, "str | None"),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "int | None"),
    ({"anyOf": [{"type": "null"}, {"type": "string", "enum": ["x"]}]}, "Literal['x'] | None"),
    ({"anyOf": [{"type": "integer"}, {}]}, "Any"),
    ({"type": "object", "properties": {"a": {"type": "string"}}}, "dict[str, Any]"),
    ({"type": "object", "additionalProperties": {"type": "number"}}, "dict[str, float]"),
    ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "array",
                                                               "items": {"type": "integer"}}]}},
     "list[str | list[int]]"),
])
def test_render_type(schema: dict[str, Any], expected: str) -> None:
    assert render_type(schema) == expected


def test_refs_resolve_and_cycles_end_in_any() -> None:
    schema = {"$defs": {"Node": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        "Color": {"enum": ["red", "blue"]}},
              "type": "object",
              "properties": {"c": {"$ref": "#/$defs/Color"}, "n": {"$ref": "#/$defs/Node"}}}
    assert render_type(schema["properties"]["c"], schema) == "Literal['red', 'blue']"
    rendered = render_type(schema["properties"]["n"], schema)
    assert rendered.startswith("list[list[") and rendered.endswith("Any" + "]" * rendered.count("["))
    assert render_type({"$ref": "#/$defs/Missing"}, schema) == "Any"
    assert render_type({"$ref": "http://elsewhere/x.json"}, schema) == "Any"


def test_names_become_identifiers_that_shadow_nothing() -> None:
    assert identifier("notes-read_note") == "notes_read_note"
    assert identifier("pets.getPet") == "pets_getPet"
    assert identifier("2fa") == "t_2fa"
    assert identifier("class") == "class_"
    assert identifier("print") == "print_"  # a tool must not hide the builtin
    assert identifier("call_tool") == "call_tool_"
    assert identifier("a-b", {"a_b"}) == "a_b_"


class Point(pydantic.BaseModel):
    x: int
    y: int


def test_signature_from_a_python_function() -> None:
    def locate(name: str, limit: int = 5, mode: Literal["fast", "exact"] = "fast",
               near: list[float] | None = None) -> Point:
        """Find a place by name.

        More text that the listing leaves out.

        Args:
            name: What to look for.
            limit: At most this many.
        """
        return Point(x=0, y=0)

    fn = function_for(Tool.from_function(locate), "locate", False)
    assert fn.signature() == (
        "async def locate(name: str, limit: int = 5, mode: Literal['fast', 'exact'] = 'fast', "
        "near: list[float] | None = None) -> dict[str, Any]:")
    assert fn.doc() == "Find a place by name. name: What to look for; limit: At most this many"
    assert fn.bind(("Oslo",), {"limit": 2}) == {"name": "Oslo", "limit": 2}


def test_schema_names_that_are_not_identifiers_are_mapped_back() -> None:
    tool = Tool(name="search", description="Search.", callable=lambda **kw: kw, parameters={
        "type": "object",
        "properties": {"from": {"type": "string"}, "X-Trace-Id": {"type": "string"},
                       "toolcall_reason": {"type": "string"}},
        "required": ["from"]})
    fn = function_for(tool, "search", False)
    assert fn.signature() == "async def search(from_: str, X_Trace_Id: str = ...) -> Any:"
    assert fn.bind((), {"from_": "a", "X_Trace_Id": "t"}) == {"from": "a", "X-Trace-Id": "t"}


def test_binding_errors_read_like_python() -> None:
    def f(a: int, b: int = 0) -> int:
        return a + b

    fn = function_for(Tool.from_function(f), "f", False)
    with pytest.raises(TypeError, match=r"f\(\) takes 2 positional arguments but 3 were given"):
        fn.bind((1, 2, 3), {})
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'c' \(its parameters: a, b\)"):
        fn.bind((), {"c": 1})
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        fn.bind((1,), {"a": 2})


def test_output_schema_gives_the_return_type_and_parsing() -> None:
    tool = Tool(name="t", description="", callable=lambda: "{}",
                output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    fn = function_for(tool, "t", False)
    assert fn.returns == "dict[str, Any]" and fn.parse_json


def test_mcp_wrapped_results_are_their_inner_type() -> None:
    wrapped = {"type": "object", "properties": {"result": {"type": "string"}},
               "required": ["result"]}
    fn = function_for(Tool(name="n", description="", callable=lambda: "x",
                           output_schema=wrapped), "n", False)
    assert fn.returns == "str" and not fn.parse_json
    numbers = {"type": "object", "properties": {"result": {"type": "array",
                                                           "items": {"type": "integer"}}},
               "required": ["result"]}
    fn = function_for(Tool(name="m", description="", callable=lambda: "[1]",
                           output_schema=numbers), "m", False)
    assert fn.returns == "list[int]" and fn.parse_json


def test_docstrings_are_one_sentence_and_stay_valid_python() -> None:
    def quote(unit: str = "c") -> str:
        """Quote a unit. Longer explanation that the listing leaves out.

        Args:
            unit: Temperature unit, "c" or "f"
        """
        return unit

    fn = function_for(Tool.from_function(quote), "quote", False)
    assert fn.doc() == 'Quote a unit. unit: Temperature unit, "c" or "f\\"'
    compile(fn.listing() + "\n", "listing", "exec")


def test_stubs_widen_literals_the_listing_keeps_them() -> None:
    from toolregistry_codemode._stubs import widen

    assert widen("Literal['c', 'f']") == "str"
    assert widen("Literal['a'] | None") == "str | None"
    assert widen("list[Literal[1, 2]]") == "list[int]"
    assert widen("Literal[True, 'x']") == "bool | str"

    def convert(amount: float, currency: Literal["EUR", "USD"]) -> float:
        """Convert."""
        return amount

    fn = function_for(Tool.from_function(convert), "convert", False)
    assert "currency: Literal['EUR', 'USD']" in fn.listing()
    assert "currency: str" in fn.stub()
