"""Hostile programs: each is stopped by a limit with a clear message, and nothing keeps
running (the conftest checks that no sandbox worker outlives its registry)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any

import psutil

from toolregistry import ToolContext

MakeMode = Any


def _error(registry: Any, code: str) -> tuple[str, dict[str, Any]]:
    result = registry.invoke("run_code", {"code": code})
    assert result.is_error, result.text
    return result.text, result.metadata["error"]


def test_an_endless_loop_stops_at_the_wall_time(make_mode: MakeMode) -> None:
    registry, _ = make_mode(wall_time=1.0)
    text, error = _error(registry, "n = 0\nwhile True:\n    n += 1")
    assert error["kind"] == "limit"
    assert "TimeoutError" in text and "more than 1 s (wall_time)" in text
    assert registry.invoke("run_code", {"code": "1 + 1"}).text == "2"  # the pool recovered


def test_an_endless_loop_of_tool_calls_stops_at_the_wall_time(make_mode: MakeMode) -> None:
    registry, _ = make_mode(wall_time=1.0, max_tool_calls=100_000)
    cancelled = threading.Event()

    @registry.register
    async def slow(n: int) -> int:
        """Slow."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return n

    text, error = _error(registry, "while True:\n    await slow(1)")
    assert error["kind"] == "limit"
    assert "ran past its wall-time limit of 1 s while waiting for slow" in text
    assert cancelled.wait(5), "the tool call in flight was not cancelled"


def test_a_sync_tool_in_flight_is_told_to_stop(make_mode: MakeMode) -> None:
    registry, _ = make_mode(wall_time=1.0)
    stopped = threading.Event()

    @registry.register
    def hang(ctx: ToolContext) -> str:
        """Hangs until cancelled."""
        try:
            ctx.cancel_event.wait(30)
        finally:  # woken by the cancel event, then interrupted by the registry
            stopped.set()
        return "done"

    text, error = _error(registry, "await hang()")
    assert error["kind"] == "limit" and "waiting for hang" in text
    assert stopped.wait(5)
    run = registry["run_code"]
    assert run.metadata.timeout is not None and run.metadata.timeout > 1.0


def test_a_memory_bomb_hits_the_memory_limit(make_mode: MakeMode) -> None:
    registry, _ = make_mode(memory_mb=16)
    text, error = _error(registry, "x = []\nwhile True:\n    x.append('a' * 1_000_000)")
    assert error == {"kind": "limit", "line": 3}
    assert "MemoryError" in text and "more than 16 MiB" in text
    text, _ = _error(registry, "'a' * (10 ** 10)")
    assert "MemoryError" in text


def test_deep_recursion_is_stopped(make_mode: MakeMode) -> None:
    registry, _ = make_mode(max_recursion_depth=50)
    text, error = _error(registry, "def f(n):\n    return f(n + 1)\nf(0)")
    assert error["kind"] == "limit" and "RecursionError" in text and "deeper than 50" in text


def test_huge_prints_are_stopped_at_the_output_limit(make_mode: MakeMode) -> None:
    registry, _ = make_mode(max_output_chars=10_000, wall_time=20)
    result = registry.invoke("run_code", {"code": "while True:\n    print('x' * 1000)"})
    assert result.is_error and result.metadata["error"]["kind"] == "limit"
    assert "printed more than 10,000 characters" in result.text
    # stopped by the output limit, not by the 20 s wall time
    assert result.value.duration < 15
    assert len(result.value.output) == 10_000


def test_a_huge_value_is_refused(make_mode: MakeMode) -> None:
    registry, _ = make_mode(max_output_chars=10_000)
    text, error = _error(registry, "list(range(100_000))")
    assert error["kind"] == "limit" and "over the output limit of 10,000" in text


def test_long_results_are_cut_for_the_model(make_mode: MakeMode) -> None:
    registry, _ = make_mode(result_chars=500)
    result = registry.invoke("run_code", {"code": "print('y' * 5000)"})
    assert result.ok and len(result.text) < 700 and "[cut: 4,500 more characters" in result.text
    assert len(result.value.output) == 5001  # the application keeps it all


def test_no_files_environment_or_foreign_modules(make_mode: MakeMode) -> None:
    registry, _ = make_mode(type_check=False)
    text, _ = _error(registry, "import os\nos.getenv('HOME')")
    assert "PermissionError" in text and "os.getenv('HOME'" in text and "no files" in text
    text, _ = _error(registry, "from pathlib import Path\nPath('/etc/passwd').read_text()")
    assert "PermissionError" in text and "/etc/passwd" in text
    text, _ = _error(registry, "open('/etc/passwd').read()")
    assert "PermissionError" in text and "no files" in text
    for module in ("subprocess", "socket", "urllib", "ctypes"):
        text, _ = _error(registry, f"import {module}")
        assert "ModuleNotFoundError" in text and "programs can import only: asyncio" in text
    text, _ = _error(registry, "().__class__.__bases__[0].__subclasses__()")
    assert "AttributeError" in text
    checked, _ = make_mode()
    text, error = _error(checked, "data = open('/etc/passwd').read()")
    assert error["kind"] == "type" and "`open`" in text and "no files" in text


def test_sleeping_past_the_limit_is_refused_at_once(make_mode: MakeMode) -> None:
    registry, _ = make_mode(wall_time=2.0)
    result = registry.invoke("run_code", {"code": "import time\ntime.sleep(3600)"})
    assert result.is_error and "sleep" in result.text and result.value.duration < 1.5


def test_too_many_tool_calls_stop_the_program_even_if_caught(make_mode: MakeMode,
                                                              seen: Any) -> None:
    registry, _ = make_mode(max_tool_calls=5)
    code = ("n = 0\nwhile True:\n    try:\n        await get_weather('Oslo')\n"
            "        n += 1\n    except Exception:\n        pass\n")
    text, error = _error(registry, code)
    assert error["kind"] == "limit" and "more than 5 tool calls" in text
    assert len(seen) == 5


def test_a_crashed_worker_is_replaced(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    me = psutil.Process()

    @registry.register
    def kill_sandbox() -> str:
        """Kills the sandbox's worker processes (what a crash looks like from the host)."""
        for child in me.children(recursive=True):
            if "monty" in child.name():
                os.kill(child.pid, signal.SIGKILL)
        return "killed"

    text, error = _error(registry, "await kill_sandbox()\nawait kill_sandbox()")
    assert error["kind"] == "crash" and "it was replaced" in text
    assert registry.invoke("run_code", {"code": "6 * 7"}).text == "42"
