"""Blocking approval in async applications: on ``ainvoke`` and ``aexecute_tool_calls`` an
async handler is awaited on the caller's event loop and a sync one runs on a helper thread,
and the loop stays free for other tasks while a person decides."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry
from toolregistry.types import ApprovalRequest, ToolResult

SENT: list[str] = []


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    SENT.clear()
    reg = ToolRegistry()

    @reg.register
    def send_mail(to: str) -> str:
        """Send a mail."""
        SENT.append(to)
        return f"sent to {to}"

    @reg.register
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    tp.configure(reg, rules=[tp.Rule("ask", tools=["send_*"])], handler_timeout=10)
    yield reg
    reg.close()


class Ticker:
    """Another task of the caller's loop: it ticks while it gets to run."""

    def __init__(self) -> None:
        self.count = 0
        self.ticked = asyncio.Event()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.count += 1
            self.ticked.set()

    async def reached(self, n: int) -> None:
        while self.count < n:
            self.ticked.clear()
            await self.ticked.wait()


async def _ticking(work: Awaitable[Any], ticker: Ticker) -> Any:
    task = asyncio.get_running_loop().create_task(ticker.run())
    try:
        return await work
    finally:
        task.cancel()


def test_an_async_handler_is_awaited_on_the_callers_loop(registry: ToolRegistry) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def main() -> tuple[ToolResult, asyncio.AbstractEventLoop, Ticker]:
        ticker = Ticker()

        async def handler(request: ApprovalRequest) -> bool:
            seen.append(asyncio.get_running_loop())
            await ticker.reached(10)  # only if the caller's loop keeps running other tasks
            return True

        tp.configure(registry, handler=handler)
        result = await _ticking(registry.ainvoke("send_mail", {"to": "a@example.com"}), ticker)
        return result, asyncio.get_running_loop(), ticker

    result, loop, ticker = asyncio.run(main())
    assert result.ok, result.text
    assert seen == [loop]
    assert ticker.count >= 10
    assert SENT == ["a@example.com"]


def test_a_sync_handler_runs_on_a_thread_while_the_loop_runs(registry: ToolRegistry) -> None:
    threads: list[threading.Thread] = []

    async def main() -> ToolResult:
        ticker = Ticker()
        release = threading.Event()

        def handler(request: ApprovalRequest) -> bool:
            threads.append(threading.current_thread())
            return release.wait(10)  # a person at a terminal, say

        async def person() -> None:
            await ticker.reached(10)  # the loop runs while the handler waits
            release.set()

        tp.configure(registry, handler=handler)
        asyncio.get_running_loop().create_task(person())
        return await _ticking(  # type: ignore[no-any-return]
            registry.ainvoke("send_mail", {"to": "b@example.com"}), ticker)

    result = asyncio.run(main())
    assert result.ok, result.text
    assert threads and threads[0] is not threading.main_thread()
    assert SENT == ["b@example.com"]


def test_an_async_batch_asks_in_order_before_anything_runs(registry: ToolRegistry) -> None:
    asked: list[tuple[str, list[str]]] = []

    async def main() -> list[ToolResult]:
        ticker = Ticker()

        async def handler(request: ApprovalRequest) -> tp.Verdict:
            asked.append((request.arguments["to"], list(SENT)))
            await ticker.reached(ticker.count + 3)
            if request.arguments["to"].startswith("ceo"):
                return tp.Verdict.approve(approver="ann")
            return tp.Verdict.deny("not to everyone", approver="ann")

        tp.configure(registry, handler=handler)
        calls = [{"id": "c1", "name": "send_mail", "arguments": {"to": "ceo@example.com"}},
                 {"id": "c2", "name": "add", "arguments": {"a": 1, "b": 2}},
                 {"id": "c3", "name": "send_mail", "arguments": {"to": "all@example.com"}}]
        return await _ticking(registry.aexecute_tool_calls(calls), ticker)  # type: ignore[no-any-return]

    results = asyncio.run(main())
    assert [r.outcome for r in results] == ["ok", "ok", "denied"]
    assert "not to everyone" in results[2].text
    assert asked == [("ceo@example.com", []), ("all@example.com", [])]  # nothing ran yet
    assert SENT == ["ceo@example.com"]
    policy = tp.get_policy(registry)
    assert [(r.decision, r.approver) for r in policy.audit.query(tool="send_mail")] == [
        ("approve", "ann"), ("allow", "ann"), ("reject", "ann"), ("deny", "ann")]


def test_a_silent_async_handler_times_out_and_is_cancelled(registry: ToolRegistry) -> None:
    cancelled: list[bool] = []

    async def handler(request: ApprovalRequest) -> bool:
        try:
            await asyncio.Event().wait()  # nobody ever answers
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return True

    tp.configure(registry, handler=handler, handler_timeout=0.2)

    async def main() -> tuple[ToolResult, Ticker]:
        ticker = Ticker()
        return await _ticking(registry.ainvoke("send_mail", {"to": "c@example.com"}),
                              ticker), ticker

    result, ticker = asyncio.run(main())
    assert result.outcome == "denied" and "within 0.2 s" in result.text
    assert cancelled == [True]
    assert ticker.count > 10  # the loop kept running while the handler was silent
    assert SENT == []


def test_cancelling_the_caller_cancels_the_question(registry: ToolRegistry) -> None:
    started, cancelled = asyncio.Event(), []

    async def handler(request: ApprovalRequest) -> bool:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return True

    tp.configure(registry, handler=handler)

    async def main() -> None:
        call = asyncio.get_running_loop().create_task(
            registry.ainvoke("send_mail", {"to": "d@example.com"}))
        await started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())
    assert cancelled == [True]
    assert SENT == []
    assert registry.invoke("add", {"a": 2, "b": 2}).content == "4"  # the registry goes on


def test_the_sync_api_inside_a_running_loop_still_asks(registry: ToolRegistry) -> None:
    async def handler(request: ApprovalRequest) -> bool:
        await asyncio.sleep(0)
        return request.arguments["to"] == "e@example.com"

    tp.configure(registry, handler=handler)

    async def main() -> list[str]:
        # A sync call from async code blocks its loop (its own choice); the question is
        # then asked on a helper thread's loop, and answered.
        return [registry.invoke("send_mail", {"to": to}).outcome
                for to in ("e@example.com", "f@example.com")]

    assert asyncio.run(main()) == ["ok", "denied"]
    assert SENT == ["e@example.com"]
