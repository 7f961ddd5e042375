"""Every plugin installed together: the features meet on every integration path."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.formats import API_FORMATS, BUILTIN

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
@pytest.fixture
def full_registry(api_url: str) -> Iterator[ToolRegistry]:
    from langchain_core.tools import tool as lc_tool

    @lc_tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    reg = ToolRegistry(think_augment=True, tool_discovery=True, default_timeout=20)

    @reg.register
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"Sunny in {city}"

    reg.register_from_mcp(str(EXAMPLES / "demo_mcp_server.py"), namespace="notes")
    reg.register_from_openapi(str(EXAMPLES / "demo_api.yaml"), base_url=api_url,
                              namespace="pets")
    reg.register_from_langchain([multiply], namespace="lc")
    yield reg
    reg.close()


def _params(definition: dict[str, Any], fmt: str) -> dict[str, Any]:
    return BUILTIN.get(fmt).read_definition(definition).parameters or {}


@pytest.mark.parametrize("fmt", API_FORMATS)
def test_think_augment_reaches_every_source_and_meta_tool(full_registry: ToolRegistry,
                                                           fmt: str) -> None:
    schemas = full_registry.get_schemas(fmt)
    names = {BUILTIN.get(fmt).read_definition(d).name for d in schemas}
    assert {"get_weather", "notes-read_note", "pets-getPet", "lc-multiply",
            "discover_tools"} <= names
    for definition in schemas:
        props = _params(definition, fmt).get("properties", {})
        assert "toolcall_reason" in props, definition


def test_reason_is_stripped_before_every_kind_of_tool_runs(full_registry: ToolRegistry) -> None:
    reason = {"toolcall_reason": "testing"}
    calls = [
        {"id": "1", "type": "function", "function": {"name": "notes-read_note",
                                                      "arguments": json.dumps({"title": "welcome", **reason})}},
        {"id": "2", "type": "function", "function": {"name": "pets-getPet",
                                                      "arguments": json.dumps({"petId": 1, **reason})}},
        {"type": "tool_use", "id": "3", "name": "lc-multiply", "input": {"a": 2, "b": 4, **reason}},
        {"type": "function_call", "call_id": "4", "name": "discover_tools",
         "arguments": json.dumps({"query": "weather in a city", **reason})},
        {"function_call": {"name": "get_weather", "args": {"city": "Oslo", **reason}}},
    ]
    results = full_registry.execute_tool_calls(calls)
    assert [r.is_error for r in results] == [False] * 5, [r.text for r in results]
    assert all(r.reason == "testing" for r in results)
    assert results[0].text == "Hello from the MCP server."
    assert json.loads(results[1].text)["name"] == "Tama"
    assert results[2].text == "8.0"
    assert "get_weather" in results[3].text


def test_unknown_tool_suggestions_come_from_discovery(full_registry: ToolRegistry) -> None:
    result = full_registry.invoke("weather_lookup", {})
    assert result.error_kind == "unknown_tool"
    assert "get_weather" in result.text
    assert result.text.count(",") <= 2  # at most three names, never the catalogue


def test_mcp_and_openapi_tools_exported_to_langchain(full_registry: ToolRegistry) -> None:
    lc_tools = {t.name: t for t in full_registry.to_langchain(["notes-read_note", "pets-getPet"])}
    assert lc_tools["pets-getPet"].invoke({"petId": 2}) and "Pochi" in str(
        lc_tools["pets-getPet"].invoke({"petId": 2}))
    assert "Hello" in str(lc_tools["notes-read_note"].invoke({"title": "welcome"}))


def test_long_mcp_output_is_spooled(full_registry: ToolRegistry) -> None:
    full_registry.update_tool_metadata("notes-read_note", too_long_to_file=True)
    full_registry.invoke("notes-write_note", {"title": "big", "text": "word " * 60000})
    result = full_registry.invoke("notes-read_note", {"title": "big"})
    assert result.ok
    spool = result.metadata.get("spool")
    assert spool and spool["handle"]
    assert len(result.text) < 200000
    page = full_registry.invoke("read_tool_output", {"handle": spool["handle"], "limit": 1})
    assert page.ok and "word" in page.text


def test_the_main_job_runs_every_source() -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "main_job.py")], capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for plugin in ("think", "discovery", "mcp", "openapi", "langchain", "spool"):
        assert f"  {plugin:<10} loaded" in out
    assert "notes-read_note (openai-chat)         ok" in out
    assert "pets-getPet (openai-chat)             ok" in out
    assert "HTTP 404" in out
    assert "spooled: sp_" in out
    assert "8 of 14 calls succeeded" in out


def test_the_sources_example_of_docs_configuration_md(
        tmp_path: Path, api_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every source of the page's example loads, from the folder of its file: the python
    module, the MCP script and the OpenAPI spec (the demo's server and spec under the page's
    names), the variable expanded; think-augment and the spool table reach the registry."""
    import shutil

    from tests._docs import blocks, config_example
    from toolregistry_spool import SpoolSettings

    cfg = config_example(tmp_path)
    shutil.copy(EXAMPLES / "demo_mcp_server.py", tmp_path / "server.py")
    shutil.copy(EXAMPLES / "demo_api.yaml", tmp_path / "petstore.yaml")
    monkeypatch.setenv("PETSTORE_URL", api_url)
    monkeypatch.chdir(tmp_path)
    (run,) = [b for b in blocks("configuration.md", "python") if "from_config" in b]
    exec(compile(run, "configuration.md:from_config", "exec"), {"__name__": "docs"})
    listed, argument, file = capsys.readouterr().out.splitlines()
    assert "'notes-read_note'" in listed and "'listPets'" in listed
    assert (argument, file) == ("argument", f"[tool.toolregistry] in {cfg}")
    monkeypatch.chdir(tmp_path.parent)  # relative paths resolve against the file, not the cwd
    with ToolRegistry.from_config(cfg) as registry:
        names = registry.list_tools()
        assert {"calc-add", "notes-read_note", "listPets"} <= set(names), names
        assert registry.skipped_sources == []
        assert registry.settings.think_augment is True
        assert registry.invoke("listPets", {"limit": 1}).is_error is False
        assert registry.plugin_settings("spool", SpoolSettings).threshold_tokens == 8000


def test_plugin_errors_derive_from_the_kernel_base() -> None:
    from toolregistry.errors import ToolRegistryError
    from toolregistry_policy import ApprovalError
    from toolregistry_spool import SpoolError

    assert issubclass(ApprovalError, ToolRegistryError) and issubclass(ApprovalError, LookupError)
    assert issubclass(SpoolError, ToolRegistryError)
