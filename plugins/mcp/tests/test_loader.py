"""register_from_mcp against our own server: schemas, metadata, results, namespaces."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

import toolregistry_mcp
from toolregistry import Image, ToolRegistry
from toolregistry.errors import ToolNameCollisionError
from toolregistry.formats import API_FORMATS

SERVER = Path(__file__).parent / "servers" / "demo_server.py"
COMPLEX = {
    "type": "object",
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "origin": {"$ref": "#/$defs/Point"},
        "mode": {"type": "string", "enum": ["fast", "exact"]},
        "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["origin", "mode"],
    "additionalProperties": False,
}



def _mcp_tools(registry: ToolRegistry) -> list[str]:
    """The registry's MCP tools (other plugins, e.g. spool's reader, may add their own)."""
    return sorted(n for n in registry.list_tools() if registry[n].provenance.kind == "mcp")

def test_script_path_registers_schema_first_tools(registry: ToolRegistry) -> None:
    tools = registry.register_from_mcp(str(SERVER))
    names = {t.name for t in tools}
    assert {"echo", "add", "plot", "image", "fail", "slow"} <= names
    plot = registry["plot"]
    assert plot.parameters == COMPLEX  # kept intact: $defs, $ref, anyOf, enum, additionalProperties
    assert plot.metadata.destructive_hint is True
    echo = registry["echo"]
    assert echo.metadata.title == "Echo"
    assert echo.metadata.read_only_hint is True
    assert echo.metadata.idempotent_hint is True
    assert echo.metadata.open_world_hint is False
    assert echo.provenance.kind == "mcp"
    assert echo.provenance.original_name == "echo"
    assert echo.provenance.plugin == "mcp"
    assert echo.provenance.detail == "demo_server.py"
    add = registry["add"]
    assert add.metadata.title == "Adder"
    assert add.output_schema == {"type": "object", "properties": {"sum": {"type": "integer"}},
                                 "required": ["sum"]}


def test_schemas_valid_in_every_api_format(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec())
    mcp = {s["name"]: s for s in registry.get_schemas(api_format="mcp")}
    assert mcp["plot"]["inputSchema"] == COMPLEX
    assert mcp["echo"]["annotations"]["readOnlyHint"] is True
    assert mcp["add"]["outputSchema"]["required"] == ["sum"]
    for fmt in API_FORMATS:
        schemas = registry.get_schemas(api_format=fmt)
        assert len(schemas) == len(registry)
        json.dumps(schemas)


def test_calls_and_result_shapes(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec())
    assert registry.invoke("echo", {"text": "héllo"}).content == "héllo"
    added = registry.invoke("add", {"a": 2, "b": 3})
    assert added.ok and json.loads(added.text) == {"sum": 5}
    image = registry.invoke("image", {})
    assert image.ok and image.text == "a tiny image"
    assert len(image.images) == 1 and isinstance(image.images[0], Image)
    assert image.images[0].media_type == "image/png"
    assert image.images[0].read_bytes().startswith(b"\x89PNG")  # type: ignore[union-attr]
    mixed = registry.invoke("mixed", {})
    assert isinstance(mixed.content, list) and mixed.audio[0].media_type == "audio/wav"
    assert [p["type"] for p in mixed.content] == ["audio", "resource", "resource_link"]
    assert mixed.content[1]["resource"].text == "remember the milk"
    assert mixed.content[2]["resource_link"].uri == "file:///big.csv"
    structured = registry.invoke("structured_only", {})
    assert json.loads(structured.text) == {"ok": True, "n": 3}
    plot = registry.invoke("plot", {"origin": {"x": 1, "y": 2}, "mode": "fast", "label": None})
    assert json.loads(plot.text) == {"label": None, "mode": "fast", "origin": {"x": 1, "y": 2}}


def test_is_error_becomes_remote_error_result(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec())
    result = registry.invoke("fail", {})
    assert result.is_error and result.error_kind == "remote"
    assert "the database is on fire" in result.text
    assert "'fail'" in result.text


def test_arguments_validated_before_sending(registry: ToolRegistry, spec: Any,
                                            marker: Path) -> None:
    registry.register_from_mcp(spec("--marker", str(marker)))
    # The server would accept n=-1; the registry refuses it against the inputSchema.
    bad = registry.invoke("lax", {"n": -1})
    assert bad.is_error and bad.error_kind == "invalid_arguments"
    extra = registry.invoke("plot", {"origin": {"x": 1, "y": 2, "z": 3}, "mode": "fast"})
    assert extra.is_error and extra.error_kind == "invalid_arguments"
    enum = registry.invoke("plot", {"origin": {"x": 1, "y": 2}, "mode": "slow"})
    assert enum.is_error and enum.error_kind == "invalid_arguments"
    assert registry.invoke("lax", {"n": 4}).content == "got 4"


def test_namespaces(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), namespace="t", include=["echo", "add"])
    assert _mcp_tools(registry) == ["t-add", "t-echo"]
    registry.register_from_mcp(spec(), namespace=True, include="ec*")
    assert "test-server-echo" in registry
    assert registry.invoke("test-server-echo", {"text": "x"}).content == "x"
    assert registry["t-echo"].provenance.original_name == "echo"


def test_collision_is_an_error_with_advice(registry: ToolRegistry, spec: Any,
                                           children_gone: Any) -> None:
    registry.register_from_mcp(spec(), include=["echo"])
    with pytest.raises(ToolNameCollisionError) as info:
        registry.register_from_mcp(spec("--name", "other"))
    message = str(info.value)
    assert "'echo'" in message and "namespace" in message and "replace=True" in message
    # All or nothing: the failed load registered nothing and its server was stopped.
    assert _mcp_tools(registry) == ["echo"]
    assert len(toolregistry_mcp.sources(registry)) == 1
    registry.register_from_mcp(spec(), include=["echo"], replace=True)
    assert registry.invoke("echo", {"text": "again"}).content == "again"


def test_include_exclude(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), exclude=["die", "slow", "big", "env", "mutate"],
                               timeout=300)
    assert "die" not in registry and "echo" in registry
    # The registry's own deadline never cuts a call before the MCP limit does (the cap on a
    # call that keeps reporting progress: ten times the timeout).
    assert registry["echo"].metadata.timeout == 3005


def test_async_loader_inside_running_loop(registry: ToolRegistry, spec: Any) -> None:
    async def main() -> None:
        tools = await registry.aregister_from_mcp(spec(), namespace="a")
        assert any(t.name == "a-echo" for t in tools)
        result = await registry.ainvoke("a-echo", {"text": "async"})
        assert result.content == "async"
        # The blocking API works inside a running loop too (it waits on the MCP thread).
        assert registry.invoke("a-echo", {"text": "sync-in-loop"}).content == "sync-in-loop"
        results = await asyncio.gather(*(registry.ainvoke("a-add", {"a": i, "b": 1})
                                         for i in range(20)))
        assert [json.loads(r.text)["sum"] for r in results] == [i + 1 for i in range(20)]

    asyncio.run(main())
    # The session outlives the event loop that created it.
    assert registry.invoke("a-echo", {"text": "after"}).content == "after"


def test_one_session_shared_by_threads(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec())
    pids: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(10):
                pids.append(registry.invoke("pid", {}).text)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(pids) == 80 and len(set(pids)) == 1


def test_non_persistent_opens_a_session_per_call(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), persistent=False, include=["pid"])
    first = registry.invoke("pid", {}).text
    second = registry.invoke("pid", {}).text
    assert first.isdigit() and second.isdigit() and first != second


def test_pagination(registry: ToolRegistry, spec: Any) -> None:
    tools = registry.register_from_mcp(spec("--tools", "50", "--page-size", "7"))
    assert len([t for t in tools if t.name.startswith("tool_")]) == 50  # over 8 pages
    assert registry.invoke("tool_049", {"x": 1}).content == "tool_049"


def test_list_changed_updates_registry_and_flags_changes(registry: ToolRegistry,
                                                         spec: Any) -> None:
    registry.register_from_mcp(spec(), namespace="s")
    original = registry["s-echo"].description
    events: list[Any] = []
    registry.on_change(events.append)
    with structlog.testing.capture_logs() as logs:
        assert registry.invoke("s-mutate", {}).content == "mutated"
        deadline = time.monotonic() + 10
        while "s-newcomer" not in registry or not registry["s-echo"].metadata.extra.get(
                "changed_since_registration"):
            assert time.monotonic() < deadline, "tools/list_changed was not applied"
            time.sleep(0.02)
    echo = registry["s-echo"]
    # What the application accepted stays; the change waits for review.
    assert echo.description == original
    assert "IGNORE PREVIOUS INSTRUCTIONS" in echo.metadata.extra["pending_description"]
    changed = [e for e in logs if e["event"] == "mcp.tool_changed"]
    assert changed and changed[0]["tool"] == "s-echo" and changed[0]["description_changed"]
    assert any(e.kind == "register" and "s-newcomer" in e.names for e in events)
    assert registry.invoke("s-newcomer", {}).content == "newcomer"
    # The server takes it back: the newcomer is unregistered, the flag cleared.
    assert registry.invoke("s-unmutate", {}).content == "unmutated"
    deadline = time.monotonic() + 10
    while "s-newcomer" in registry or registry["s-echo"].metadata.extra.get(
            "changed_since_registration"):
        assert time.monotonic() < deadline, "the revert was not applied"
        time.sleep(0.02)
    assert any(e.kind == "unregister" and "s-newcomer" in e.names for e in events)
    # Changed again, and this time accepted explicitly.
    registry.invoke("s-mutate", {})
    deadline = time.monotonic() + 10
    while "s-newcomer" not in registry:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    report = toolregistry_mcp.refresh(registry, accept_changes=True)
    assert report["accepted"] == ["s-echo"]
    assert "IGNORE PREVIOUS" in registry["s-echo"].description


def test_refresh_without_changes(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec())
    assert toolregistry_mcp.refresh(registry) == {"added": [], "removed": [], "changed": [],
                                                   "accepted": [], "skipped": []}


def test_minimal_environment(registry: ToolRegistry, spec: Any,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    registry.register_from_mcp(spec(env={"SERVER_OPTION": "1"}), include=["env"])
    names = json.loads(registry.invoke("env", {}).text)
    assert "OPENAI_API_KEY" not in names and "AWS_SECRET_ACCESS_KEY" not in names
    assert "SERVER_OPTION" in names and "PATH" in names


def test_registry_close_ends_children(tmp_path: Path, spec: Any, children_gone: Any) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n", encoding="utf-8")
    with ToolRegistry(config=config) as reg:
        reg.register_from_mcp(spec(), namespace="a")
        reg.register_from_mcp(spec(), namespace="b")
        assert reg.invoke("a-echo", {"text": "1"}).ok
    children_gone()


def test_config_source(tmp_path: Path, children_gone: Any) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.toolregistry]\n"
        "[[tool.toolregistry.sources]]\n"
        "kind = 'mcp'\n"
        f"server = {{ command = {json.dumps(__import__('sys').executable)}, "
        f"args = [{json.dumps(str(SERVER))}] }}\n"
        "namespace = 'cfg'\n"
        "include = ['echo']\n"
        "[tool.toolregistry.plugins.mcp]\n"
        "timeout = 5\n"
        "max-result-chars = 1000\n",
        encoding="utf-8",
    )
    with ToolRegistry.from_config(config) as reg:
        assert _mcp_tools(reg) == ["cfg-echo"]
        assert reg.invoke("cfg-echo", {"text": "from config"}).content == "from config"
    children_gone()


def test_client_on_its_own(spec: Any, children_gone: Any) -> None:
    with toolregistry_mcp.MCPClient(spec()) as client:
        tools = client.list_tools()
        assert "echo" in [t.name for t in tools]
        assert client.server_info is not None and client.server_info.name == "test-server"
        result = client.call_tool("echo", {"text": "raw"})
        assert result.content[0].text == "raw"  # type: ignore[union-attr]
    children_gone()


def test_close_during_a_call(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), include=["slow"])
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(
        registry.invoke("slow", {"seconds": 30})))
    worker.start()
    time.sleep(1.0)
    started = time.monotonic()
    registry.close()
    worker.join(15)
    assert time.monotonic() - started < 15
    assert results and results[0].is_error
    assert "closed" in results[0].text


def test_client_shared_by_event_loops_and_threads(spec: Any, children_gone: Any) -> None:
    client = toolregistry_mcp.MCPClient(spec())

    async def pid() -> str:
        result = await client.acall_tool("pid")
        return result.content[0].text  # type: ignore[union-attr]

    first = asyncio.run(pid())
    second = asyncio.run(pid())  # another event loop, the same session
    from_thread: list[str] = []
    t = threading.Thread(target=lambda: from_thread.append(asyncio.run(pid())))
    t.start()
    t.join()
    assert first == second == from_thread[0]

    async def close() -> None:
        async with client:
            assert await pid() == first

    asyncio.run(close())
    assert client.closed
    children_gone()


def test_defer_and_tags_hold_for_tools_a_refresh_adds(registry: ToolRegistry,
                                                     spec: Any) -> None:
    added = registry.register_from_mcp(spec(), namespace="s", defer=True, tags=["remote"],
                                       exclude="s-unmutate")
    assert added and all(t.metadata.defer and "remote" in t.metadata.custom_tags for t in added)
    assert "s-unmutate" not in registry
    assert registry.invoke("s-mutate", {}).content == "mutated"
    deadline = time.monotonic() + 10
    while "s-newcomer" not in registry:
        assert time.monotonic() < deadline, "tools/list_changed was not applied"
        time.sleep(0.02)
    newcomer = registry["s-newcomer"]
    assert newcomer.metadata.defer and "remote" in newcomer.metadata.custom_tags
