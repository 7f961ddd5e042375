"""A registry served over MCP, and loaded back with register_from_mcp (the round trip)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import Tool, ToolRegistry

SERVED = textwrap.dedent('''
    import sys
    from typing import Literal

    from toolregistry import Image, Tool, ToolRegistry
    from toolregistry_mcp import serve

    PNG = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")

    registry = ToolRegistry(name="served")

    @registry.register
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        """Get the current weather for a city.

        Args:
            city: City name, e.g. "Tokyo".
            unit: Temperature unit.
        """
        return f"{city}: 21 degrees {unit}"

    @registry.register
    def photo() -> tuple:
        """A photo with a caption."""
        return ("a pixel", Image.from_bytes(PNG, "image/png"))

    @registry.register
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    @registry.register
    def grow() -> str:
        """Register one more tool."""
        def late(x: int) -> int:
            """Arrived late."""
            return x * 2
        registry.register(late)
        return "grown"

    if len(sys.argv) > 1 and sys.argv[1] != "--http":
        registry.register_from_mcp(sys.argv[1], namespace="inner", include=["echo", "image"])

    if sys.argv[1:2] == ["--http"]:
        serve(registry, "streamable-http", port=int(sys.argv[2]))
    else:
        serve(registry)
''')

SERVER = Path(__file__).parent / "servers" / "demo_server.py"


@pytest.fixture
def served_script(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    script = tmp_path / "served.py"
    script.write_text(SERVED, encoding="utf-8")
    return script


def test_round_trip_over_stdio(registry: ToolRegistry, served_script: Path) -> None:
    tools = registry.register_from_mcp(
        {"command": sys.executable, "args": [str(served_script)],
         "cwd": str(served_script.parent)}, namespace=True)
    names = sorted(t.name for t in tools)
    assert names == ["served-explode", "served-get_weather", "served-grow", "served-photo"]
    weather = registry["served-get_weather"]
    assert weather.description.startswith("Get the current weather for a city.")
    assert weather.parameters["properties"]["unit"]["enum"] == ["c", "f"]
    assert weather.parameters["required"] == ["city"]
    result = registry.invoke("served-get_weather", {"city": "Tokyo", "unit": "f"})
    assert result.content == "Tokyo: 21 degrees f"
    # Invalid arguments are refused on this side already; the far side validates too.
    assert registry.invoke("served-get_weather", {"city": "Oslo", "unit": "k"}).error_kind \
        == "invalid_arguments"
    photo = registry.invoke("served-photo", {})
    assert photo.ok and photo.text == "a pixel" and photo.images[0].media_type == "image/png"
    boom = registry.invoke("served-explode", {})
    assert boom.is_error and boom.error_kind == "remote" and "kaboom" in boom.text
    # A tool registered on the far side reaches us through notifications/tools/list_changed.
    assert registry.invoke("served-grow", {}).content == "grown"
    deadline = time.monotonic() + 10
    while "served-late" not in registry:
        assert time.monotonic() < deadline, "list_changed did not arrive"
        time.sleep(0.02)
    assert registry.invoke("served-late", {"x": 21}).content == "42"


def test_round_trip_through_a_served_mcp_source(registry: ToolRegistry,
                                                served_script: Path) -> None:
    # Served registry holding an MCP source itself: every source kind is served.
    registry.register_from_mcp(
        {"command": sys.executable, "args": [str(served_script), str(SERVER)],
         "cwd": str(served_script.parent)}, namespace="outer", connect_timeout=60)
    assert registry.invoke("outer-inner-echo", {"text": "deep"}).content == "deep"
    image = registry.invoke("outer-inner-image", {})
    assert image.ok and image.images


def _python_source_config(folder: Path, target: str) -> Path:
    """A ``pyproject.toml`` in ``folder`` whose one source is the Python ``target``."""
    config = folder / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n[[tool.toolregistry.sources]]\n"
                      f'kind = "python"\ntarget = "{target}"\n', encoding="utf-8")
    return config


@pytest.fixture
def http_served(tmp_path: Path, procs: Any) -> Iterator[str]:
    module = tmp_path / "served_tools.py"
    module.write_text(textwrap.dedent('''
        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()
    '''), encoding="utf-8")
    config = _python_source_config(tmp_path, "served_tools:shout")
    port = procs.free_port()
    with procs.listening(
        [sys.executable, "-m", "toolregistry_mcp", "serve", "--transport", "streamable-http",
         "--port", str(port), "--config", str(config)], port, "/mcp",
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        stderr=subprocess.PIPE,
    ) as url:
        yield url


def test_round_trip_over_streamable_http(registry: ToolRegistry, http_served: str) -> None:
    tools = registry.register_from_mcp(http_served)
    assert [t.name for t in tools] == ["shout"]
    assert registry.invoke("shout", {"text": "quiet"}).content == "QUIET"


def test_streamable_http_advertises_and_sends_list_changed(registry: ToolRegistry,
                                                          served_script: Path,
                                                          procs: Any) -> None:
    # Issue 15.5: HTTP advertised tools.listChanged = false while sending the notifications;
    # a client that honours capabilities would ignore them.
    from toolregistry_mcp import sources

    port = procs.free_port()
    with procs.listening([sys.executable, str(served_script), "--http", str(port)], port,
                         "/mcp", cwd=served_script.parent) as url:
        registry.register_from_mcp(url, namespace="h")
        capabilities = sources(registry)[0].client.capabilities
        assert capabilities is not None and capabilities.tools is not None
        assert capabilities.tools.list_changed is True
        assert registry.invoke("h-grow", {}).content == "grown"
        deadline = time.monotonic() + 10
        while "h-late" not in registry:
            assert time.monotonic() < deadline, "list_changed did not arrive over HTTP"
            time.sleep(0.02)
        assert registry.invoke("h-late", {"x": 2}).content == "4"
        registry.close()


def test_stdio_advertises_list_changed(registry: ToolRegistry, served_script: Path) -> None:
    from toolregistry_mcp import sources

    registry.register_from_mcp({"command": sys.executable, "args": [str(served_script)],
                                "cwd": str(served_script.parent)}, namespace="s")
    capabilities = sources(registry)[0].client.capabilities
    assert capabilities is not None and capabilities.tools is not None
    assert capabilities.tools.list_changed is True


def test_toolregistry_serve_cli(registry: ToolRegistry, tmp_path: Path) -> None:
    (tmp_path / "served_tools.py").write_text(
        "def shout(text: str) -> str:\n    \"\"\"Upper-case the text.\"\"\"\n"
        "    return text.upper()\n", encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry]\n[[tool.toolregistry.sources]]\n'
                      'kind = "python"\ntarget = "served_tools:shout"\n', encoding="utf-8")
    registry.register_from_mcp(
        {"command": sys.executable,
         "args": ["-m", "toolregistry.cli", "--config", str(config), "serve"],
         "cwd": str(tmp_path), "env": {"PYTHONPATH": str(tmp_path)}}, namespace="cli")
    assert registry.invoke("cli-shout", {"text": "via cli"}).content == "VIA CLI"


def test_build_server_in_process() -> None:
    import anyio
    from mcp import Client

    from toolregistry_mcp import build_server

    reg = ToolRegistry(config=Path(__file__).parent / "servers" / "empty.toml")

    def double(x: int) -> dict[str, int]:
        """Double a number."""
        return {"value": x * 2}

    reg.register(Tool.from_function(double))

    async def main() -> Any:
        async with Client(build_server(reg), mode="legacy") as client:
            listed = await client.list_tools()
            called = await client.call_tool("double", {"x": 4})
            invalid = await client.call_tool("double", {"x": "four"})
            unknown = await client.call_tool("nope", {})
            return listed, called, invalid, unknown

    listed, called, invalid, unknown = anyio.run(main)
    assert [t.name for t in listed.tools] == ["double"]
    assert listed.tools[0].input_schema["properties"]["x"]["type"] == "integer"
    assert json.loads(called.content[0].text) == {"value": 8}
    assert called.structured_content == {"value": 8}
    assert invalid.is_error and "x" in invalid.content[0].text
    assert unknown.is_error and "nope" in unknown.content[0].text
    reg.close()


def test_serving_freezes_the_heap_built_before_and_gives_it_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What was built before serving started is out of the collector's sight while a server
    runs (full collections under load skip it), and given back when the last server stops --
    servers side by side included, and a server that fails."""
    import gc

    from toolregistry_mcp import _heap
    from toolregistry_mcp._heap import frozen_heap

    assert gc.get_freeze_count() == 0
    with frozen_heap():  # an application's process: left alone
        assert gc.get_freeze_count() == 0
    monkeypatch.setattr(_heap, "_owned", True)  # as the CLI's own_process() does
    # (Frozen objects still die by reference counting: the count only tells frozen or not.)
    with frozen_heap():
        assert gc.get_freeze_count() > 1000  # the modules, the registry, ...
        with frozen_heap():
            assert gc.get_freeze_count() > 1000
        assert gc.get_freeze_count() > 1000  # another server still runs
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the server failed")
    assert gc.get_freeze_count() == 0


def test_serve_leaves_the_applications_collector_alone_and_the_cli_freezes(
        procs: Any, tmp_path: Path) -> None:
    """``serve()`` called by an application does not freeze its heap (a library leaves the
    interpreter as it found it); ``python -m toolregistry_mcp serve``, whose process the CLI
    owns, serves inside ``frozen_heap``."""
    (tmp_path / "frozen_tools.py").write_text(textwrap.dedent('''
        import gc

        def frozen() -> int:
            """How many objects the collector does not walk."""
            return gc.get_freeze_count()
    '''))
    config = _python_source_config(tmp_path, "frozen_tools:frozen")
    script = tmp_path / "frozen_server.py"
    script.write_text(textwrap.dedent("""
        import sys

        from toolregistry import ToolRegistry
        from toolregistry_mcp import serve

        from frozen_tools import frozen

        registry = ToolRegistry()
        registry.register(frozen)
        serve(registry, "streamable-http", port=int(sys.argv[1]))
    """))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    counts = []
    for command in ([str(script)], ["-m", "toolregistry_mcp", "serve", "--transport",
                                    "streamable-http", "--config", str(config), "--port"]):
        port = procs.free_port()
        with procs.listening([sys.executable, *command, str(port)], port, "/mcp",
                             cwd=tmp_path, env=env) as url, \
                ToolRegistry(load_plugins=["mcp"]) as client:
            client.register_from_mcp(url)
            result = client.invoke("frozen", {})
            assert result.ok, result.content
            counts.append(int(result.value))
    assert counts[0] == 0
    assert counts[1] > 1000
