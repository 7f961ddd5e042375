"""Content types both ways: an MCP server's audio, embedded resources, resource links and
structuredContent become the kernel's parts, and a served registry's parts become the MCP
content blocks (round trip through a real server over stdio and streamable HTTP)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from toolregistry import Audio, EmbeddedResource, Image, ResourceLink, ToolRegistry

CONTENT_SERVER = Path(__file__).parent / "servers" / "content_server.py"
sys.path.insert(0, str(CONTENT_SERVER.parent))
from content_server import PDF, PNG, WAV, WEATHER  # type: ignore[import-not-found]  # noqa: E402

STDIO = {"command": sys.executable, "args": [str(CONTENT_SERVER)]}


def _parts(registry: ToolRegistry, name: str) -> list[dict[str, Any]]:
    content = registry.invoke(name, {}).content
    assert isinstance(content, list), content
    return content


def _check_results(registry: ToolRegistry, prefix: str = "") -> None:
    audio = registry.invoke(f"{prefix}audio", {})
    assert audio.ok and audio.text == ""
    (clip,) = audio.audio
    assert isinstance(clip, Audio) and clip.read_bytes() == WAV
    assert clip.media_type == "audio/wav"

    (part,) = _parts(registry, f"{prefix}text_resource")
    assert part["type"] == "resource"
    assert part["resource"] == EmbeddedResource.from_text("file:///notes.txt",
                                                          "remember the milk", "text/plain")
    (part,) = _parts(registry, f"{prefix}blob_resource")
    assert part["resource"] == EmbeddedResource.from_bytes("file:///report.pdf", PDF,
                                                           "application/pdf")
    (part,) = _parts(registry, f"{prefix}link")
    assert part["resource_link"] == ResourceLink("file:///big.csv", "big.csv", "a large file",
                                                 "text/csv")

    structured = registry.invoke(f"{prefix}structured", {})
    assert structured.structured_content == WEATHER and json.loads(structured.text) == WEATHER
    only = registry.invoke(f"{prefix}structured_only", {})
    assert only.structured_content == WEATHER and json.loads(only.text) == WEATHER

    everything = registry.invoke(f"{prefix}everything", {})
    assert everything.structured_content == WEATHER
    assert [p["type"] for p in _parts(registry, f"{prefix}everything")] == [
        "text", "image", "audio", "resource", "resource", "resource_link"]
    assert isinstance(everything.images[0], Image) and everything.images[0].read_bytes() == PNG


def test_a_servers_content_types_become_parts(registry: ToolRegistry) -> None:
    registry.register_from_mcp(STDIO)
    _check_results(registry)
    # every provider gets each part its way or a text saying what was left out
    calls = [{"id": "c0", "type": "tool_use", "name": "everything", "input": {}}]
    _, user = registry.build_tool_call_messages(
        calls, registry.execute_tool_calls(calls), api_format="anthropic")
    blocks = user["content"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "document", "document"]
    assert "audio (audio/wav" in blocks[0]["text"] and "big.csv" in blocks[0]["text"]


def test_over_streamable_http(registry: ToolRegistry, procs: Any) -> None:
    port = procs.free_port()
    with procs.listening([sys.executable, str(CONTENT_SERVER), "--http", str(port)], port,
                   "/mcp") as url:
        registry.register_from_mcp(url, namespace="c")
        _check_results(registry, "c-")
        registry.close()


SERVED = textwrap.dedent('''
    import sys

    sys.path.insert(0, sys.argv[1])
    from content_server import PDF, PNG, WAV, WEATHER

    import attrs
    from toolregistry import (Audio, EmbeddedResource, Image, ResourceLink, Tool,
                              ToolRegistry)
    from toolregistry_mcp import serve

    registry = ToolRegistry(name="served")

    @registry.register
    def audio() -> Audio:
        """A clip."""
        return Audio.from_bytes(WAV)

    @registry.register
    def text_resource() -> EmbeddedResource:
        """Notes."""
        return EmbeddedResource.from_text("file:///notes.txt", "remember the milk",
                                          "text/plain")

    @registry.register
    def blob_resource() -> EmbeddedResource:
        """A PDF."""
        return EmbeddedResource.from_bytes("file:///report.pdf", PDF, "application/pdf")

    @registry.register
    def link() -> ResourceLink:
        """A link."""
        return ResourceLink("file:///big.csv", "big.csv", "a large file", "text/csv")

    def structured() -> dict:
        return dict(WEATHER)

    registry.register(attrs.evolve(Tool.from_function(structured), output_schema={
        "type": "object", "properties": {"city": {"type": "string"}}}))
    registry.register(attrs.evolve(Tool.from_function(structured, name="structured_only"),
                                   output_schema={"type": "object"}))

    @registry.register
    def everything():
        """All of it."""
        from toolregistry import ToolResult
        return ToolResult(None, "", [
            {"type": "text", "text": "all of it"},
            {"type": "image", "image": Image.from_bytes(PNG)},
            {"type": "audio", "audio": Audio.from_bytes(WAV)},
            {"type": "resource", "resource": EmbeddedResource.from_text(
                "file:///notes.txt", "remember the milk")},
            {"type": "resource", "resource": EmbeddedResource.from_bytes(
                "file:///report.pdf", PDF, "application/pdf")},
            {"type": "resource_link", "resource_link": ResourceLink("file:///big.csv")},
        ], structured_content=dict(WEATHER))

    serve(registry)
''')


def test_served_parts_become_mcp_content_blocks(registry: ToolRegistry, tmp_path: Path
                                                ) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    script = tmp_path / "served.py"
    script.write_text(SERVED, encoding="utf-8")
    registry.register_from_mcp({"command": sys.executable,
                                "args": [str(script), str(CONTENT_SERVER.parent)],
                                "cwd": str(tmp_path)})
    _check_results(registry)
    listed = {t["name"]: t for t in registry.get_schemas(api_format="mcp")}
    assert "outputSchema" in listed["structured"]


@pytest.mark.parametrize("name", ["audio", "everything"])
def test_results_convert_without_a_server(name: str) -> None:
    # the conversion both ways on the SDK's own types: what came in goes out the same
    import mcp_types as types
    from content_server import RESULTS

    from toolregistry_mcp._convert import from_call_result, to_call_result

    value = from_call_result(RESULTS[name], server="s", tool=name)
    registry = ToolRegistry()
    registry.register(lambda: value, name=name)
    back = to_call_result(registry.invoke(name, {}))
    assert types.CallToolResult.model_validate(back.model_dump()) == RESULTS[name]


@pytest.mark.npm
def test_the_everything_servers_links_resources_and_structured_content(
        registry: ToolRegistry, everything_http: str) -> None:
    registry.register_from_mcp(everything_http, namespace="e")
    links = _parts(registry, "e-get-resource-links")
    assert [p["type"] for p in links] == ["text", "resource_link", "resource_link",
                                          "resource_link"]
    assert all(p["resource_link"].uri.startswith("demo://resource/") for p in links[1:])
    ref = _parts(registry, "e-get-resource-reference")  # its defaults: text resource 1
    (resource,) = [p["resource"] for p in ref if p["type"] == "resource"]
    assert resource.uri == "demo://resource/dynamic/text/1" and resource.text
    weather = registry.invoke("e-get-structured-content", {"location": "New York"})
    assert weather.ok and "temperature" in (weather.structured_content or {})
