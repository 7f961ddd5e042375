"""An async tool whose source declares that it ends once cancelled (``Tool.ends_on_cancel``)
is awaited in the caller's own task on the async API: its deadline and ``cancel_call`` cancel
that task and turn the cancellation into the usual result; the caller's own cancellation
still propagates."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from toolregistry import Tool, ToolMetadata, ToolRegistry

RUNS_FOR = 30.0


@pytest.fixture
def reg() -> Iterator[ToolRegistry]:
    registry = ToolRegistry()
    yield registry
    registry.close()


def _declared(reg: ToolRegistry, fn: Callable[..., Awaitable[Any]]) -> None:
    reg.register(Tool.from_function(fn).evolve(ends_on_cancel=True))


def _declared_slow(reg: ToolRegistry, started: threading.Event | asyncio.Event | None = None,
                   stopped: list[str] | None = None) -> None:
    """A declared tool ``slow`` that would run ``RUNS_FOR`` seconds: sets ``started`` when it
    runs, appends to ``stopped`` when cancelled."""
    async def slow() -> str:
        if started is not None:
            started.set()
        try:
            await asyncio.sleep(RUNS_FOR)
        except asyncio.CancelledError:
            if stopped is not None:
                stopped.append("slow")
            raise
        return "done"

    _declared(reg, slow)


def test_a_declared_tool_runs_in_the_callers_task(reg: ToolRegistry) -> None:
    seen: list[asyncio.Task[Any] | None] = []

    async def where() -> str:
        seen.append(asyncio.current_task())
        return "here"

    _declared(reg, where)

    async def main() -> asyncio.Task[Any] | None:
        result = await reg.ainvoke("where", {}, timeout=30)
        assert result.content == "here"
        return asyncio.current_task()

    assert seen == [asyncio.run(main())]


def test_a_declared_tool_that_runs_alone_runs_in_the_callers_task_too(
        reg: ToolRegistry) -> None:
    seen: list[asyncio.Task[Any] | None] = []

    async def alone() -> str:
        seen.append(asyncio.current_task())
        await asyncio.sleep(RUNS_FOR)
        return "done"

    reg.register(Tool.from_function(alone, metadata=ToolMetadata(is_concurrency_safe=False))
                 .evolve(ends_on_cancel=True))

    async def main() -> tuple[Any, asyncio.Task[Any] | None]:
        return await reg.ainvoke("alone", {}, timeout=0.2), asyncio.current_task()

    result, caller = asyncio.run(main())
    assert result.error_kind == "timeout"
    assert seen == [caller]
    # its lock was let go: the next call runs (and times out) too
    assert asyncio.run(reg.ainvoke("alone", {}, timeout=0.2)).error_kind == "timeout"


def test_an_undeclared_tool_has_a_task_of_its_own(reg: ToolRegistry) -> None:
    seen: list[asyncio.Task[Any] | None] = []

    @reg.register
    async def where() -> str:
        seen.append(asyncio.current_task())
        return "there"

    async def main() -> asyncio.Task[Any] | None:
        await reg.ainvoke("where", {}, timeout=30)
        return asyncio.current_task()

    caller = asyncio.run(main())
    assert seen and seen[0] is not caller


def test_a_declared_tool_times_out_and_the_caller_goes_on(reg: ToolRegistry) -> None:
    stopped: list[str] = []
    _declared_slow(reg, stopped=stopped)

    async def main() -> tuple[Any, float, int]:
        t0 = time.monotonic()
        result = await reg.ainvoke("slow", {}, timeout=0.2)
        waited = time.monotonic() - t0
        await asyncio.sleep(0)  # no cancellation left pending for the caller
        task = asyncio.current_task()
        assert task is not None
        return result, waited, task.cancelling()

    result, waited, cancelling = asyncio.run(main())
    assert result.is_error and result.error_kind == "timeout"
    assert 0.15 < waited < RUNS_FOR / 2
    assert cancelling == 0
    assert stopped == ["slow"]


def test_a_declared_tool_that_returns_when_cancelled_still_times_out(
        reg: ToolRegistry) -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(RUNS_FOR)
        except asyncio.CancelledError:
            return "late"
        return "done"

    _declared(reg, stubborn)
    result = asyncio.run(reg.ainvoke("stubborn", {}, timeout=0.2))
    assert result.is_error and result.error_kind == "timeout"


def test_cancel_call_ends_a_declared_tool(reg: ToolRegistry) -> None:
    started = threading.Event()
    _declared_slow(reg, started)
    out: list[bool] = []

    def cancel() -> None:
        started.wait(10)
        end = time.monotonic() + 10
        while time.monotonic() < end and not out:
            if reg.cancel_call("c-here", reason="stopped by the test"):
                out.append(True)
            time.sleep(0.01)

    async def main() -> tuple[Any, float]:
        t0 = time.monotonic()
        result = await reg.ainvoke("slow", {}, call_id="c-here", timeout=60)
        return result, time.monotonic() - t0

    canceller = threading.Thread(target=cancel)
    canceller.start()
    result, waited = asyncio.run(main())
    canceller.join()
    assert out == [True]
    assert result.is_error and result.error_kind == "cancelled"
    assert "stopped by the test" in str(result.content)
    assert waited < RUNS_FOR / 2
    assert not reg.cancel_call("c-here")  # finished


def test_the_callers_own_cancellation_propagates(reg: ToolRegistry) -> None:
    started = asyncio.Event()
    _declared_slow(reg, started)

    async def main() -> None:
        task = asyncio.ensure_future(reg.ainvoke("slow", {}, timeout=60))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_declared_calls_of_a_batch_end_each_on_its_own(reg: ToolRegistry) -> None:
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    _declared(reg, nap)
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "nap", "arguments": f'{{"seconds": {s}}}'}}
             for i, s in enumerate((RUNS_FOR, 0.01))]
    slow, quick = asyncio.run(reg.aexecute_tool_calls(calls, timeout=0.5))
    assert slow.error_kind == "timeout"
    assert quick.content == "slept 0.01"
