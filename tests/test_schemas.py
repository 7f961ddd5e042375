"""Emitted schemas follow each provider's rules, for a corpus of varied signatures."""

from __future__ import annotations

import inspect
import json
import keyword
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field
from structlog.testing import capture_logs

from toolregistry import Tool, ToolMetadata, ToolRegistry, ToolTag
from toolregistry._schema import _fast_schema, _pydantic_schema, inspect_function
from toolregistry.formats import API_FORMATS
from toolregistry.formats.gemini import to_gemini

from ._corpus import CORPUS
from ._dialects import check, parameters_of


@pytest.fixture(scope="module")
def corpus_registry() -> Any:
    reg = ToolRegistry(default_timeout=5)
    for fn in CORPUS:
        reg.register(fn)
    yield reg
    reg.close()


def test_corpus_has_fifty_signatures(corpus_registry: ToolRegistry) -> None:
    assert len(corpus_registry) >= 50


@pytest.mark.parametrize("api_format", API_FORMATS)
def test_every_corpus_tool_follows_the_dialect(corpus_registry: ToolRegistry, api_format: str
                                              ) -> None:
    for definition in corpus_registry.get_schemas(api_format):
        check(definition, api_format)


@pytest.mark.parametrize("api_format", ["openai-chat", "openai-responses"])
def test_strict_mode_rules(corpus_registry: ToolRegistry, api_format: str) -> None:
    for definition in corpus_registry.get_schemas(api_format, strict=True):
        check(definition, api_format, strict=True)


def test_strict_optional_parameters_become_nullable_and_required() -> None:
    reg = ToolRegistry()

    def f(a: int, b: str = "x", c: Literal["p", "q"] | None = None) -> str:
        return b

    reg.register(f)
    params = reg.get_schemas(strict=True)[0]["function"]["parameters"]
    assert params["required"] == ["a", "b", "c"]
    assert params["properties"]["a"] == {"type": "integer"}
    assert params["properties"]["b"] == {"type": ["string", "null"]}
    assert params["additionalProperties"] is False
    assert {"type": "null"} in params["properties"]["c"]["anyOf"]


def test_gemini_sends_unions_whole_never_the_first_branch(corpus_registry: ToolRegistry
                                                          ) -> None:
    decl = {d["name"]: d for d in corpus_registry.get_schemas("gemini")}
    union = decl["f15"]["parametersJsonSchema"]["properties"]["value"]
    assert union == corpus_registry.get_parameters("f15")["properties"]["value"]
    assert [b["type"] for b in union["anyOf"]] == ["integer", "string"]
    nullable_union = decl["f16"]["parametersJsonSchema"]["properties"]["value"]
    assert [b["type"] for b in nullable_union["anyOf"]] == ["integer", "string", "null"]
    optional = decl["f17"]["parameters"]["properties"]["value"]  # the subset says it exactly
    assert optional == {"type": "string", "nullable": True, "default": None}


def test_gemini_sends_references_as_json_schema(corpus_registry: ToolRegistry) -> None:
    decl = {d["name"]: d for d in corpus_registry.get_schemas("gemini")}
    assert "parameters" not in decl["f12"]
    assert decl["f12"]["parametersJsonSchema"] == corpus_registry.get_parameters("f12")


def test_gemini_subset_inlines_refs_and_bounds_recursion(corpus_registry: ToolRegistry) -> None:
    lost: list[str] = []
    person = to_gemini(corpus_registry.get_parameters("f12"), lost)["properties"]["person"]
    assert person["properties"]["address"]["properties"]["city"]["description"] == "City name"
    text = json.dumps(person)
    assert "$ref" not in text and "$defs" not in text and "additionalProperties" not in text


def test_gemini_reports_what_it_cannot_express() -> None:
    reg = ToolRegistry()

    def f(choice: Literal[1, 2, 3], code: Annotated[str, Field(pattern="^[A-Z]+$")],
          mapping: dict[str, int]) -> int:
        return choice

    reg.register(f)
    with capture_logs() as logs:
        decl = reg.get_schemas("gemini")[0]
    events = [e for e in logs if e["event"] == "schema.degraded"]
    assert len(events) == 1 and events[0]["api_format"] == "gemini"
    assert events[0]["tools"] == 1 and events[0]["tool"] == "f"
    assert events[0]["lost"]["f"] == [
        "code: keyword 'pattern' sent in parametersJsonSchema, which Gemini does not document "
        "(the model may not follow it)"]
    assert decl["parametersJsonSchema"]["properties"]["choice"]["enum"] == [1, 2, 3]


def test_gemini_subset_inlining_cannot_grow_exponentially() -> None:
    # ten definitions, each using the next six times: 3 KB of JSON Schema that, inlined
    # without a bound, is 60 million objects (a 58 MB declaration after 23 s)
    defs: dict[str, Any] = {f"D{i}": {"type": "object", "properties": {
        f"p{j}": {"$ref": f"#/$defs/D{i + 1}"} for j in range(6)}} for i in range(10)}
    defs["D10"] = {"type": "string"}
    params = {"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    lost: list[str] = []
    subset = to_gemini(params, lost)
    assert len(json.dumps(subset)) < 2_000_000
    assert subset["properties"]["x"]["properties"]["p0"]["type"] == "object"
    assert any("references not inlined" in item and "10000 schema objects" in item
               for item in lost)
    reg = ToolRegistry()  # the format itself sends such a schema as it is
    reg.register(Tool(name="fan", description="d", parameters=params, callable=lambda **kw: 0))
    assert reg.get_schemas("gemini")[0]["parametersJsonSchema"] == params
    reg.close()


def test_nested_required_and_defs_stay_correct(corpus_registry: ToolRegistry) -> None:
    params = corpus_registry.get_parameters("f12")
    person = params["$defs"]["Person"]
    assert sorted(person["required"]) == ["address", "age", "name"]
    assert params["$defs"]["Address"]["required"] == ["street", "city"]
    assert params["required"] == ["person"]


@pytest.mark.parametrize("fn", [f for f in CORPUS if f.__name__ in {
    "f01", "f02", "f03", "f04", "f05", "f06", "f17", "f24", "f32", "f33", "f34", "f35", "f46"}])
def test_fast_path_writes_what_pydantic_writes(fn: Any) -> None:
    sig = inspect_function(fn, fn.__name__, {})
    assert all(_fast_schema(p.annotation) is not None for p in sig.params)
    slow = _pydantic_schema(fn.__name__, list(sig.params))
    assert sig.parameters == slow


def test_fast_path_params_are_read_on_first_use_as_they_were() -> None:
    def tool(a: int, /, b: str | None = None, *, mode: Literal["x", "y"] = "x") -> str:
        """Tool.

        Args:
            a: First.
            mode: How.
        """
        return f"{a}{b}{mode}"

    docs = {"a": "First.", "mode": "How."}
    sig = inspect_function(tool, "tool", docs)
    assert "not read yet" in repr(sig)
    eager = inspect_function(tool, "tool", docs, eager=True)
    assert sig.params == eager.params and sig.parameters == eager.parameters
    assert [(p.name, p.positional_only, p.description) for p in sig.params] == [
        ("a", True, "First."), ("b", False, None), ("mode", False, "How.")]
    reg = ToolRegistry()
    reg.register(tool)
    assert reg.invoke("tool", {"a": 1, "mode": "y"}).text == "1Noney"  # positional-only bound
    assert reg.invoke("tool", {"a": 1, "mode": "z"}).error_kind == "invalid_arguments"


def test_a_function_tool_makes_its_signature_on_first_use() -> None:
    import gc

    import attrs

    from toolregistry._schema import Signature

    def tool(city: str, days: int = 1) -> str:
        """Weather.

        Args:
            city: Where.
        """
        return f"{city}{days}"

    def signatures(obj: Any) -> list[Any]:
        return [o for o in gc.get_referents(obj) if isinstance(o, Signature)]

    made = Tool.from_function(tool)
    assert signatures(made) == []  # one object fewer per tool for the collector
    moved = made.evolve(name="ns-tool", namespace="ns")
    assert signatures(moved) == []
    sig = moved.signature
    assert isinstance(sig, Signature) and signatures(moved) == [sig] and moved.signature is sig
    eager = inspect_function(tool, "tool", {"city": "Where."}, eager=True)
    assert sig.params == eager.params and sig.parameters is moved.parameters == eager.parameters
    assert isinstance(attrs.evolve(made, description="x").signature, Signature)
    assert isinstance(attrs.asdict(made, recurse=False)["signature"], Signature)
    other = made.evolve(parameters={"type": "object", "properties": {}})
    assert other.signature is made.signature  # made from the tool it was copied from, as before
    reg = ToolRegistry()
    reg.register(tool)
    assert reg.invoke("tool", {"city": "Oslo"}).text == "Oslo1"
    assert reg.invoke("tool", {"city": 3}).error_kind == "invalid_arguments"


def test_a_function_without_a_name_is_named_after_its_type() -> None:
    def tool() -> str:
        """Nothing."""
        return ""

    tool.__name__ = ""
    assert Tool.from_function(tool).name == "function"
    assert Tool.from_function(tool, name="given").name == "given"


def test_docstring_descriptions_reach_the_schema() -> None:
    def google(city: str, days: int = 1) -> str:
        """Forecast.

        Args:
            city: The city.
            days: How many days.
        """
        return city

    def numpy_style(city: str) -> str:
        """Forecast.

        Parameters
        ----------
        city : str
            The city.
        """
        return city

    def rest(city: str) -> str:
        """Forecast.

        :param city: The city.
        """
        return city

    for fn in (google, numpy_style, rest):
        tool = Tool.from_function(fn)
        assert tool.description == "Forecast."
        assert tool.parameters["properties"]["city"]["description"] == "The city."


def test_tags_and_deferred_filters() -> None:
    reg = ToolRegistry()
    reg.register(Tool.from_function(CORPUS[0], metadata=ToolMetadata(tags={ToolTag.NETWORK})))
    reg.register(Tool.from_function(CORPUS[1], metadata=ToolMetadata(defer=True,
                                                                      custom_tags={"geo"})))
    reg.register(CORPUS[2])
    names = lambda schemas: [s["function"]["name"] for s in schemas]  # noqa: E731
    assert names(reg.get_schemas()) == ["f01", "f02", "f03"]
    assert names(reg.get_schemas(include_deferred=False)) == ["f01", "f03"]
    assert names(reg.get_schemas(tags=[ToolTag.NETWORK])) == ["f01"]
    assert names(reg.get_schemas(tags="geo")) == ["f02"]
    assert names(reg.get_schemas(exclude_tags=["network"])) == ["f02", "f03"]


def test_schemas_are_cached_until_a_change() -> None:
    reg = ToolRegistry()
    reg.register(CORPUS[0])
    first = reg.get_schemas()
    assert reg.get_schemas()[0] is first[0]
    reg.register(CORPUS[1])
    assert len(reg.get_schemas()) == 2
    reg.update_tool_metadata("f01", description_hint=None) if False else None
    reg.disable("f02")
    assert len(reg.get_schemas()) == 1


def test_copy_json_copies_every_container() -> None:
    from toolregistry.formats import copy_json

    original = {"a": [{"b": [1, {"c": 2}]}, "s"], "d": {"e": {}}, "t": (1, 2), "n": None}
    snapshot = json.dumps(original)
    copy = copy_json(original)
    assert copy == original and type(copy["t"]) is tuple
    copy["a"][0]["b"][1]["c"] = 3
    copy["a"][0]["b"].append(4)
    copy["a"].append(5)
    copy["d"]["e"]["f"] = 6
    copy["n"] = 7
    assert json.dumps(original) == snapshot


def test_mcp_format_carries_title_annotations_and_output_schema() -> None:
    reg = ToolRegistry()
    reg.register(Tool(name="t", description="d", parameters={"type": "object", "properties": {}},
                      callable=lambda: 1, output_schema={"type": "object"},
                      metadata=ToolMetadata(title="Nice title", read_only_hint=True)))
    (tool,) = reg.get_schemas("mcp")
    assert tool["title"] == "Nice title"
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["outputSchema"] == {"type": "object"}


def test_unknown_api_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown api_format 'cohere'"):
        ToolRegistry().get_schemas("cohere")


# --- property-based: generated signatures in every format -----------------------------------

ANNOTATIONS: list[Any] = [
    int, str, float, bool, list[int], list[str], dict[str, int], Optional[int],  # noqa: UP045
    int | str, Literal["a", "b"], Literal[1, 2], list[list[str]], tuple[int, str],
    dict[str, list[float]], str | None,
]
DEFAULTS = {int: 0, str: "", float: 0.0, bool: False}


@st.composite
def signatures(draw: st.DrawFn) -> Any:
    count = draw(st.integers(0, 6))
    # parameter names are identifiers: Python keywords ("is", "in", ...) cannot be one
    identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
        lambda n: not keyword.iskeyword(n))
    names = draw(st.lists(identifiers, min_size=count, max_size=count, unique=True))
    params = []
    seen_default = False
    for name in names:
        ann = draw(st.sampled_from(ANNOTATIONS))
        has_default = seen_default or draw(st.booleans())
        default = inspect.Parameter.empty
        if has_default:
            seen_default = True
            default = DEFAULTS.get(ann)
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        annotation=ann, default=default))

    def fn(**kwargs: Any) -> str:
        return json.dumps(kwargs, default=str)

    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__name__ = "generated_" + draw(st.from_regex(r"[a-z]{1,10}", fullmatch=True))
    return fn


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(signatures())
def test_generated_signatures_are_valid_in_every_format(fn: Any) -> None:
    reg = ToolRegistry()
    reg.register(fn)
    for fmt in API_FORMATS:
        (definition,) = reg.get_schemas(fmt)
        check(definition, fmt)
        if fmt == "openai-chat":
            params = parameters_of(definition, fmt)
            assert set(params["properties"]) == set(inspect.signature(fn).parameters)
    for fmt in ("openai-chat", "openai-responses"):
        (definition,) = reg.get_schemas(fmt, strict=True)
        check(definition, fmt, strict=True)


def test_plain_functions_are_read_like_inspect_signature() -> None:
    from toolregistry._schema import _parameters

    def everything(a, /, b: int, c=3, *args: str, d, e: int = 5, **kw):  # type: ignore[no-untyped-def]
        pass

    for fn in [*CORPUS, everything, lambda x, y=2: 0]:
        ours = _parameters(fn)  # (name, kind, default, annotation) per parameter
        ref = [(p.name, p.kind, p.default, p.annotation)
               for p in inspect.signature(fn).parameters.values()]
        assert ours == ref, fn
