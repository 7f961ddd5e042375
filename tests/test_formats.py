"""The table of provider formats: lookup, what each format offers, formats added by plugins
(in process and as a real installed distribution, the one docs/formats.md shows)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from toolregistry import Tool, ToolRegistry, hookimpl
from toolregistry.errors import PluginError
from toolregistry.formats import API_FORMATS, BUILTIN, BUILTIN_FORMATS, FormatTable
from toolregistry.plugin import (
    Answer,
    ChoiceMode,
    Definition,
    ProviderFormat,
    RawCall,
    field,
    has_field,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.S)


def _blocks() -> list[tuple[str | None, str, str]]:
    text = (DOCS / "formats.md").read_text(encoding="utf-8")
    return [(m["file"], m["lang"], m["code"]) for m in BLOCK.finditer(text)]


# --- the table ---------------------------------------------------------------------------------

def test_builtin_formats_and_their_features() -> None:
    assert API_FORMATS == ("openai-chat", "openai-responses", "anthropic", "gemini", "mcp",
                           "bedrock-converse")
    assert BUILTIN.names("tool_choice") == (
        "openai-chat", "openai-responses", "anthropic", "gemini", "langchain", "bedrock-converse")
    assert BUILTIN.names("messages") == (
        "openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse")
    assert BUILTIN.names("calls") == (
        "openai-chat", "openai-responses", "anthropic", "gemini", "langchain", "bedrock-converse")
    assert len(BUILTIN) == len(BUILTIN_FORMATS)


@pytest.mark.parametrize("alias, name", [
    ("openai", "openai-chat"), ("OpenAI_Chat", "openai-chat"), (" chat ", "openai-chat"),
    ("openai-chatcompletion", "openai-chat"), ("openai_responses", "openai-responses"),
    ("responses", "openai-responses"), ("claude", "anthropic"), ("google", "gemini"),
    ("genai", "gemini"), ("MCP", "mcp"), ("lc", "langchain"),
    ("converse", "bedrock-converse"), ("Bedrock_Converse", "bedrock-converse"),
])
def test_names_and_aliases(alias: str, name: str) -> None:
    assert BUILTIN.get(alias).name == name
    assert alias in BUILTIN


def test_unknown_format_and_missing_feature_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown api_format 'cohere': use one of openai-chat, "
                                         r"openai-responses, anthropic, gemini, mcp, "
                                         r"bedrock-converse$"):
        BUILTIN.get("cohere", "schemas")
    with pytest.raises(ValueError, match=r"the 'langchain' format has no tool schemas; use an "
                                         r"api_format that has: openai-chat"):
        BUILTIN.get("lc", "schemas")
    with pytest.raises(TypeError, match="api_format must be a str, got int"):
        BUILTIN.get(3)  # type: ignore[arg-type]


def test_every_format_module_says_what_it_owns() -> None:
    for fmt in BUILTIN:
        doc = sys.modules[type(fmt).__module__].__doc__ or ""
        assert doc.startswith(f"``{fmt.name}``"), type(fmt).__module__
        assert "Owns:" in doc


# --- a format from a plugin, in process --------------------------------------------------------

_COHERE_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
                 "array": "List", "object": "Dict"}


class CohereV1(ProviderFormat):
    """Cohere's v1 chat API: ``parameter_definitions`` instead of a JSON schema; calls are
    ``{name, parameters}`` (no id, no type); results go back as ``tool_results`` entries that
    repeat the call."""

    name = "cohere-v1"
    call_shape = "a Cohere v1 tool call"

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        required = set(parameters.get("required", ()))
        return {"name": tool.name, "description": tool.description, "parameter_definitions": {
            name: {"type": _COHERE_TYPES.get(prop.get("type", ""), "str"),
                   "description": prop.get("description", ""),
                   "required": name in required}
            for name, prop in parameters.get("properties", {}).items()}}

    def read_definition(self, definition: Mapping[str, Any]) -> Definition:
        defs = definition["parameter_definitions"]
        return Definition(definition["name"], definition.get("description"), {
            "type": "object",
            "properties": {n: {"type": {v: k for k, v in _COHERE_TYPES.items()}[d["type"]]}
                           for n, d in defs.items()},
            "required": [n for n, d in defs.items() if d["required"]]})

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        if kind is None and has_field(obj, "name") and has_field(obj, "parameters"):
            return RawCall(field(obj, "name"), None, field(obj, "parameters"))
        return None

    def answer_messages(self, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        return [{"call": {"name": call.name, "parameters": call.arguments or {}},
                 "outputs": [{"error": result.text} if result.is_error
                             else {"result": result.text}]}
                for call, result, _ in answers]


class CoherePlugin:
    @hookimpl
    def provider_formats(self) -> list[ProviderFormat]:
        return [CohereV1()]


@pytest.fixture
def cohere() -> Iterator[ToolRegistry]:
    reg = ToolRegistry(plugins=[CoherePlugin()])

    @reg.register
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    yield reg
    reg.close()


def test_a_plugin_format_on_every_path(cohere: ToolRegistry) -> None:
    (definition,) = cohere.get_schemas("cohere-v1")
    assert definition["parameter_definitions"]["city"] == {
        "type": "str", "description": "", "required": True}
    assert cohere.get_tool_schema("get_weather", "cohere-v1") is definition  # cached
    calls = [{"name": "get_weather", "parameters": {"city": "Lima"}},
             {"name": "get_weather", "parameters": {}}]
    assert [c.format for c in cohere.parse_tool_calls(calls[:1])] == ["cohere-v1"]
    results = cohere.execute_tool_calls(calls)
    assert results[0].text == "Lima: sunny"
    assert results[1].error_kind == "invalid_arguments"
    answers = cohere.build_tool_call_messages(calls, results, api_format="cohere-v1")
    assert answers[0] == {"call": {"name": "get_weather", "parameters": {"city": "Lima"}},
                          "outputs": [{"result": "Lima: sunny"}]}
    assert "error" in answers[1]["outputs"][0]


def test_without_the_plugin_the_call_is_not_understood(registry: ToolRegistry) -> None:
    (result,) = registry.execute_tool_calls([{"name": "get_weather", "parameters": {}}])
    assert result.error_kind == "malformed_call"
    assert "or a Bedrock Converse toolUse block" in result.text
    assert "Cohere" not in result.text


def test_a_call_no_format_reads_names_the_plugin_shapes(cohere: ToolRegistry) -> None:
    (result,) = cohere.execute_tool_calls([{"type": "text", "text": "hi"}])
    assert result.error_kind == "malformed_call"
    assert result.text.endswith("a Bedrock Converse toolUse block or a Cohere v1 tool call")


# --- plugins that get it wrong -----------------------------------------------------------------

def _plugin(*formats: Any) -> Any:
    class Plugin:
        @hookimpl
        def provider_formats(self) -> list[Any]:
            return list(formats)

    return Plugin()


class Impostor(ProviderFormat):
    """Claims the name of a built-in format."""

    name = "openai-chat"

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        return "impostor"


class TakesToolUse(ProviderFormat):
    """Claims the calls Anthropic's format reads."""

    name = "tool-user"
    call_types = ("tool_use",)

    def read_call(self, obj: Any, kind: Any) -> RawCall | None:
        return RawCall("x", None, {})


class NoInverse(ProviderFormat):
    name = "no-inverse"

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        return {"name": tool.name}


@pytest.mark.parametrize("fmt, fragment", [
    (Impostor(), "the name 'openai-chat' of format 'openai-chat' is taken"),
    (TakesToolUse(), "claims calls of type 'tool_use', which format 'anthropic' reads"),
])
def test_a_conflict_keeps_the_first_owner(fmt: ProviderFormat, fragment: str) -> None:
    with capture_logs() as logs:
        reg = ToolRegistry(plugins=[_plugin(fmt)])
    try:
        assert reg.tool_choice("auto", "openai-chat") == "auto"
        assert reg.parse_tool_calls([{"type": "tool_use", "id": "t", "name": "n",
                                      "input": {}}])[0].format == "anthropic"
    finally:
        reg.close()
    conflicts = [e for e in logs if e["event"] == "plugin.conflict"]
    assert len(conflicts) == 1 and fragment in conflicts[0]["error"]
    with pytest.raises(PluginError, match=fragment):
        ToolRegistry(plugins=[_plugin(fmt)], strict_plugins=True)


@pytest.mark.parametrize("returned, fragment", [
    (CohereV1, "returned the class CohereV1; return an instance (CohereV1())"),
    ("cohere-v1", "'cohere-v1' is not a toolregistry ProviderFormat"),
    (NoInverse(), "emits tool definitions but has no read_definition"),
])
def test_a_bad_format_marks_the_plugin_broken(returned: Any, fragment: str) -> None:
    plugin = _plugin(returned)
    reg = ToolRegistry(plugins=[plugin])
    try:
        (record,) = [r for r in reg.plugins.report() if r["name"] == "Plugin"]
        assert record["status"] == "broken"
        assert fragment in record["error"] and "provider_formats()" in record["error"]
        assert reg.formats.names() == BUILTIN.names()
    finally:
        reg.close()


def test_a_format_must_offer_something() -> None:
    class Empty(ProviderFormat):
        name = "empty"

    with pytest.raises(TypeError, match="overrides none of"):
        FormatTable([Empty()])


# --- what every built-in format keeps ---------------------------------------------------------

# Where the calls are in the message a format writes to echo them (the first of its answer
# messages): each format that both reads calls and writes messages must read its own echo back.
ECHOED_CALLS: dict[str, Any] = {
    "openai-chat": lambda messages: messages[0]["tool_calls"],
    "openai-responses": lambda messages: [m for m in messages if m["type"] == "function_call"],
    "anthropic": lambda messages: messages[0]["content"],
    "gemini": lambda messages: messages[0]["parts"],
    "bedrock-converse": lambda messages: messages[0]["content"],
}


def test_every_format_that_reads_and_answers_is_in_the_round_trip() -> None:
    both = set(BUILTIN.names("calls")) & set(BUILTIN.names("messages"))
    assert both == set(ECHOED_CALLS)


@pytest.mark.parametrize("api_format", sorted(ECHOED_CALLS))
def test_a_format_reads_back_the_calls_it_echoes(registry: ToolRegistry, api_format: str) -> None:
    @registry.register
    def add(a: int, b: int) -> int:
        return a + b

    calls = [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "c1"},
             {"name": "add", "arguments": {"a": 3, "b": 4}, "id": "c2"}]
    results = registry.execute_tool_calls(calls)
    messages = registry.build_tool_call_messages(calls, results, api_format=api_format)
    echoed = registry.parse_tool_calls(ECHOED_CALLS[api_format](messages))
    assert [(c.format, c.name, c.id, c.arguments) for c in echoed] == [
        (api_format, "add", "c1", {"a": 1, "b": 2}), (api_format, "add", "c2", {"a": 3, "b": 4})]
    again = registry.execute_tool_calls(ECHOED_CALLS[api_format](messages))
    assert [r.value for r in again] == [3, 7]


@pytest.mark.parametrize("api_format", BUILTIN.names("messages"))
def test_no_answers_no_messages(registry: ToolRegistry, api_format: str) -> None:
    assert registry.build_tool_call_messages([], [], api_format=api_format) == []


@pytest.mark.parametrize("api_format", BUILTIN.names("tool_choice"))
def test_tool_choice_values_are_fresh(api_format: str) -> None:
    fmt = BUILTIN.get(api_format)
    modes: tuple[ChoiceMode, ...] = ("auto", "required", "tool")
    for mode in modes:  # a caller may edit what it got: the next caller must not see that
        first, second = fmt.tool_choice(mode, "add"), fmt.tool_choice(mode, "add")
        assert first == second
        assert first is not second or not isinstance(first, (dict, list)), (api_format, mode)


# --- docs/formats.md ---------------------------------------------------------------------------

def _format_rows(page: str) -> dict[str, list[str]]:
    """The cells of the rows of ``docs/<page>`` whose first cell starts with a format name."""
    rows: dict[str, list[str]] = {}
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells and (m := re.match(r"`([a-z-]+)`", cells[0])) and m[1] in BUILTIN:
            rows.setdefault(m[1], cells)
    return rows


def test_the_formats_table_of_the_docs_is_the_format_table() -> None:
    rows = _format_rows("formats.md")
    assert list(rows) == [fmt.name for fmt in BUILTIN]
    features = ("schemas", "calls", "messages", "tool_choice")
    for fmt in BUILTIN:
        first, module, *offers = rows[fmt.name]
        module_file = type(fmt).__module__.removeprefix("toolregistry.").replace(".", "/")
        assert module == f"`{module_file}.py`", fmt.name
        for alias in re.findall(r"`([^`]+)`", first)[1:]:
            assert BUILTIN.get(alias) is fmt, (fmt.name, alias)
        for feature, cell in zip(features, offers, strict=True):
            assert (feature in fmt.features) == (not cell.startswith("–")), (fmt.name, feature)


@pytest.mark.parametrize("page, feature", [
    ("tools.md", "schemas"), ("execution.md", "calls"), ("execution.md", "messages"),
    ("prompt.md", "tool_choice")])
def test_every_format_has_its_row_where_the_docs_list_formats(page: str, feature: str) -> None:
    missing = set(BUILTIN.names(feature)) - set(_format_rows(page))  # type: ignore[arg-type]
    assert not missing, f"docs/{page}: no row for the {feature} of {sorted(missing)}"


def test_the_docs_snippets_run() -> None:
    namespace: dict[str, Any] = {"__name__": "docs_formats"}
    snippets = [code for file, lang, code in _blocks() if file is None and lang == "python"]
    assert snippets
    for code in snippets:
        exec(compile(code, "formats.md", "exec"), namespace)


def test_the_docs_plugin_is_a_real_distribution(tmp_path: Path) -> None:
    files = {file: code for file, _, code in _blocks() if file is not None}
    assert set(files) == {"src/toolregistry_ollama/__init__.py", "pyproject.toml", "use.py"}
    dist = tmp_path / "toolregistry-ollama"
    for name in ("src/toolregistry_ollama/__init__.py", "pyproject.toml"):
        (dist / name).parent.mkdir(parents=True, exist_ok=True)
        (dist / name).write_text(files[name], encoding="utf-8")
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(dist)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), *map(str, wheels.glob("*.whl"))], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    env["PYTHONPATH"] = str(site)

    def run(*args: str) -> str:
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    plugins = run("-c", "import sys; from toolregistry.cli import main; sys.exit(main(['plugins']))")
    report = {r["name"]: r for r in json.loads(plugins)}
    assert report["ollama"]["status"] == "loaded"
    assert report["ollama"]["hooks"] == ["provider_formats"]
    (tmp_path / "use.py").write_text(files["use.py"], encoding="utf-8")
    run("use.py")
