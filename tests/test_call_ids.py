"""What call observers learn of a call besides its result: the batch id the kernel gives the
calls of one batch, the trace and span ids a tracing plugin sets on the call, the progress
its tool reports (``listen_to_progress``), and the end of a call whose async caller gave up."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from toolregistry import Tool, ToolCall, ToolContext, ToolRegistry, ToolResult
from toolregistry.plugin import hookimpl, listen_to_progress


class Watcher:
    """A call observer that keeps what it was told."""

    def __init__(self) -> None:
        self.finished: list[tuple[str | None, str | None, str, str | None]] = []
        self.progress: list[tuple[str | None, float, float | None, str | None]] = []

    @hookimpl
    def call_observer(self, registry: ToolRegistry, tool: Tool) -> Any:
        watcher = self

        class Observer:
            def call_started(self, call: ToolCall) -> None:
                call.trace_id = "0" * 31 + "1"
                listen_to_progress(lambda p, t, m: watcher.progress.append((call.id, p, t, m)))

            def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                watcher.finished.append((call.id, call.batch_id, result.outcome, call.trace_id))

        return Observer()


def _chat(name: str, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_the_calls_of_a_batch_share_its_id() -> None:
    watcher = Watcher()
    registry = ToolRegistry(plugins=[watcher])
    registry.register(lambda: "x", name="one")
    try:
        registry.execute_tool_calls([_chat("one", "a"), _chat("one", "b")])
        registry.execute_tool_calls([_chat("one", "c")])
        registry.invoke("one", {}, call_id="d")
        asyncio.run(registry.aexecute_tool_calls([_chat("one", "e")]))
        batches = {call_id: batch for call_id, batch, _, _ in watcher.finished}
        assert batches["a"] == batches["b"] and batches["a"] is not None
        assert len({batches["a"], batches["c"], batches["e"]}) == 3
        assert batches["d"] is None  # invoke is no batch
        # What call_started set on the call is there at call_finished (a tracing plugin
        # installed beside may have set its own).
        assert all(trace for *_, trace in watcher.finished)
    finally:
        registry.close()


def test_an_observer_hears_the_progress_of_its_call_and_the_callers_reporter_too() -> None:
    from toolregistry.types import reporting_progress

    watcher = Watcher()
    registry = ToolRegistry(plugins=[watcher])

    @registry.register
    def steps(n: int, ctx: ToolContext) -> int:
        for i in range(n):
            ctx.report_progress(i + 1, n, f"step {i + 1}")
        return n

    caller: list[float] = []
    try:
        with reporting_progress(lambda p, t, m: caller.append(p)):
            assert registry.invoke("steps", {"n": 3}, call_id="p").ok
        assert watcher.progress == [("p", 1, 3, "step 1"), ("p", 2, 3, "step 2"),
                                    ("p", 3, 3, "step 3")]
        assert caller == [1, 2, 3]
    finally:
        registry.close()


def test_a_call_whose_async_caller_gave_up_ends_once_for_its_observers() -> None:
    watcher = Watcher()
    registry = ToolRegistry(plugins=[watcher])
    started = threading.Event()

    @registry.register
    def wait(ctx: ToolContext) -> str:
        started.set()
        while not ctx.cancelled:
            time.sleep(0.01)
        return "stopped"

    async def main() -> None:
        task = asyncio.ensure_future(registry.ainvoke("wait", {}, call_id="w"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.wait({task})
        assert task.cancelled()

    try:
        asyncio.run(main())
        assert [(c, o) for c, _, o, _ in watcher.finished] == [("w", "cancelled")]
    finally:
        registry.close()
