"""The common source options (defer, tags, include / exclude, namespace) on every kind: a real
MCP server over stdio, the demo OpenAPI service, LangChain tools, all from one configuration."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from toolregistry import ToolRegistry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

LC_TOOLS = '''
from langchain_core.tools import tool


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def divide(a: int, b: int) -> float:
    """Divide two integers."""
    return a / b


TOOLS = [multiply, divide]
'''


def test_common_options_on_mcp_openapi_and_langchain_sources(tmp_path: Path, api_url: str,
                                                             ) -> None:
    (tmp_path / "lc_tools_mod.py").write_text(LC_TOOLS, encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text(textwrap.dedent(f"""
        [[tool.toolregistry.sources]]
        kind = "mcp"
        server = {{ command = "{sys.executable}", args = ["{EXAMPLES / 'demo_mcp_server.py'}"] }}
        namespace = "notes"
        defer = true
        tags = ["notes"]
        exclude = ["write_*"]

        [[tool.toolregistry.sources]]
        kind = "openapi"
        spec = "{EXAMPLES / 'demo_api.yaml'}"
        base_url = "{api_url}"
        namespace = "pets"
        include = ["*Pet*"]
        exclude = "createPet"
        tags = ["read_only", "pets"]
        defer = true

        [[tool.toolregistry.sources]]
        kind = "langchain"
        target = "lc_tools_mod:TOOLS"
        include = "mult*"
        defer = true
        tags = "math"
    """), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        with ToolRegistry.from_config(config) as reg:
            # the spool plugin's reader, registered on the way, is not a source's tool
            names = [n for n in reg.list_tools() if n != "read_tool_output"]
            assert sorted(names) == ["multiply", "notes-read_note", "pets-getPet",
                                     "pets-listPets"]
            for name in names:
                tool = reg.get_tool(name)
                assert tool is not None and tool.metadata.defer, name
            shown = [s["function"]["name"] for s in reg.get_schemas(include_deferred=False)]
            assert not set(shown) & set(names)
            note = reg.get_tool("notes-read_note")
            assert note is not None and "notes" in note.metadata.custom_tags
            pet = reg.get_tool("pets-getPet")
            assert pet is not None and "pets" in pet.metadata.custom_tags
            assert "read_only" in {str(t) for t in pet.metadata.tags}
            assert reg.invoke("multiply", {"a": 6, "b": 7}).text == "42"
            # a tool the server adds later gets them too (the source keeps them)
            import toolregistry_mcp

            [source] = toolregistry_mcp.sources(reg)
            assert source.common is not None and source.common.defer
            assert source.common.tags == ("notes",)
            assert reg.invoke("notes-read_note", {"title": "x"}).outcome in ("ok", "remote")
    finally:
        sys.path.remove(str(tmp_path))
