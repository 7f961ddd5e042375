"""Tool calls on a real local Ray: where they run, what stays with the registry, deadlines,
failures of the worker, of the tool and of shipping."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import psutil
import pytest

from toolregistry import ToolContext, ToolMetadata, ToolRegistry
from toolregistry.errors import ToolRejected
from toolregistry.plugin import hookimpl
from toolregistry.types import Decision

from .conftest import MakeRegistry

ON_RAY = ToolMetadata(extra={"ray": True})


def cpu_work(n: int) -> dict[str, float]:
    """A CPU-bound tool: sums squares, reports where and when it ran."""
    start = time.time()
    total = sum(i * i for i in range(n))
    return {"pid": os.getpid(), "start": start, "end": time.time(), "total": total}


def test_sync_and_async_tools_run_in_ray_workers(make_registry: MakeRegistry) -> None:
    registry = make_registry(tools=["where*"])

    @registry.register
    def where_sync(x: int) -> dict[str, int]:
        return {"pid": os.getpid(), "x": x * 2}

    @registry.register
    async def where_async(x: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"pid": os.getpid(), "x": x + 1}

    @registry.register
    def here() -> int:
        return os.getpid()

    results = registry.execute_tool_calls([
        {"id": "1", "name": "where_sync", "arguments": {"x": 4}},
        {"id": "2", "name": "where_async", "arguments": {"x": 4}},
        {"id": "3", "name": "here", "arguments": {}},
    ])
    assert [r.outcome for r in results] == ["ok", "ok", "ok"]
    assert results[0].value["x"] == 8 and results[1].value["x"] == 5
    assert results[0].value["pid"] != os.getpid() and results[1].value["pid"] != os.getpid()
    assert results[2].value == os.getpid()  # not selected: the registry's own pool

    async def both() -> list[int]:
        a = await registry.ainvoke("where_sync", {"x": 1})
        b = await registry.ainvoke("where_async", {"x": 1})
        return [a.value["x"], b.value["x"]]

    assert asyncio.run(both()) == [2, 2]
