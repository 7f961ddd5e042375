"""Tasks at spec revision 2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension) against
a real server that speaks it (``servers/tasks_server.py``, on the SDK's ``MCPServer``; the
conformance suite's own server scenarios for the extension check that server in
``test_conformance.py``): a call the server runs as a task is polled to its end within the
call's deadline, answers the task's input requests, and is cancelled at the deadline."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

from .conftest import free_port, listening

TASKS_SERVER = Path(__file__).parent / "servers" / "tasks_server.py"
STDIO = {"command": sys.executable, "args": [str(TASKS_SERVER)]}


@pytest.fixture
def tasks_http() -> Iterator[str]:
    port = free_port()
    with listening([sys.executable, str(TASKS_SERVER), "--http", str(port)], port,
                   "/mcp") as url:
        yield url


def confirm(params: Any) -> dict[str, Any]:
    assert params.message.startswith("Delete ")
    return {"action": "accept", "content": {"confirm": True}}


def test_a_tool_that_runs_only_as_a_task_is_called_as_one(registry: ToolRegistry) -> None:
    registry.register_from_mcp(STDIO, namespace="t")
    assert registry.invoke("t-research", {"topic": "tides"}).text == "Research report: tides"
    assert registry.invoke("t-slow_compute", {"seconds": 0.2, "label": "x"}).text == \
        "computed x"
    assert registry.invoke("t-greet", {"name": "Ada"}).text == "Hello, Ada!"  # not a task
    log = json.loads(str(registry.invoke("t-task_log", {}).content))
    assert [t["status"] for t in log] == ["completed", "completed"]


def test_a_task_over_http_is_finished_with_its_headers(registry: ToolRegistry,
                                                       tasks_http: str) -> None:
    registry.register_from_mcp(tasks_http, namespace="t")
    assert registry.invoke("t-research", {"topic": "tides"}).text == "Research report: tides"


def test_a_failed_task_is_an_error_result_that_says_why(registry: ToolRegistry) -> None:
    registry.register_from_mcp(STDIO, namespace="t")
    failing = registry.invoke("t-failing_job", {})
    assert failing.is_error and "disk full" in failing.text
    broken = registry.invoke("t-protocol_error_job", {})
    assert broken.is_error and "the task failed: the worker crashed" in broken.text


def test_a_task_waiting_for_input_is_answered_by_the_handler(registry: ToolRegistry) -> None:
    registry.register_from_mcp(STDIO, namespace="t", elicitation=confirm)
    assert registry.invoke("t-confirm_delete", {"filename": "a.txt"}).text == "deleted a.txt"


def test_a_task_past_its_deadline_is_cancelled_on_the_server(registry: ToolRegistry) -> None:
    import structlog

    registry.register_from_mcp(STDIO, namespace="t", timeout=1.5)
    with structlog.testing.capture_logs() as logs:
        result = registry.invoke("t-research", {"topic": "tides", "seconds": 60})
    assert result.is_error and result.error_kind == "timeout", result.text
    assert "run as a task" in result.text and "tasks/cancel" in result.text
    assert any(e["event"] == "mcp.task_cancelled" for e in logs)
    log = json.loads(str(registry.invoke("t-task_log", {}).content))
    assert log == [{"status": "cancelled", "cancel_requested": True}]


def test_a_tool_that_supports_tasks_also_runs_without_one(registry: ToolRegistry) -> None:
    # At 2025-11-25 the extension is not spoken: the server runs the call directly.
    registry.register_from_mcp(STDIO, namespace="t", protocol_version="legacy")
    assert registry.invoke("t-slow_compute", {"seconds": 0.1, "label": "y"}).text == \
        "computed y"
    only = registry.invoke("t-research", {"topic": "tides"})
    assert only.is_error and "runs only as a task" in only.text
    assert json.loads(str(registry.invoke("t-task_log", {}).content)) == []


def test_a_task_whose_caller_gives_up_is_cancelled_on_the_server(no_orphans: None) -> None:
    import asyncio

    from toolregistry_mcp import MCPClient

    async def main() -> str:
        async with MCPClient(STDIO, timeout=None) as client:
            await client.alist_tools()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(
                    client.acall_tool("research", {"topic": "tides", "seconds": 60}), 3)
            log = await client.acall_tool("task_log", {})
            return str(getattr(log.content[0], "text", ""))

    assert json.loads(asyncio.run(main())) == [{"status": "cancelled", "cancel_requested": True}]
