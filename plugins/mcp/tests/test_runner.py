"""MCP tools of a background-loop session run through the plugin's runner (the ``dispatch``
seam): a call starts as a task of the session's loop from the caller's own thread, with no
registry worker thread in between, and keeps the registry's deadlines and retries."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import pytest

from toolregistry import RetryPolicy, ToolRegistry
from toolregistry.errors import ToolCallError


def _workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "toolregistry-worker"}


def test_blocking_calls_with_a_deadline_need_no_worker_thread(registry: ToolRegistry,
                                                              spec: Any) -> None:
    registry.register_from_mcp(spec(), include=["echo", "add"])
    assert registry["echo"].metadata.timeout  # every call has a deadline
    before = _workers()
    answers: list[Any] = []

    def caller() -> None:  # not the main thread: no inline calls there
        for i in range(5):
            answers.append(registry.invoke("echo", {"text": f"hello {i}"}))
        answers.extend(registry.execute_tool_calls([
            {"id": "1", "type": "function",
             "function": {"name": "echo", "arguments": json.dumps({"text": "batch"})}},
            {"id": "2", "type": "function",
             "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})}},
        ]))

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join(60)
    assert [a.content for a in answers[:5]] == [f"hello {i}" for i in range(5)]
    assert answers[5].content == "batch" and answers[6].ok, [a.text for a in answers]
    assert _workers() <= before, "an MCP call went through a registry worker thread"


def test_the_async_api_awaits_the_call_on_the_session_loop(registry: ToolRegistry,
                                                           spec: Any) -> None:
    registry.register_from_mcp(spec(), include=["echo"])

    async def main() -> list[str]:
        results = await asyncio.gather(*(registry.ainvoke("echo", {"text": f"a{i}"})
                                         for i in range(4)))
        return [r.content for r in results]

    assert asyncio.run(main()) == ["a0", "a1", "a2", "a3"]


def test_idempotent_tools_are_retried_by_the_runner(tmp_path: Any, spec: Any,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "retry.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n",
                      encoding="utf-8")
    registry = ToolRegistry(config=config, retry=RetryPolicy(
        attempts=3, backoff=0.01, retry_on=(ToolCallError,)))
    try:
        registry.register_from_mcp(spec(), include=["fail"])
        registry.update_tool_metadata("fail", idempotent_hint=True)
        with caplog.at_level(logging.INFO, logger="toolregistry"):
            result = registry.invoke("fail", {})
            assert result.is_error and "the database is on fire" in result.text
            retried = [r for r in caplog.records if "call.retried" in r.getMessage()]
            assert len(retried) == 2, [r.getMessage() for r in caplog.records]
            registry.update_tool_metadata("fail", idempotent_hint=False)
            caplog.clear()
            assert registry.invoke("fail", {}).is_error
            assert not [r for r in caplog.records if "call.retried" in r.getMessage()]
    finally:
        registry.close()


def test_a_running_loop_session_keeps_the_registry_path(registry: ToolRegistry,
                                                        spec: Any) -> None:
    async def main() -> str:
        await registry.aregister_from_mcp(spec(), include=["echo"], session_loop="running")
        result = await registry.ainvoke("echo", {"text": "on this loop"})
        await registry.aclose()
        return str(result.content)

    assert asyncio.run(main()) == "on this loop"
