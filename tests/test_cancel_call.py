"""Cancelling a call in flight from outside its caller (``ToolRegistry.cancel_call``): the
waiting caller is answered at once with a "cancelled" error naming the reason, on every path a
call with a deadline waits on (a sync tool on a worker, a sync tool inline under the watchdog,
an async tool's task); unknown and finished calls are not cancelled."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from toolregistry import ToolRegistry

# The tools below would run this long if nothing stopped them; the calls' deadline is later.
RUNS_FOR = 30.0
DEADLINE = 60.0


def _cancel_when_running(reg: ToolRegistry, call_id: str, started: threading.Event,
                         out: list[bool]) -> threading.Thread:
    """Cancel ``call_id`` from another thread once its tool runs."""
    def cancel() -> None:
        started.wait(10)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if reg.cancel_call(call_id, reason="stopped by the test"):
                out.append(True)
                return
            time.sleep(0.01)
        out.append(False)

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def _sync_tool(reg: ToolRegistry, started: threading.Event, ended: list[str]) -> None:
    @reg.register
    def slow() -> str:
        started.set()
        try:
            end = time.monotonic() + RUNS_FOR
            while time.monotonic() < end:
                time.sleep(0.02)
        finally:
            ended.append("slow")
        return "done"


def _assert_cancelled(result: Any, waited: float) -> None:
    assert result.is_error
    assert result.error_kind == "cancelled"
    assert "stopped by the test" in str(result.content)
    assert "'slow'" in str(result.content)
    assert waited < RUNS_FOR / 2  # answered on the cancel, not when the tool ended


@pytest.fixture
def reg() -> Iterator[ToolRegistry]:
    registry = ToolRegistry()
    yield registry
    registry.close()


def _invoke_cancelled(reg: ToolRegistry, call_id: str) -> list[str]:
    """Run the slow sync tool as call ``call_id`` and cancel it: its caller is answered with
    the cancellation; what the tool appends when it ends."""
    started = threading.Event()
    ended: list[str] = []
    out: list[bool] = []
    _sync_tool(reg, started, ended)
    canceller = _cancel_when_running(reg, call_id, started, out)
    t0 = time.monotonic()
    result = reg.invoke("slow", {}, call_id=call_id, timeout=DEADLINE)
    waited = time.monotonic() - t0
    canceller.join()
    assert out == [True]
    _assert_cancelled(result, waited)
    return ended


def _ends(ended: list[str]) -> None:
    for _ in range(500):  # interrupted on its worker, as after a deadline
        if ended:
            break
        time.sleep(0.01)
    assert ended == ["slow"]


def test_a_sync_call_on_a_worker_is_cancelled(reg: ToolRegistry) -> None:
    _ends(_invoke_cancelled(reg, "c-pool"))
    assert not reg.cancel_call("c-pool")  # finished: nothing to cancel


def test_a_sync_call_of_a_batch_is_cancelled_and_the_others_go_on(reg: ToolRegistry) -> None:
    started = threading.Event()
    ended: list[str] = []
    out: list[bool] = []
    _sync_tool(reg, started, ended)

    @reg.register
    def quick(x: int) -> int:
        started.wait(10)
        time.sleep(0.2)
        return x * 2

    canceller = _cancel_when_running(reg, "c-batch", started, out)
    calls = [{"id": "c-batch", "type": "function", "function": {"name": "slow", "arguments": "{}"}},
             {"id": "c-other", "type": "function",
              "function": {"name": "quick", "arguments": '{"x": 21}'}}]
    t0 = time.monotonic()
    slow, quick_result = reg.execute_tool_calls(calls, timeout=DEADLINE)
    canceller.join()
    assert out == [True]
    _assert_cancelled(slow, time.monotonic() - t0)
    assert not quick_result.is_error and quick_result.content == "42"
    assert not reg.cancel_call("c-batch")


def test_a_sync_call_through_the_async_api_is_cancelled(reg: ToolRegistry) -> None:
    started = threading.Event()
    ended: list[str] = []
    out: list[bool] = []
    _sync_tool(reg, started, ended)

    async def main() -> tuple[Any, float]:
        t0 = time.monotonic()
        result = await reg.ainvoke("slow", {}, call_id="c-async-pool", timeout=DEADLINE)
        return result, time.monotonic() - t0

    canceller = _cancel_when_running(reg, "c-async-pool", started, out)
    result, waited = asyncio.run(main())
    canceller.join()
    assert out == [True]
    _assert_cancelled(result, waited)
    _ends(ended)


def test_a_sync_call_run_inline_is_cancelled() -> None:
    assert threading.current_thread() is threading.main_thread()
    reg = ToolRegistry(inline_calls=True)
    try:
        ended = _invoke_cancelled(reg, "c-inline")
        assert ended == ["slow"]  # it ran on this thread: stopped before the answer
        assert not reg.cancel_call("c-inline")
        assert reg.invoke("slow", {}, call_id="c-inline", timeout=0.2).error_kind == "timeout"
    finally:
        reg.close()


def test_an_async_call_is_cancelled(reg: ToolRegistry) -> None:
    started = threading.Event()
    stopped: list[str] = []

    @reg.register
    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(RUNS_FOR)
        except asyncio.CancelledError:
            stopped.append("slow")
            raise
        return "done"

    async def main() -> tuple[Any, float]:
        t0 = time.monotonic()
        result = await reg.ainvoke("slow", {}, call_id="c-async", timeout=DEADLINE)
        return result, time.monotonic() - t0

    out: list[bool] = []
    canceller = _cancel_when_running(reg, "c-async", started, out)
    result, waited = asyncio.run(main())
    canceller.join()
    assert out == [True]
    _assert_cancelled(result, waited)
    assert stopped == ["slow"]  # its task was cancelled
    # The sync API waits on the private loop the same way.
    started.clear()
    canceller = _cancel_when_running(reg, "c-async-sync", started, out)
    t0 = time.monotonic()
    result = reg.invoke("slow", {}, call_id="c-async-sync", timeout=DEADLINE)
    canceller.join()
    assert out == [True, True]
    _assert_cancelled(result, time.monotonic() - t0)


def test_unknown_and_finished_calls_are_not_cancelled(reg: ToolRegistry) -> None:
    assert not reg.cancel_call("nothing")  # no call ran yet
    assert not reg.cancel_call("")

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    assert reg.invoke("add", {"a": 1, "b": 2}, call_id="c-done", timeout=5).content == "3"
    assert not reg.cancel_call("c-done")
    assert not reg.cancel_call("nothing")
