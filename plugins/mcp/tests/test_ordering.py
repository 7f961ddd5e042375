"""Writes and reads of one server in one batch (issue 15.7): by default a call to a tool not
declared ``readOnlyHint: true`` runs in call order relative to the other calls of the same
server; read-only calls of that server run concurrently; other servers are not held up."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

ROUNDS = 10


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def _write_then_read(i: int) -> list[dict[str, Any]]:
    entity = f"entity-{i}"
    return [
        _call(f"w{i}", "mem-create_entities", {"entities": [
            {"name": entity, "entityType": "test", "observations": [f"written in round {i}"]}]}),
        _call(f"r{i}", "mem-search_nodes", {"query": entity}),
    ]


def _load_memory(registry: ToolRegistry, memory_js: Path, tmp_path: Path, **options: Any) -> None:
    registry.register_from_mcp(
        {"command": "node", "args": [str(memory_js)],
         "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}}, namespace="mem",
        **options)


@pytest.mark.npm
def test_server_memory_batch_sees_its_own_write_every_time(registry: ToolRegistry,
                                                           memory_js: Path,
                                                           tmp_path: Path) -> None:
    _load_memory(registry, memory_js, tmp_path)
    group = registry["mem-create_entities"].metadata.concurrency_group
    assert group is not None and registry["mem-search_nodes"].metadata.concurrency_group == group
    for i in range(ROUNDS):
        written, found = registry.execute_tool_calls(_write_then_read(i))
        assert written.ok, written.text
        assert found.ok and f"entity-{i}" in found.text, (i, found.text)


@pytest.mark.npm
def test_server_memory_async_batch_sees_its_own_write_every_time(registry: ToolRegistry,
                                                                 memory_js: Path,
                                                                 tmp_path: Path) -> None:
    async def main() -> None:
        await registry.aregister_from_mcp(
            {"command": "node", "args": [str(memory_js)],
             "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}}, namespace="mem")
        for i in range(ROUNDS):
            written, found = await registry.aexecute_tool_calls(_write_then_read(i))
            assert written.ok, written.text
            assert found.ok and f"entity-{i}" in found.text, (i, found.text)

    asyncio.run(main())


def test_groups_are_per_server_and_configurable(registry: ToolRegistry, spec: Any,
                                               tmp_path: Path) -> None:
    registry.register_from_mcp(spec(), namespace="a")
    registry.register_from_mcp(spec(), namespace="b")
    registry.register_from_mcp(spec(), namespace="c", ordering="none")
    a, b = (registry[f"{ns}-echo"].metadata.concurrency_group for ns in "ab")
    assert a is not None and b is not None and a != b
    assert registry["a-add"].metadata.concurrency_group == a
    assert registry["c-echo"].metadata.concurrency_group is None
    with pytest.raises(ConfigError, match="ordering must be one of"):
        registry.register_from_mcp(spec(), namespace="d", ordering="strict")
    # Refused before anything starts: a server that cannot be started is never tried.
    with pytest.raises(ConfigError, match="ordering must be one of"):
        registry.register_from_mcp({"command": str(tmp_path / "absent")}, ordering="strict")
    config = tmp_path / "ordering.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n"
                      "ordering = 'none'\n", encoding="utf-8")
    configured = ToolRegistry(config=config)
    try:
        configured.register_from_mcp(spec(), namespace="e")
        assert configured["e-echo"].metadata.concurrency_group is None
        configured.register_from_mcp(spec(), namespace="f", ordering="server")
        assert configured["f-echo"].metadata.concurrency_group is not None
    finally:
        configured.close()
    config.write_text("[tool.toolregistry.plugins.mcp]\nordering = 'strict'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="ordering"):
        ToolRegistry(config=config).register_from_mcp(spec())
