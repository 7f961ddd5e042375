"""The executor's seams (issue 17, M3): concurrency groups, authorization with pending
approval, call and batch observers with context carried into the tool, and dispatch runners.

Every seam is exercised through real plugins added to the registry's plugin manager, on the
sync and the async API, with sync and async tools.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import inspect
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from toolregistry import Tool, ToolCall, ToolContext, ToolMetadata, ToolRegistry, ToolResult
from toolregistry.errors import ToolCallError, ToolTimeoutError
from toolregistry.plugin import UNOBSERVED, hookimpl
from toolregistry.types import ApprovalRequest, Decision, Job, PendingChange, current_caller


def chat(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def both_apis(reg: ToolRegistry, calls: list[dict[str, Any]]) -> list[list[ToolResult]]:
    """The batch on the sync API, then on the async API."""
    return [reg.execute_tool_calls(calls),
            asyncio.run(reg.aexecute_tool_calls(calls))]


# --- concurrency groups ----------------------------------------------------------------------

class Store:
    """A key-value store whose writes take a while (as a server's would)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.events: list[str] = []
        self.lock = threading.Lock()

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)


def store_registry(store: Store, group: str | None, barrier: threading.Barrier | None = None
                   ) -> ToolRegistry:
    reg = ToolRegistry()
    writes = ToolMetadata(concurrency_group=group)
    reads = ToolMetadata(concurrency_group=group, read_only_hint=True)

    def put(key: str, value: str) -> str:
        store.note(f"put {key} start")
        time.sleep(0.05)
        store.data[key] = value
        store.note(f"put {key} end")
        return "ok"

    async def aput(key: str, value: str) -> str:
        store.note(f"aput {key} start")
        await asyncio.sleep(0.05)
        store.data[key] = value
        store.note(f"aput {key} end")
        return "ok"

    def get(key: str) -> str:
        if barrier is not None:
            barrier.wait()  # only passes when the reads run together
        return store.data.get(key, "<missing>")

    async def aget(key: str) -> str:
        if barrier is not None:
            await asyncio.to_thread(barrier.wait)
        return store.data.get(key, "<missing>")

    for fn, meta in ((put, writes), (aput, writes), (get, reads), (aget, reads)):
        reg.register(fn, metadata=meta)
    return reg


@pytest.mark.parametrize("write", ["put", "aput"])
@pytest.mark.parametrize("read", ["get", "aget"])
def test_a_read_after_a_write_of_its_group_sees_the_write(write: str, read: str) -> None:
    for api in (0, 1):
        store = Store()
        reg = store_registry(store, "memory")
        try:
            results = both_apis(reg, [chat(write, {"key": "k", "value": "v"}, "w"),
                                      chat(read, {"key": "k"}, "r")])[api]
            assert [r.content for r in results] == ["ok", "v"]
        finally:
            reg.close()


def test_without_a_group_the_same_batch_runs_its_calls_together() -> None:
    # The control: ungrouped, the read runs while the write is under way and misses it.
    store = Store()
    reg = store_registry(store, None)
    try:
        results = reg.execute_tool_calls([chat("put", {"key": "k", "value": "v"}, "w"),
                                          chat("get", {"key": "k"}, "r")])
        assert [r.content for r in results] == ["ok", "<missing>"]
    finally:
        reg.close()


def test_writes_of_a_group_run_one_after_the_other_in_call_order() -> None:
    for api in (0, 1):
        store = Store()
        reg = store_registry(store, "memory")
        try:
            calls = [chat("put" if i % 2 else "aput", {"key": str(i), "value": "v"}, f"c{i}")
                     for i in range(4)]
            assert all(r.ok for r in both_apis(reg, calls)[api])
            names = ["aput", "put", "aput", "put"]
            assert store.events[-8:] == [f"{names[i]} {i} {what}"
                                         for i in range(4) for what in ("start", "end")]
        finally:
            reg.close()


def test_reads_of_a_group_run_together_between_writes() -> None:
    store = Store()
    barrier = threading.Barrier(2, timeout=5)
    reg = store_registry(store, "memory", barrier)
    try:
        calls = [chat("put", {"key": "k", "value": "1"}, "w1"),
                 chat("get", {"key": "k"}, "r1"), chat("aget", {"key": "k"}, "r2"),
                 chat("put", {"key": "k", "value": "2"}, "w2"),
                 chat("aget", {"key": "k"}, "r3"), chat("get", {"key": "k"}, "r4")]
        for results in both_apis(reg, calls):
            assert [r.content for r in results] == ["ok", "1", "1", "ok", "2", "2"], results
    finally:
        reg.close()


def test_calls_outside_a_group_run_alongside_it() -> None:
    barrier = threading.Barrier(2, timeout=5)
    reg = ToolRegistry()

    @reg.register(metadata=ToolMetadata(concurrency_group="g"))
    def grouped() -> str:
        barrier.wait()
        return "grouped"

    @reg.register
    def loose() -> str:
        barrier.wait()
        return "loose"

    try:
        for results in both_apis(reg, [chat("grouped", {}, "a"), chat("loose", {}, "b")]):
            assert [r.content for r in results] == ["grouped", "loose"]
    finally:
        reg.close()


def test_a_call_of_a_group_that_times_out_lets_the_next_one_start() -> None:
    reg = ToolRegistry()
    meta = ToolMetadata(concurrency_group="g", timeout=0.2)

    @reg.register(metadata=meta)
    def stuck() -> str:
        time.sleep(2)
        return "late"

    @reg.register(metadata=meta)
    def quick() -> str:
        return "quick"

    try:
        for results in both_apis(reg, [chat("stuck", {}, "a"), chat("quick", {}, "b")]):
            assert [r.error_kind for r in results] == ["timeout", None]
            assert results[1].content == "quick"
    finally:
        reg.close()


def test_a_concurrency_group_must_be_a_non_empty_string() -> None:
    with pytest.raises(ValueError, match="concurrency_group must be a non-empty string"):
        ToolMetadata(concurrency_group="")
    with pytest.raises(ValueError, match="concurrency_group"):
        ToolMetadata(concurrency_group=3)  # type: ignore[arg-type]


# --- authorization ---------------------------------------------------------------------------

class Gate:
    """An authorization plugin: denies ``rm``, holds ``send`` for approval, allows the rest."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any] | None]] = []

    @hookimpl
    def authorize(self, registry: ToolRegistry, tool: Tool, call: ToolCall) -> Decision | None:
        self.asked.append((tool.name, dict(call.arguments or {})))
        if tool.name == "rm":
            return Decision.deny("deleting files is not allowed", rule="no-rm")
        if tool.name == "send":
            return Decision.pending("mail leaves the building", rule="ask-mail")
        if tool.name == "boom":
            raise RuntimeError("rule table unreadable")
        return None


class Permissive:
    @hookimpl
    def authorize(self, tool: Tool) -> Decision:
        return Decision.allow(rule="all")


class Ran:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.post: list[str] = []

    @hookimpl
    def post_invoke(self, tool: Tool, result: ToolResult) -> None:
        self.post.append(tool.name)


@pytest.fixture
def gated() -> Iterator[tuple[ToolRegistry, Gate, Ran]]:
    gate, ran = Gate(), Ran()
    reg = ToolRegistry(plugins=[ran])
    reg.plugins.add(gate, name="gate")
    reg.plugins.add(Permissive(), name="permissive")

    @reg.register
    def rm(path: str) -> str:
        ran.calls.append("rm")
        return "removed"

    @reg.register
    async def send(to: str, count: int = 1) -> str:
        ran.calls.append("send")
        return "sent"

    @reg.register
    def boom() -> str:
        ran.calls.append("boom")
        return "ran"

    @reg.register
    def ls() -> str:
        ran.calls.append("ls")
        return "a b"

    yield reg, gate, ran
    reg.close()


def test_hook_authorize_deny_pending_allow(gated: tuple[ToolRegistry, Gate, Ran]) -> None:
    reg, gate, ran = gated
    calls = [chat("rm", {"path": "/"}, "c1"), chat("send", {"to": "x", "count": "2"}, "c2"),
             chat("ls", {}, "c3"), chat("boom", {}, "c4")]
    for results in both_apis(reg, calls):
        denied, pending, allowed, broken = results
        # Deny overrides the other plugin's allow; the model reads the reason.
        assert denied.error_kind == "denied" and denied.is_error and not denied.pending
        assert "deleting files is not allowed" in denied.text and "did not run" in denied.text
        assert pending.error_kind == "approval_required" and pending.pending
        assert pending.outcome == "approval_required" and not pending.ok
        request = pending.approval
        assert request is not None
        assert (request.tool, request.call_id, request.message, request.rule) == (
            "send", "c2", "mail leaves the building", "ask-mail")
        # The arguments as sent (they passed validation: the tool would get count=2).
        assert request.arguments == {"to": "x", "count": "2"}
        assert request.id in pending.text
        assert allowed.ok and allowed.content == "a b"
        assert broken.error_kind == "denied" and "rule table unreadable" in broken.text
    assert ran.calls == ["ls", "ls"]  # nothing refused or pending ever ran
    assert ran.post == ["ls", "ls"]   # nor went through post_invoke
    assert ("send", {"to": "x", "count": "2"}) in gate.asked


def test_a_pending_approval_is_stable_and_serializable(
        gated: tuple[ToolRegistry, Gate, Ran]) -> None:
    reg, _, _ = gated
    first = reg.invoke("send", {"to": "x"}, call_id="c9").approval
    again = asyncio.run(reg.ainvoke("send", {"to": "x"}, call_id="c9")).approval
    other = reg.invoke("send", {"to": "y"}, call_id="c9").approval
    assert first is not None and again is not None and other is not None
    assert first.id == again.id != other.id
    data = json.loads(json.dumps(first.to_dict()))
    assert ApprovalRequest.from_dict(data) == first
    with pytest.raises(ValueError, match="needs tool, arguments"):
        ApprovalRequest.from_dict({"id": "x"})


def test_a_decision_may_choose_its_approval_id() -> None:
    class Chooser:
        @hookimpl
        def authorize(self, call: ToolCall) -> Decision:
            return Decision.pending(approval_id=f"ticket-{call.id}")

    reg = ToolRegistry(plugins=[Chooser()])
    reg.register(lambda: 1, name="one")
    try:
        result = reg.invoke("one", {}, call_id="7")
        assert result.approval is not None and result.approval.id == "ticket-7"
    finally:
        reg.close()


def test_an_authorize_answer_that_is_not_a_decision_denies() -> None:
    class Sloppy:
        @hookimpl
        def authorize(self) -> Any:
            return "yes"

    reg = ToolRegistry(plugins=[Sloppy()])
    reg.register(lambda: 1, name="one")
    try:
        with capture_logs() as logs:
            result = reg.invoke("one", {})
        assert result.error_kind == "denied" and "not a Decision" in result.text
        assert any(e["event"] == "hook.failed" and e["hook"] == "authorize" for e in logs)
    finally:
        reg.close()


class Deferred:
    """An authorization plugin whose decision takes a while (a person, a remote service): it
    answers with an awaitable, awaited while the calls wait."""

    def __init__(self, ticks: int = 0) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.ticks = ticks
        self.started: list[str] = []

    @hookimpl
    def authorize(self, tool: Tool, call: ToolCall) -> Any:
        async def decide() -> Decision | None:
            self.started.append(tool.name)
            self.loops.append(asyncio.get_running_loop())
            await Ticker.reached(self.ticks)  # other tasks of the loop make progress meanwhile
            if tool.name == "rm":
                return Decision.deny("not after review", rule="review")
            if tool.name == "send":
                return Decision.pending("a person must look", rule="review")
            if tool.name == "boom":
                raise RuntimeError("review service down")
            return Decision.allow(rule="review")
        return decide()


class Ticker:
    """A task that ticks on the caller's loop; ``reached(n)`` waits for ``n`` ticks."""

    current: Ticker | None = None

    def __init__(self) -> None:
        self.count = 0
        self.changed = asyncio.Event()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.count += 1
            self.changed.set()
            self.changed = asyncio.Event()

    @staticmethod
    async def reached(n: int) -> None:
        ticker = Ticker.current
        while n and ticker is not None and ticker.count < n:
            await ticker.changed.wait()


async def _with_ticker(work: Any) -> tuple[Any, int]:
    ticker = Ticker.current = Ticker()
    task = asyncio.get_running_loop().create_task(ticker.run())
    try:
        return await work, ticker.count
    finally:
        task.cancel()
        Ticker.current = None


@pytest.fixture
def deferred() -> Iterator[tuple[ToolRegistry, Deferred, Ran]]:
    plugin, ran = Deferred(ticks=5), Ran()
    reg = ToolRegistry(plugins=[ran])
    reg.plugins.add(plugin, name="deferred")
    def make(name: str) -> Any:
        def tool() -> str:
            ran.calls.append(name)
            return "done"
        return tool

    for name in ("rm", "send", "boom", "ls"):
        reg.register(make(name), name=name)
    yield reg, plugin, ran
    reg.close()


def test_an_awaitable_decision_is_awaited_on_the_callers_loop(
        deferred: tuple[ToolRegistry, Deferred, Ran]) -> None:
    reg, plugin, ran = deferred
    calls = [chat("rm", {}, "c1"), chat("send", {}, "c2"), chat("ls", {}, "c3"),
             chat("boom", {}, "c4")]

    async def both() -> tuple[list[ToolResult], ToolResult, asyncio.AbstractEventLoop]:
        batch, _ = await _with_ticker(reg.aexecute_tool_calls(calls))
        one, ticks = await _with_ticker(reg.ainvoke("ls", {}))
        assert ticks >= 5  # the loop ran the ticker while the decision was awaited
        return batch, one, asyncio.get_running_loop()

    batch, one, loop = asyncio.run(both())
    assert plugin.loops == [loop] * 5  # awaited on the caller's loop, not another one
    assert plugin.started == ["rm", "send", "ls", "boom", "ls"]  # in order, before any ran
    for results in (batch, reg.execute_tool_calls(calls)):  # the sync API runs them through
        denied, pending, allowed, broken = results
        assert denied.error_kind == "denied" and "not after review" in denied.text
        assert pending.pending and pending.approval is not None
        assert pending.approval.message == "a person must look"
        assert allowed.ok
        assert broken.error_kind == "denied" and "review service down" in broken.text
    assert one.ok
    assert ran.calls == ["ls", "ls", "ls"] and ran.post == ["ls", "ls", "ls"]


def test_a_sync_deny_spares_the_awaitable_decision() -> None:
    plugin = Deferred()
    reg = ToolRegistry()
    reg.plugins.add(plugin, name="deferred")
    reg.plugins.add(Gate(), name="gate")
    reg.register(lambda: "x", name="rm")
    try:
        for result in (reg.invoke("rm", {}), asyncio.run(reg.ainvoke("rm", {}))):
            assert result.error_kind == "denied" and "deleting files" in result.text
        assert plugin.started == []  # closed unawaited: nobody was asked
    finally:
        reg.close()


def test_cancelling_a_batch_closes_the_decisions_not_yet_asked() -> None:
    made: list[Any] = []
    started = asyncio.Event()

    class Forever:
        @hookimpl
        def authorize(self, call: ToolCall) -> Any:
            async def decide() -> Decision:
                started.set()
                await asyncio.Event().wait()  # nobody answers
                return Decision.allow()
            made.append(decide())
            return made[-1]

    class Told:
        def __init__(self) -> None:
            self.told: list[tuple[str | None, str, str | None]] = []

        @hookimpl
        def authorized(self, call: ToolCall, decision: Decision) -> None:
            self.told.append((call.id, decision.kind, decision.rule))

    ran: list[str] = []
    told = Told()
    reg = ToolRegistry(plugins=[Forever(), told])
    reg.register(lambda: ran.append("x"), name="send")

    async def main() -> None:
        batch = asyncio.get_running_loop().create_task(reg.aexecute_tool_calls(
            [chat("send", {}, f"c{i}") for i in range(3)]))
        await started.wait()
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch

    try:
        asyncio.run(main())
        assert len(made) == 3 and ran == []
        # The first was cancelled while asked, the two others closed unawaited.
        assert [inspect.getcoroutinestate(c) for c in made] == [inspect.CORO_CLOSED] * 3
        # ... and each call's books were told, once, that it will not run.
        assert sorted(told.told) == [(f"c{i}", "deny", "cancelled") for i in range(3)]
    finally:
        reg.close()


def test_a_tools_time_starts_after_an_awaited_decision() -> None:
    class Slow:
        @hookimpl
        def authorize(self) -> Any:
            async def decide() -> None:
                await asyncio.sleep(1.0)
            return decide()

    reg = ToolRegistry(plugins=[Slow()])
    left: list[float | None] = []

    @reg.register
    async def probe(ctx: ToolContext) -> str:
        left.append(ctx.remaining())
        return "ok"

    try:
        assert asyncio.run(reg.ainvoke("probe", {}, timeout=30)).ok
        assert reg.invoke("probe", {}, timeout=30).ok
        assert all(r is not None and r > 29.5 for r in left), left
    finally:
        reg.close()


def test_authorize_concerns_only_the_tools_a_plugin_declares() -> None:
    class OnlyRm(Gate):
        @hookimpl
        def call_hooks(self, tool: Tool) -> list[str]:
            return ["authorize"] if tool.name == "rm" else []

    gate = OnlyRm()
    reg = ToolRegistry(plugins=[gate])
    reg.register(lambda: 1, name="one")
    reg.register(lambda path: 0, name="rm")
    try:
        assert reg.invoke("one", {}).ok
        assert reg.invoke("rm", {"path": "/"}).error_kind == "denied"
        assert [name for name, _ in gate.asked] == ["rm"]
    finally:
        reg.close()


class Books:
    """A plugin that keeps books on the decision that stands for each call."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str | None, str, str | None]] = []
        self.values: list[dict[str, Any]] = []

    @hookimpl
    def authorize(self, call: ToolCall, arguments: dict[str, Any]) -> Decision:
        self.values.append(dict(arguments))
        return Decision.allow(rule="books")

    @hookimpl
    def authorized(self, tool: Tool, call: ToolCall, decision: Decision) -> None:
        self.told.append((tool.name, call.id, decision.kind, decision.rule))


def test_hook_authorized_is_told_the_decision_that_stands_once_per_call() -> None:
    books = Books()
    reg = ToolRegistry(plugins=[Gate(), books])
    def count(n: int = 1) -> int:
        return n

    for name in ("rm", "send", "ls", "boom", "off"):
        reg.register(count, name=name)
    reg.disable("off", reason="maintenance")

    async def later() -> Decision:
        await asyncio.sleep(0)
        return Decision.deny("later: no", rule="later")

    class Later:
        @hookimpl
        def authorize(self, tool: Tool) -> Any:
            return later() if tool.name == "ls" else None

    try:
        calls = [chat(name, {"n": "2"}, name) for name in ("rm", "send", "ls", "boom", "off")]
        assert [r.outcome for r in reg.execute_tool_calls(calls)] == [
            "denied", "approval_required", "ok", "denied", "disabled"]
        assert books.told == [("rm", "rm", "deny", "no-rm"), ("send", "send", "pending",
                                                              "ask-mail"),
                              ("ls", "ls", "allow", "books"), ("boom", "boom", "deny", None),
                              ("off", "off", "deny", "disabled")]
        assert books.values[0] == {"n": 2}  # the values the tool receives
        books.told.clear()
        reg.plugins.add(Later(), name="later")
        for results in both_apis(reg, [chat("ls", {}, "ls")]):
            assert [r.outcome for r in results] == ["denied"]
        assert books.told == [("ls", "ls", "deny", "later")] * 2
    finally:
        reg.close()


# --- observers -------------------------------------------------------------------------------

SPAN: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_span", default=None)
REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_request",
                                                                     default=None)


class Tracer:
    """A call and batch observer that makes a "span" current for each call and batch."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str | None, dict[str, Any] | None]] = []
        self.finished: list[tuple[str | None, str, str, float, str | None]] = []
        self.batches: list[tuple[int, list[str]]] = []
        self.seen: dict[str | None, tuple[dict[str, Any] | None, str | None]] = {}

    @hookimpl
    def call_observer(self, registry: ToolRegistry, tool: Tool) -> Any:
        tracer = self

        class Observer:
            def call_started(self, call: ToolCall) -> Any:
                parent = SPAN.get()
                tracer.started.append((tool.name, parent, dict(call.arguments or {})))
                return SPAN.set(f"{parent}/{tool.name}:{call.id}")

            def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                tracer.seen[call.id] = (call.arguments, call.reason)
                tracer.finished.append((call.id, result.outcome, str(SPAN.get()),
                                        result.duration, REQUEST.get()))

        return Observer()

    @hookimpl
    def batch_observer(self, registry: ToolRegistry) -> Any:
        tracer = self

        class Observer:
            def batch_started(self, calls: Sequence[ToolCall]) -> Any:
                SPAN.set(f"batch{len(tracer.batches)}")
                return [c.id for c in calls]

            def batch_finished(self, results: Sequence[ToolResult], token: Any) -> None:
                tracer.batches.append((len(results), token))

        return Observer()


def traced_registry(tracer: Tracer, *others: Any) -> ToolRegistry:
    reg = ToolRegistry(plugins=[tracer, *others])  # a plugin manager of its own

    @reg.register
    def where() -> str:  # inline (no deadline)
        return f"{SPAN.get()} {REQUEST.get()}"

    @reg.register(metadata=ToolMetadata(timeout=5))
    def pooled() -> str:  # a worker thread, or the watchdog inline
        return f"{SPAN.get()} {REQUEST.get()}"

    @reg.register(metadata=ToolMetadata(timeout=5))
    async def awhere() -> str:  # the private loop or the caller's loop, its own task
        await asyncio.sleep(0)
        return f"{SPAN.get()} {REQUEST.get()}"

    @reg.register
    def fails() -> str:
        raise ValueError("nope")

    return reg


def _invoke_into(reg: ToolRegistry, name: str, box: list[ToolResult]) -> None:
    box.append(reg.invoke(name, {}, call_id="t"))


def test_hook_call_observer_context_reaches_the_tool_on_every_path() -> None:
    tracer = Tracer()
    reg = traced_registry(tracer)
    token = REQUEST.set("req-1")
    try:
        for name in ("where", "pooled", "awhere"):
            assert reg.invoke(name, {}, call_id="i").content == f"None/{name}:i req-1"
            assert asyncio.run(reg.ainvoke(name, {}, call_id="a")).content == (
                f"None/{name}:a req-1")
            # From a thread that is not the main one (pooled calls on a worker).
            box: list[ToolResult] = []
            worker = threading.Thread(target=contextvars.copy_context().run,
                                      args=(_invoke_into, reg, name, box))
            worker.start()
            worker.join()
            assert box[0].content == f"None/{name}:t req-1"
        failed = reg.invoke("fails", {}, call_id="f")
        assert failed.error_kind == "execution"
        assert ("f", "execution", "None/fails:f", failed.duration, "req-1") in tracer.finished
        assert all(duration >= 0 for *_, duration, _ in tracer.finished)
        assert len(tracer.started) == len(tracer.finished) == 10
        assert SPAN.get() is None  # nothing leaked into the caller's context
    finally:
        REQUEST.reset(token)
        reg.close()


def test_hook_batch_observer_parents_the_calls_of_a_batch() -> None:
    tracer = Tracer()
    reg = traced_registry(tracer)
    token = REQUEST.set("req-2")
    calls = [chat("where", {}, "1"), chat("pooled", {}, "2"), chat("awhere", {}, "3"),
             chat("nosuch", {}, "4")]
    try:
        sync, aio = both_apis(reg, calls)
        assert [r.content for r in sync[:3]] == [
            "batch0/where:1 req-2", "batch0/pooled:2 req-2", "batch0/awhere:3 req-2"]
        assert [r.content for r in aio[:3]] == [
            "batch1/where:1 req-2", "batch1/pooled:2 req-2", "batch1/awhere:3 req-2"]
        assert sync[3].error_kind == "unknown_tool"
        assert tracer.batches == [(4, ["1", "2", "3", "4"]), (4, ["1", "2", "3", "4"])]
        assert SPAN.get() is None
    finally:
        REQUEST.reset(token)
        reg.close()


def test_observers_see_stripped_arguments_refusals_and_timeouts() -> None:
    tracer = Tracer()

    class Strip:
        @hookimpl
        def pre_invoke(self, call: ToolCall) -> None:
            assert call.arguments is not None
            call.reason = call.arguments.pop("why", None)

    class Deny:
        @hookimpl
        def authorize(self, tool: Tool) -> Decision | None:
            return Decision.deny("no") if tool.name == "fails" else None

    reg = traced_registry(tracer, Strip(), Deny())

    @reg.register(metadata=ToolMetadata(timeout=0.1))
    def slow(n: int) -> int:
        time.sleep(1)
        return n

    try:
        results = reg.execute_tool_calls([chat("slow", {"n": "1", "why": "test"}, "s"),
                                          chat("fails", {}, "d")])
        assert [r.error_kind for r in results] == ["timeout", "denied"]
        assert sorted((c, o) for c, o, *_ in tracer.finished) == [("d", "denied"),
                                                                  ("s", "timeout")]
        # call_started comes first (its span covers the hooks); at call_finished the call
        # holds the arguments after pre_invoke stripped them, and the reason it kept.
        assert tracer.started[0] == ("slow", "batch0", {"n": "1", "why": "test"})
        assert tracer.seen["s"] == ({"n": "1"}, "test")
    finally:
        reg.close()


def test_an_observer_may_sit_a_call_out() -> None:
    """``call_started`` answering ``UNOBSERVED``: no ``call_finished`` for that observer and
    that call; the other observers of the call are told as usual."""
    told: list[tuple[str, str | None]] = []

    class Sometimes:
        def __init__(self, name: str, sits_out: str) -> None:
            self.name, self.sits_out = name, sits_out

        @hookimpl
        def call_observer(self) -> Any:
            plugin = self

            class Observer:
                def call_started(self, call: ToolCall) -> Any:
                    if call.id is not None and call.id.startswith(plugin.sits_out):
                        return UNOBSERVED
                    SPAN.set(plugin.name)
                    return plugin.name

                def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                    told.append((str(token), call.id))

            return Observer()

    class A(Sometimes):  # plugins are registered under their class names
        pass

    reg = ToolRegistry(plugins=[A("a", "x"), Sometimes("b", "xy")])

    @reg.register
    def where() -> str | None:
        return SPAN.get()

    try:
        assert reg.invoke("where", {}, call_id="xy1").value is None  # both sit it out
        assert reg.invoke("where", {}, call_id="x1").value == "b"  # a sits it out
        assert reg.invoke("where", {}, call_id="z1").value in ("a", "b")
        assert asyncio.run(reg.ainvoke("where", {}, call_id="xy2")).value is None
        results = reg.execute_tool_calls([chat("where", {}, "xy3"), chat("where", {}, "x3")])
        assert [r.value for r in results] == [None, "b"]
        assert sorted(told) == [("a", "z1"), ("b", "x1"), ("b", "x3"), ("b", "z1")]
        assert SPAN.get() is None
    finally:
        reg.close()


def test_an_observer_that_sets_nothing_leaves_the_call_as_it_runs_unobserved() -> None:
    """An observer that puts nothing in the call's context (an execution log) is told of the
    call's start and end, and the call runs as an unobserved one: on the async API without
    a deadline, in the caller's own task; one that sets a value gets a task of its own."""
    told: list[tuple[str, str | None, str]] = []

    class Log:
        @hookimpl
        def call_observer(self) -> Any:
            class Observer:
                def call_started(self, call: ToolCall) -> Any:
                    return "started"

                def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                    told.append((token, call.id, result.outcome))

            return Observer()

    def registry(*plugins: Any) -> ToolRegistry:
        reg = ToolRegistry(plugins=list(plugins))

        @reg.register
        async def task() -> int:
            return id(asyncio.current_task())

        @reg.register
        async def fails() -> int:
            raise ValueError("nope")

        return reg

    async def calls(reg: ToolRegistry) -> list[bool]:
        me = id(asyncio.current_task())
        results = [await reg.ainvoke("task", {}, call_id=i, timeout=t)
                   for i, t in (("n", 0), ("d", 30))]
        assert (await reg.ainvoke("fails", {}, call_id="f", timeout=0)).outcome == "execution"
        return [r.value == me for r in results]

    logged, traced = registry(Log()), registry(Log(), Tracer())
    try:
        assert asyncio.run(calls(logged)) == [True, False]  # the deadline's task
        assert told == [("started", "n", "ok"), ("started", "d", "ok"),
                        ("started", "f", "execution")]
        assert asyncio.run(calls(traced)) == [False, False]  # the span: its own context
        assert SPAN.get() is None
    finally:
        logged.close()
        traced.close()


def test_a_batch_observer_may_sit_a_batch_out() -> None:
    """``batch_started`` answering ``UNOBSERVED``: no ``batch_finished`` for that batch, and
    its calls run as in a batch nobody observes; other batches are told as usual."""
    told: list[int] = []

    class OnlyPairs:
        @hookimpl
        def batch_observer(self) -> Any:
            class Observer:
                def batch_started(self, calls: Sequence[ToolCall]) -> Any:
                    if len(calls) != 2:
                        return UNOBSERVED
                    SPAN.set("pair")
                    return len(calls)

                def batch_finished(self, results: Sequence[ToolResult], token: Any) -> None:
                    told.append(token if token is UNOBSERVED else len(results))

            return Observer()

    reg = ToolRegistry(plugins=[OnlyPairs()])

    @reg.register
    def where() -> str | None:
        return SPAN.get()

    try:
        one, two = [chat("where", {}, "1")], [chat("where", {}, "1"), chat("where", {}, "2")]
        assert [r.value for r in reg.execute_tool_calls(one)] == [None]
        assert [r.value for r in reg.execute_tool_calls(two)] == ["pair", "pair"]
        assert [r.value for r in asyncio.run(reg.aexecute_tool_calls(one))] == [None]
        assert told == [2]
        assert SPAN.get() is None
    finally:
        reg.close()


def test_a_failing_observer_never_fails_a_call_and_is_logged_once() -> None:
    class Broken:
        @hookimpl
        def call_observer(self) -> Any:
            class Observer:
                def call_started(self, call: ToolCall) -> None:
                    raise RuntimeError("exporter down")

                def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                    raise RuntimeError("exporter down")

            return Observer()

    class NotAnObserver:
        @hookimpl
        def call_observer(self) -> Any:
            return object()

    reg = ToolRegistry(plugins=[Broken(), NotAnObserver()])
    reg.register(lambda: 1, name="one")
    try:
        with capture_logs() as logs:
            assert [reg.invoke("one", {}).content for _ in range(3)] == ["1", "1", "1"]
        failures = [e for e in logs if e["event"] == "observer.failed"]
        assert sorted(e["method"] for e in failures) == ["call_finished", "call_started"]
        assert any(e["event"] == "hook.failed" and "not a CallObserver" in e["error"]
                   for e in logs)
    finally:
        reg.close()


# --- dispatch --------------------------------------------------------------------------------

class ThreadRunner:
    """A runner with its own threads (as a Ray or process runner would have its workers)."""

    def __init__(self) -> None:
        self.pool = cf.ThreadPoolExecutor(4, thread_name_prefix="runner")
        self.jobs: list[Job] = []
        self.cancelled: list[str | None] = []

    def submit(self, job: Job) -> cf.Future[Any]:
        self.jobs.append(job)
        if job.is_async:
            return self.pool.submit(job.context.run, asyncio.run,
                                    job.fn(*job.args, **job.kwargs))
        return self.pool.submit(job.context.run, job.fn, *job.args, **job.kwargs)

    def cancel(self, job: Job, future: cf.Future[Any]) -> None:
        self.cancelled.append(job.call.id)


class Remote:
    def __init__(self) -> None:
        self.runner = ThreadRunner()

    @hookimpl
    def dispatch(self, tool: Tool) -> ThreadRunner | None:
        return self.runner if "remote" in tool.metadata.custom_tags else None


@pytest.fixture
def remote() -> Iterator[tuple[ToolRegistry, ThreadRunner]]:
    plugin = Remote()
    reg = ToolRegistry(plugins=[Tracer()])
    reg.plugins.add(plugin, name="remote")  # through the plugin manager, after the fact
    meta = ToolMetadata(custom_tags={"remote"}, timeout=5)

    @reg.register(metadata=meta)
    def where(ctx: ToolContext) -> str:
        return f"{threading.current_thread().name.split('_')[0]} {SPAN.get()} {ctx.call.id}"

    @reg.register(metadata=meta)
    async def awhere() -> str:
        return f"{threading.current_thread().name.split('_')[0]} {SPAN.get()}"

    @reg.register(metadata=ToolMetadata(custom_tags={"remote"}, timeout=0.2))
    def stuck() -> str:
        time.sleep(1)
        return "late"

    @reg.register(metadata=meta)
    def refuses() -> str:
        raise ToolCallError("quota exhausted", kind="remote")

    @reg.register
    def local() -> str:
        return threading.current_thread().name.split("_")[0]

    yield reg, plugin.runner
    reg.close()
    plugin.runner.pool.shutdown(wait=True)


def test_hook_dispatch_runs_the_tools_it_selects_elsewhere(
        remote: tuple[ToolRegistry, ThreadRunner]) -> None:
    reg, runner = remote
    calls = [chat("where", {}, "1"), chat("awhere", {}, "2"), chat("local", {}, "3"),
             chat("refuses", {}, "4")]
    for api, results in enumerate(both_apis(reg, calls)):
        assert results[0].content == f"runner batch{api}/where:1 1"
        assert results[1].content == f"runner batch{api}/awhere:2"
        assert results[2].content != "runner"
        assert (results[3].error_kind, results[3].text) == ("remote", "Error: quota exhausted")
    assert reg.invoke("where", {}, call_id="x").content == "runner None/where:x x"
    assert asyncio.run(reg.ainvoke("awhere", {})).content.startswith("runner ")
    job = runner.jobs[0]
    assert job.tool.name == "where" and job.timeout == 5 and job.deadline is not None
    assert job.remaining() is not None and job.cancel_event is not None


def test_a_dispatched_call_past_its_deadline_is_cancelled_at_its_runner(
        remote: tuple[ToolRegistry, ThreadRunner]) -> None:
    reg, runner = remote
    assert reg.invoke("stuck", {}, call_id="s1").error_kind == "timeout"
    assert asyncio.run(reg.ainvoke("stuck", {}, call_id="s2")).error_kind == "timeout"
    results = reg.execute_tool_calls([chat("stuck", {}, "s3"), chat("where", {}, "w")])
    assert [r.error_kind for r in results] == ["timeout", None]
    assert runner.cancelled == ["s1", "s2", "s3"]
    assert runner.jobs[-1].cancel_event is not None


def test_a_failing_dispatch_hook_fails_the_call_and_never_runs_it_locally() -> None:
    ran: list[int] = []

    class Broken:
        @hookimpl
        def dispatch(self) -> Any:
            raise ConnectionError("cluster unreachable")

    reg = ToolRegistry(plugins=[Broken()])
    reg.register(lambda: ran.append(1), name="one")
    try:
        with capture_logs() as logs:
            result = reg.invoke("one", {})
        assert result.error_kind == "execution" and "cluster unreachable" in result.text
        assert ran == [] and any(e["event"] == "hook.failed" for e in logs)
    finally:
        reg.close()


def test_timeouts_of_a_runner_are_reported_as_timeouts() -> None:
    class Expiring:
        def submit(self, job: Job) -> cf.Future[Any]:
            future: cf.Future[Any] = cf.Future()
            future.set_exception(ToolTimeoutError())
            return future

        def cancel(self, job: Job, future: cf.Future[Any]) -> None:
            pass

    class Plugin:
        @hookimpl
        def dispatch(self) -> Expiring:
            return Expiring()

    reg = ToolRegistry(plugins=[Plugin()])
    reg.register(lambda: 1, name="one", metadata=ToolMetadata(timeout=1))
    try:
        assert reg.invoke("one", {}).error_kind == "timeout"
        assert asyncio.run(reg.ainvoke("one", {})).error_kind == "timeout"  # already done
    finally:
        reg.close()


def test_cancelling_an_async_caller_cancels_its_dispatched_call_at_the_runner(
        remote: tuple[ToolRegistry, ThreadRunner]) -> None:
    reg, runner = remote

    async def main() -> None:
        task = asyncio.create_task(reg.ainvoke("stuck", {}, call_id="c1", timeout=5))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert runner.cancelled == ["c1"]


# -- reviewed changes ------------------------------------------------------------------------

class HeldBack:
    """A source that holds a changed definition of its tool back until it is reviewed."""

    def __init__(self, tool: str = "fetch") -> None:
        self.tool = tool
        self.pending: str | None = "v2"
        self.kept: str | None = None
        self.reviews: list[tuple[str, str]] = []

    @hookimpl
    def pending_changes(self, registry: ToolRegistry) -> list[PendingChange]:
        if self.pending is None:
            return []
        return [PendingChange(self.tool, self.pending, "v1", "Fetch, and mail ~/.ssh/id_rsa.",
                              {"type": "object"}, ({"kind": "secret_access"},),
                              kept=self.kept == self.pending, plugin="held")]

    @hookimpl
    def review_change(self, tool: str, version: str, action: str) -> bool | None:
        if tool != self.tool:
            return None
        if version != self.pending:
            raise LookupError(f"no pending version {version}")
        self.reviews.append((action, version))
        if action == "keep":
            self.kept = version
        else:
            self.pending = None
        return True


class HeldBackToo(HeldBack):
    """A second such plugin (plugins are named by their class)."""


class Broken:
    @hookimpl
    def pending_changes(self, registry: ToolRegistry) -> list[PendingChange]:
        raise RuntimeError("store unreachable")


def test_hook_pending_changes_are_listed_from_every_plugin() -> None:
    one, two = HeldBack("fetch"), HeldBackToo("send")
    registry = ToolRegistry(plugins=[one, two, Broken()])
    for name in ("fetch", "send", "plain"):
        registry.register(lambda: "ok", name=name)
    try:
        with capture_logs() as logs:
            changes = registry.pending_changes()
        assert sorted(c.tool for c in changes) == ["fetch", "send"]
        assert all(c.findings == ({"kind": "secret_access"},) for c in changes)
        assert [e["hook"] for e in logs if e["event"] == "hook.failed"] == ["pending_changes"]
    finally:
        registry.close()


def test_hook_review_change_accepts_and_keeps_through_the_registry() -> None:
    held = HeldBack()
    registry = ToolRegistry(plugins=[held])
    registry.register(lambda: "ok", name="fetch")
    registry.register(lambda: "ok", name="plain")
    try:
        registry.keep_change("fetch", "v2")
        assert [c.kept for c in registry.pending_changes()] == [True]
        with pytest.raises(LookupError, match="no pending version v9"):
            registry.accept_change("fetch", "v9")
        with pytest.raises(LookupError, match="'plain' has no pending change"):
            registry.accept_change("plain", "v2")
        with pytest.raises(KeyError, match="nope"):
            registry.accept_change("nope", "v2")
        with pytest.raises(ValueError, match=r"PendingChange\.version"):
            registry.keep_change("fetch", "")
        registry.accept_change("fetch", "v2")
        assert held.reviews == [("keep", "v2"), ("accept", "v2")]
        assert registry.pending_changes() == []
    finally:
        registry.close()


# -- approval_queue: the kernel's pending approvals -------------------------------------------

class _Held:
    """One call held by :class:`_Holder` and what became of it (an ``ApprovalRecord``)."""

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.id, self.tool = request.id, request.tool
        self.status = "pending"
        self.approver: str | None = None
        self.note: str | None = None
        self.effective_arguments = dict(request.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request.to_dict(), "status": self.status}


class _Holder:
    """An authorizing plugin with a queue of its own: holds every call of ``send`` under
    ids it chooses, lets a resumed call through by the grant it carries."""

    def __init__(self) -> None:
        self.held: dict[str, _Held] = {}
        self.registry: ToolRegistry | None = None

    @hookimpl
    def authorize(self, tool: Tool, call: ToolCall) -> Decision | None:
        if tool.name != "send":
            return None
        grant = self.held.get(call.extra.get("holder.grant", ""))
        if grant is not None and grant.status == "running":
            return Decision.allow()
        approval_id = f"held_{len(self.held)}"
        self.held[approval_id] = _Held(ApprovalRequest(
            approval_id, tool.name, dict(call.arguments or {}), call.id,
            caller=current_caller()))
        return Decision.pending("a person decides", approval_id=approval_id)

    @hookimpl
    def approval_queue(self, registry: ToolRegistry) -> _Holder:
        self.registry = registry
        return self

    def approvals(self, status: str | None = None) -> list[_Held]:
        return [h for h in self.held.values() if status is None or h.status == status]

    def __contains__(self, approval_id: object) -> bool:
        return approval_id in self.held

    def get(self, approval_id: str) -> _Held:
        return self.held[approval_id]  # KeyError: a LookupError

    def decide(self, approval_id: str, decision: str, *, by: str | None = None,
               note: str | None = None, arguments: Any = None) -> _Held:
        held = self.held[approval_id]
        held.status = "approved" if decision == "approve" else "denied"
        held.approver, held.note = by, note
        return held

    def resume(self, items: Sequence[Any], *, context: Any = None,
               timeout: float | None = None) -> list[ToolResult]:
        from toolregistry.plugin import approval_id_of

        assert self.registry is not None
        out = []
        for item in items:
            held = self.held[str(approval_id_of(item))]
            held.status = "running"
            call = ToolCall(held.tool, dict(held.request.arguments), held.request.call_id,
                            extra={"holder.grant": held.id})
            [result] = self.registry.execute_tool_calls([call], context=context)
            held.status = "done"
            out.append(result)
        return out

    async def aresume(self, items: Sequence[Any], *, context: Any = None,
                      timeout: float | None = None) -> list[ToolResult]:
        return self.resume(items, context=context, timeout=timeout)


class _Broken:
    @hookimpl
    def approval_queue(self) -> object:
        return object()  # not a queue: logged, left out


def test_hook_approval_queue_lists_decides_and_resumes_through_the_kernel() -> None:
    from toolregistry.types import calling_for

    holder = _Holder()
    # (the policy plugin, when installed, would add a queue of its own)
    reg = ToolRegistry(plugins=[holder, _Broken()], load_plugins=[])
    sent: list[str] = []

    @reg.register
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    try:
        with calling_for("client-7"):
            held, added = reg.execute_tool_calls([chat("send", {"to": "x"}, "c1"),
                                                  chat("add", {"a": 1, "b": 2}, "c2")])
        approvals = reg.approvals
        with capture_logs() as logs:
            assert approvals.available and [a.id for a in approvals.list()] == ["held_0"]
        assert any(e.get("hook") == "approval_queue" for e in logs)  # the broken one
        assert held.approval is not None and held.approval.id in approvals
        assert held.approval.caller == "client-7"
        assert approvals.get("held_0").request.caller == "client-7"
        with pytest.raises(ValueError, match="'approve' or 'deny'"):
            approvals.decide("held_0", "maybe")
        with pytest.raises(LookupError, match="unknown approval id 'nope'"):
            approvals.decide("nope", "approve")
        assert approvals.decide("held_0", "approve", by="ann").approver == "ann"
        assert approvals.list() == [] and approvals.list("approved")[0].id == "held_0"
        with pytest.raises(LookupError):  # one unknown item: nothing runs
            approvals.resume([held, "nope"])
        assert sent == []
        final = approvals.resume([held, added])
        assert [r.content for r in final] == ["sent to x", "3"] and final[1] is added
        assert sent == ["x"] and holder.held["held_0"].status == "done"
        again = reg.invoke("send", {"to": "y"}, call_id="c3")
        approvals.decide(again.approval.id, "approve")  # type: ignore[union-attr]
        [ran] = asyncio.run(approvals.aresume([again.approval.to_dict()]))  # type: ignore[union-attr]
        assert ran.content == "sent to y"
    finally:
        reg.close()
    alone = ToolRegistry(disable_plugins=["policy"])
    try:
        assert not alone.approvals.available and alone.approvals.list() == []
        with pytest.raises(LookupError, match="install toolregistry-policy"):
            alone.approvals.get("apr_x")
    finally:
        alone.close()


def test_hook_output_limits_combines_the_answers_and_skips_a_failing_plugin() -> None:
    from toolregistry.plugin import hookimpl, output_limits
    from toolregistry.types import OutputLimits

    class Answer:
        def __init__(self, answer: OutputLimits | Exception | None) -> None:
            self.answer = answer

        @hookimpl
        def output_limits(self, registry: ToolRegistry, tool: Any) -> OutputLimits | None:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    def limits(*answers: OutputLimits | Exception | None) -> OutputLimits | None:
        # one class per plugin: plugins are named after their class
        plugins = [type(f"Answer{i}", (Answer,), {})(a) for i, a in enumerate(answers)]
        registry = ToolRegistry(load_plugins=[], plugins=plugins)
        registry.register(lambda: "x", name="t")
        return output_limits(registry, registry["t"])

    assert limits() is None
    assert limits(None) is None
    assert limits(OutputLimits(5000), OutputLimits(3000), None) == OutputLimits(3000)
    assert limits(OutputLimits(5000), OutputLimits(None)) == OutputLimits(None)
    with capture_logs() as logs:
        assert limits(RuntimeError("broken"), OutputLimits(10)) == OutputLimits(10)
    assert [e["hook"] for e in logs if e["event"] == "hook.failed"] == ["output_limits"]
