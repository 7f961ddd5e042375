"""Validated, concurrent execution of model tool calls (issue 4, "Execution")."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Literal

import pydantic
import pytest
import structlog
from structlog.testing import capture_logs

from toolregistry import (
    RetryPolicy,
    Tool,
    ToolCall,
    ToolContext,
    ToolMetadata,
    ToolRegistry,
    ToolResult,
    hookimpl,
)
from toolregistry.errors import ToolCallError


def chat(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


class Unit(enum.Enum):
    C = "c"
    F = "f"


@dataclasses.dataclass
class Window:
    start: int
    end: int


class Place(pydantic.BaseModel):
    city: str
    country: str = "JP"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def reg(registry: ToolRegistry) -> ToolRegistry:
    registry.register(add)
    return registry


def run_all(registry: ToolRegistry, name: str, arguments: Any) -> list[ToolResult]:
    """The same call through every path: invoke, ainvoke, execute_tool_calls, aexecute."""
    calls = [chat(name, arguments, "c1")]

    async def both() -> tuple[ToolResult, list[ToolResult]]:
        return (await registry.ainvoke(name, arguments, call_id="c1"),
                await registry.aexecute_tool_calls(calls))

    a, batch = asyncio.run(both())
    return [registry.invoke(name, arguments, call_id="c1"), a,
            registry.execute_tool_calls(calls)[0], batch[0]]


# --- validation -------------------------------------------------------------------------------

def test_valid_calls_on_every_path(reg: ToolRegistry) -> None:
    for result in run_all(reg, "add", {"a": 2, "b": 3}):
        assert (result.ok, result.content, result.value, result.call_id) == (True, "5", 5, "c1")


@pytest.mark.parametrize("arguments, fragments", [
    ({"a": 1}, ["b: required argument missing"]),
    ({"a": "x", "b": 1}, ["a: Input should be a valid integer", "(got 'x')"]),
    ({"a": 1, "b": 2, "c": 3}, ["c: unexpected argument"]),
])
def test_invalid_arguments_on_every_path(reg: ToolRegistry, arguments: dict[str, Any],
                                         fragments: list[str]) -> None:
    for result in run_all(reg, "add", arguments):
        assert result.is_error and result.error_kind == "invalid_arguments"
        assert result.text.startswith("Error: invalid arguments for tool 'add'")
        for fragment in fragments:
            assert fragment in result.text
        assert "call it again" in result.text


def test_schema_first_tools_are_validated_on_every_path(registry: ToolRegistry) -> None:
    seen: list[dict[str, Any]] = []

    def lookup(**kw: Any) -> str:
        seen.append(kw)
        return "ok"

    registry.register(Tool(
        name="lookup", description="Look up.", callable=lookup,
        parameters={"type": "object", "properties": {
            "q": {"type": "string", "minLength": 2},
            "limit": {"type": "integer", "maximum": 10}},
            "required": ["q"], "additionalProperties": False}))
    for result in run_all(registry, "lookup", {"q": "x", "limit": 50}):
        assert result.error_kind == "invalid_arguments"
        assert "q:" in result.text and "limit:" in result.text
    assert seen == []
    for result in run_all(registry, "lookup", {"q": "tea"}):
        assert result.ok
    assert seen == [{"q": "tea"}] * 4


def test_schema_first_remote_refs_are_not_fetched(registry: ToolRegistry) -> None:
    registry.register(Tool(
        name="remote", callable=lambda **kw: "ran",
        parameters={"type": "object",
                    "properties": {"x": {"$ref": "http://127.0.0.1:9/never.json"}}}))
    result = registry.invoke("remote", {"x": 1})
    assert result.is_error and "remote" in result.text


def test_enum_dataclass_and_pydantic_parameters_arrive_as_those_types(
        registry: ToolRegistry) -> None:
    received: dict[str, Any] = {}

    @registry.register
    def plan(unit: Unit, window: Window, place: Place, kind: Literal["a", "b"] = "a") -> str:
        """Plan."""
        received.update(unit=unit, window=window, place=place, kind=kind)
        return "ok"

    args = {"unit": "f", "window": {"start": 1, "end": 2}, "place": {"city": "Kyoto"}}
    for result in run_all(registry, "plan", args):
        assert result.ok, result.text
        assert received["unit"] is Unit.F
        assert received["window"] == Window(1, 2)
        assert received["place"] == Place(city="Kyoto", country="JP")
        assert received["kind"] == "a"
    bad = registry.invoke("plan", {**args, "unit": "k"})
    assert bad.error_kind == "invalid_arguments" and "unit" in bad.text


def test_safe_coercion_for_python_tools(registry: ToolRegistry) -> None:
    @registry.register
    def f(n: int, x: float, flag: bool, place: Place, tags: list[str]) -> str:
        """F."""
        return f"{n!r} {x!r} {flag!r} {place.city} {tags}"

    ok = registry.invoke("f", {"n": "3", "x": 2, "flag": "true",
                               "place": '{"city": "Nara"}', "tags": '["a", "b"]'})
    assert ok.content == "3 2.0 True Nara ['a', 'b']", ok.text
    for bad in ({"n": "3.5"}, {"n": 3.5}, {"n": "three"}, {"place": "Nara"}):
        args = {"n": 1, "x": 1, "flag": False, "place": {"city": "c"}, "tags": [], **bad}
        assert registry.invoke("f", args).error_kind == "invalid_arguments", bad


def test_safe_coercion_for_schema_first_tools(registry: ToolRegistry) -> None:
    registry.register(Tool(
        name="s", callable=lambda **kw: kw,
        parameters={"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "o": {"type": "object"}, "a": {"type": "array"}, "s": {"type": "string"}}}))
    result = registry.invoke("s", {"n": "4", "x": "2.5", "b": "false", "o": '{"k": 1}',
                                   "a": "[1]", "s": "7"})
    assert result.value == {"n": 4, "x": 2.5, "b": False, "o": {"k": 1}, "a": [1], "s": "7"}
    for bad in ({"n": "4.5"}, {"n": "four"}, {"b": "yes"}, {"o": "[1]"}, {"s": 7}):
        assert registry.invoke("s", bad).error_kind == "invalid_arguments", bad


# --- errors -----------------------------------------------------------------------------------

def test_every_error_kind_in_one_batch(registry: ToolRegistry) -> None:
    registry.register(add)

    @registry.register
    def boom() -> str:
        """Fails."""
        raise ValueError("the database is down")

    @registry.register
    def remote() -> str:
        """Fails remotely."""
        raise ToolCallError("HTTP 503 from the service", kind="remote")

    @registry.register
    def off() -> str:
        """Disabled."""
        return "never"

    @registry.register(metadata=ToolMetadata(timeout=0.2))
    def slow() -> str:
        """Slow."""
        time.sleep(1)
        return "late"

    registry.disable("off", reason="maintenance")
    calls: list[Any] = [
        chat("add", {"a": 1, "b": 2}, "ok"),
        chat("ad", {"a": 1, "b": 2}, "unknown"),
        chat("add", '{"a": 1,', "json"),
        chat("add", "[1, 2]", "array"),
        chat("add", {"a": "one", "b": 2}, "invalid"),
        chat("off", {}, "disabled"),
        chat("boom", {}, "raised"),
        chat("remote", {}, "remote"),
        chat("slow", {}, "timeout"),
        {"nonsense": True},
    ]
    results = registry.execute_tool_calls(calls)
    assert results[8].duration < 0.5  # the slow tool's call returned at its own deadline
    assert [r.call_id for r in results[:-1]] == [c["id"] for c in calls[:-1]]
    assert [r.error_kind for r in results] == [
        None, "unknown_tool", "malformed_arguments", "malformed_arguments", "invalid_arguments",
        "disabled", "execution", "remote", "timeout", "malformed_call"]
    texts = [r.text for r in results]
    assert "Did you mean: add?" in texts[1]
    assert "not valid JSON" in texts[2]
    assert "must be a JSON object" in texts[3] and "array" in texts[3]
    assert "a: Input should be a valid integer" in texts[4]
    assert "disabled (maintenance)" in texts[5]
    assert "ValueError: the database is down" in texts[6]
    assert "HTTP 503" in texts[7]
    assert "did not finish within 0.2 s" in texts[8]
    assert "not a tool call" in texts[9]
    assert all(t.startswith("Error: ") for t in texts[1:])


def test_unknown_tool_suggests_at_most_three_close_names(registry: ToolRegistry) -> None:
    for i in range(30):
        registry.register(Tool(name=f"get_weather_{i}", callable=lambda: "x"))
    registry.register(Tool(name="send_email", callable=lambda: "x"))
    result = registry.invoke("get_weather", {})
    assert result.error_kind == "unknown_tool"
    suggested = result.text.split("Did you mean: ")[1].split("?")[0].split(", ")
    assert 1 <= len(suggested) <= 3
    assert all(s.startswith("get_weather_") for s in suggested)
    assert "send_email" not in result.text
    nothing = registry.invoke("zzzzqqq", {})
    assert "Did you mean" not in nothing.text and "get_weather_" not in nothing.text


def test_model_spellings_of_a_name_are_accepted(reg: ToolRegistry) -> None:
    assert reg.invoke("functions.add", {"a": 1, "b": 1}).content == "2"


def test_bad_input_never_raises(reg: ToolRegistry) -> None:
    weird: list[Any] = [None, 1, "str", b"x", [], {}, {"function": None},
                        {"type": "function_call", "name": None}, object(),
                        {"id": 3, "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]
    results = reg.execute_tool_calls(weird)
    assert len(results) == len(weird)
    assert results[-1].ok and results[-1].call_id == "3"
    assert all(r.is_error for r in results[:-1])


def test_one_call_on_its_own_is_accepted(reg: ToolRegistry) -> None:
    results = reg.execute_tool_calls(chat("add", {"a": 1, "b": 1}, "solo"))  # type: ignore[arg-type,unused-ignore]
    assert [r.call_id for r in results] == ["solo"]


def test_one_sdk_call_object_on_its_own_is_accepted(reg: ToolRegistry) -> None:
    from anthropic.types import ToolUseBlock

    block = ToolUseBlock(type="tool_use", id="toolu_1", name="add", input={"a": 1, "b": 2})
    results = reg.execute_tool_calls(block)  # type: ignore[arg-type,unused-ignore]
    assert [(r.call_id, r.value) for r in results] == [("toolu_1", 3)]


def test_calls_without_ids_get_one(reg: ToolRegistry) -> None:
    results = reg.execute_tool_calls([{"name": "add", "arguments": {"a": 1, "b": 1}}] * 2)
    ids = [r.call_id for r in results]
    assert all(i and i.startswith("call_") for i in ids) and ids[0] != ids[1]


def test_closed_registry_answers_with_errors() -> None:
    registry = ToolRegistry()
    registry.register(add)
    registry.close()
    assert registry.invoke("add", {"a": 1, "b": 1}).error_kind == "execution"
    results = registry.execute_tool_calls([chat("add", {"a": 1, "b": 1}, "x")])
    assert "closed" in results[0].text


# --- hooks ------------------------------------------------------------------------------------

class Recorder:
    def __init__(self) -> None:
        self.pre: list[str] = []
        self.post: list[str] = []

    @hookimpl
    def pre_invoke(self, registry: ToolRegistry, tool: Tool, call: ToolCall) -> None:
        assert call.arguments is not None
        self.pre.append(tool.name)
        call.reason = call.arguments.pop("why", None)

    @hookimpl
    def post_invoke(self, registry: ToolRegistry, tool: Tool, call: ToolCall,
                    result: ToolResult) -> ToolResult | None:
        self.post.append(tool.name)
        result.metadata["seen"] = True
        return None


def test_hooks_run_on_every_path() -> None:
    recorder = Recorder()
    registry = ToolRegistry(plugins=[recorder])
    try:
        registry.register(add)
        results = run_all(registry, "add", {"a": 1, "b": 2, "why": "testing"})
        assert all(r.ok and r.reason == "testing" and r.metadata["seen"] for r in results)
        assert recorder.pre == recorder.post == ["add"] * 4
    finally:
        registry.close()


def test_a_failing_pre_invoke_hook_is_an_error_result() -> None:
    class Rejecting:
        @hookimpl
        def pre_invoke(self, registry: ToolRegistry, tool: Tool, call: ToolCall) -> None:
            raise PermissionError("not allowed now")

    registry = ToolRegistry(plugins=[Rejecting()])
    try:
        registry.register(add)
        result = registry.invoke("add", {"a": 1, "b": 2})
        assert result.error_kind == "hook" and "not allowed now" in result.text
    finally:
        registry.close()


# --- concurrency ------------------------------------------------------------------------------

def test_sync_tools_run_concurrently_on_the_pool(registry: ToolRegistry) -> None:
    threads: set[int] = set()

    @registry.register
    def nap(i: int) -> int:
        """Sleep a little."""
        threads.add(threading.get_ident())
        time.sleep(0.3)
        return i

    started = time.perf_counter()
    results = registry.execute_tool_calls([chat("nap", {"i": i}, f"c{i}") for i in range(6)])
    assert time.perf_counter() - started < 1.0
    assert [r.value for r in results] == list(range(6))
    assert threading.get_ident() not in threads and len(threads) == 6


def test_async_tools_run_on_the_callers_loop(registry: ToolRegistry) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @registry.register
    async def wait(i: int) -> int:
        """Wait."""
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.3)
        return i

    async def main() -> tuple[float, list[ToolResult]]:
        started = time.perf_counter()
        results = await registry.aexecute_tool_calls(
            [chat("wait", {"i": i}, f"c{i}") for i in range(5)])
        assert all(loop is asyncio.get_running_loop() for loop in loops)
        return time.perf_counter() - started, results

    elapsed, results = asyncio.run(main())
    assert elapsed < 1.0 and [r.value for r in results] == list(range(5))
    # The sync API runs them on its private loop, concurrently too.
    loops.clear()
    started = time.perf_counter()
    results = registry.execute_tool_calls([chat("wait", {"i": i}, f"c{i}") for i in range(5)])
    assert time.perf_counter() - started < 1.0 and [r.value for r in results] == list(range(5))
    assert len(set(map(id, loops))) == 1


def test_the_sync_api_works_inside_a_running_loop(registry: ToolRegistry) -> None:
    @registry.register
    async def later(x: int) -> int:
        """Async."""
        await asyncio.sleep(0.01)
        return x

    registry.register(add)

    async def main() -> list[ToolResult]:
        assert asyncio.get_running_loop()
        return registry.execute_tool_calls([chat("later", {"x": 1}, "a"),
                                            chat("add", {"a": 1, "b": 1}, "b")])

    results = asyncio.run(main())
    assert [r.value for r in results] == [1, 2]
    assert asyncio.run(_invoke_inside(registry)).value == 3


async def _invoke_inside(registry: ToolRegistry) -> ToolResult:
    return registry.invoke("later", {"x": 3})


def test_a_sync_tool_on_a_worker_knows_the_loop_its_caller_blocks(
        registry: ToolRegistry) -> None:
    # A tool that would hand work to that loop and wait would wait for itself (the MCP
    # plugin's sessions on the application's loop refuse such calls at once).
    from toolregistry.plugin import calling_loop

    @registry.register
    def which() -> str:
        loop = calling_loop()
        return f"{threading.current_thread().name} {id(loop) if loop else None}"

    async def main() -> list[str]:
        here = str(id(asyncio.get_running_loop()))
        sync = [registry.invoke("which", {}).text,
                registry.execute_tool_calls([chat("which", {}, "1"), chat("which", {}, "2")])[1]
                .text]
        awaited = (await registry.ainvoke("which", {})).text  # the loop is free: no loop
        return [t.replace(here, "caller's") for t in [*sync, awaited]]

    assert asyncio.run(main()) == ["toolregistry-worker caller's"] * 2 + [
        "toolregistry-worker None"]
    assert registry.invoke("which", {}).text == "toolregistry-worker None"


@pytest.mark.parametrize("api", ["sync", "async"])
def test_unsafe_tools_run_alone(registry: ToolRegistry, api: str) -> None:
    active = 0
    peak_during_unsafe = 0
    lock = threading.Lock()
    order: list[str] = []

    def enter(tag: str) -> None:
        nonlocal active
        with lock:
            active += 1
            order.append(tag)

    def leave() -> None:
        nonlocal active
        with lock:
            active -= 1

    @registry.register
    def safe(i: int) -> int:
        """Safe."""
        enter(f"safe{i}")
        time.sleep(0.05)
        leave()
        return i

    @registry.register(metadata=ToolMetadata(is_concurrency_safe=False))
    def unsafe(i: int) -> int:
        """Unsafe."""
        nonlocal peak_during_unsafe
        enter(f"unsafe{i}")
        with lock:
            peak_during_unsafe = max(peak_during_unsafe, active)
        time.sleep(0.05)
        leave()
        return i

    calls = [chat("safe", {"i": 0}, "a"), chat("safe", {"i": 1}, "b"),
             chat("unsafe", {"i": 2}, "c"), chat("safe", {"i": 3}, "d"),
             chat("unsafe", {"i": 4}, "e")]
    if api == "sync":
        results = registry.execute_tool_calls(calls)
    else:
        results = asyncio.run(registry.aexecute_tool_calls(calls))
    assert [r.value for r in results] == [0, 1, 2, 3, 4]
    assert peak_during_unsafe == 1
    assert order.index("unsafe2") > max(order.index("safe0"), order.index("safe1"))
    assert order.index("safe3") > order.index("unsafe2")


def _timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def test_timeouts_return_on_time_for_blocking_sync_tools() -> None:
    registry = ToolRegistry(default_timeout=0.3)
    try:
        cancelled = threading.Event()

        @registry.register
        def block(ctx: ToolContext) -> str:
            """Blocks in C code."""
            try:
                time.sleep(1.0)
            finally:  # ToolCancelled lands right after the sleep
                if ctx.cancelled:
                    cancelled.set()
            return "late"

        @registry.register(metadata=ToolMetadata(timeout=0.1))
        def own_limit() -> str:
            """Per-tool limit."""
            time.sleep(1.0)
            return "late"

        elapsed, result = _timed(lambda: registry.invoke("block", {}))
        assert result.error_kind == "timeout" and 0.25 < elapsed < 0.6
        assert "0.3 s" in result.text
        elapsed, result = _timed(lambda: registry.invoke("own_limit", {}))
        assert result.error_kind == "timeout" and elapsed < 0.4
        elapsed, result = _timed(lambda: registry.invoke("block", {}, timeout=0.05))
        assert result.error_kind == "timeout" and elapsed < 0.3
        elapsed, results = _timed(lambda: registry.execute_tool_calls(
            [chat("block", {}, "a"), chat("own_limit", {}, "b")]))
        assert [r.error_kind for r in results] == ["timeout", "timeout"] and elapsed < 0.6
        assert results[1].duration < 0.2  # stopped at its own deadline, not the batch's
        elapsed, results = _timed(lambda: asyncio.run(registry.aexecute_tool_calls(
            [chat("block", {}, "a"), chat("own_limit", {}, "b")])))
        assert [r.error_kind for r in results] == ["timeout", "timeout"] and elapsed < 0.6
        assert cancelled.wait(2)  # the tool saw its cancel_event
    finally:
        registry.close()


def test_a_python_loop_is_interrupted_at_its_deadline(registry: ToolRegistry) -> None:
    stopped = threading.Event()

    @registry.register
    def spin() -> str:
        """Busy loop."""
        try:
            while True:
                pass
        finally:
            stopped.set()

    result = registry.invoke("spin", {}, timeout=0.1)
    assert result.error_kind == "timeout"
    assert stopped.wait(2)


def test_timeouts_are_tool_timeout_errors_and_the_cancellation_is_public(
        registry: ToolRegistry) -> None:
    from toolregistry.errors import ToolCancelled, ToolTimeoutError

    assert issubclass(ToolTimeoutError, ToolCallError) and issubclass(ToolTimeoutError,
                                                                      TimeoutError)
    assert not issubclass(ToolCancelled, Exception)  # `except Exception` in tools misses it
    seen: list[str] = []

    @registry.register
    def upstream() -> str:
        """Raises the registry's own timeout error."""
        raise ToolTimeoutError("the upstream service took too long")

    @registry.register
    def careful() -> str:
        """Cleans up when it is cancelled."""
        try:
            time.sleep(1.0)
            while True:
                pass
        except ToolCancelled:
            seen.append("cancelled")
            raise

    result = registry.invoke("upstream", {})
    assert result.error_kind == "timeout" and "took too long" in result.text
    for path in ("main thread", "worker"):
        seen.clear()
        if path == "main thread":
            result = registry.invoke("careful", {}, timeout=0.1)
        else:
            out: list[ToolResult] = []

            def call(out: list[ToolResult] = out) -> None:
                out.append(registry.invoke("careful", {}, timeout=0.1))

            thread = threading.Thread(target=call)
            thread.start()
            thread.join(5)
            (result,) = out
        assert result.error_kind == "timeout", path
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == ["cancelled"], path


def test_async_tools_that_ignore_cancellation_still_return_on_time(
        registry: ToolRegistry) -> None:
    @registry.register
    async def stubborn() -> str:
        """Ignores cancellation."""
        for _ in range(10):
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:
                pass
        return "late"

    elapsed, result = _timed(lambda: registry.invoke("stubborn", {}, timeout=0.1))
    assert result.error_kind == "timeout" and elapsed < 0.4


    async def main() -> tuple[float, ToolResult]:
        started = time.perf_counter()
        result = await registry.ainvoke("stubborn", {}, timeout=0.1)
        return time.perf_counter() - started, result  # asyncio.run then waits for the orphan

    elapsed, result = asyncio.run(main())
    assert result.error_kind == "timeout" and elapsed < 0.4


def test_a_tool_context_makes_one_cancel_event_whoever_asks_first() -> None:
    ctx = ToolContext(registry=None, call=ToolCall("x"))
    assert not ctx.cancelled  # asking whether it was cancelled makes no event
    seen: list[threading.Event] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(ctx.cancel_event)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(seen) == 8 and all(event is seen[0] for event in seen)
    seen[0].set()
    assert ctx.cancelled
    given = threading.Event()
    assert ToolContext(registry=None, call=ToolCall("x"), cancel_event=given).cancel_event is given


def test_cancelling_the_caller_cancels_its_async_tool_at_once(registry: ToolRegistry) -> None:
    seen: list[tuple[str, bool]] = []

    @registry.register
    async def slow(ctx: ToolContext) -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append(("cancelled", ctx.cancel_event.is_set()))
            raise
        return "late"

    async def main() -> float:
        task = asyncio.create_task(registry.ainvoke("slow", {}, timeout=3))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        waited = time.perf_counter() - started
        await asyncio.sleep(0.05)  # the tool's own task takes its cancellation
        return waited

    assert asyncio.run(main()) < 0.5
    assert seen == [("cancelled", True)]


def test_no_deadline_runs_inline(registry_factory: Callable[..., ToolRegistry]) -> None:
    registry = registry_factory(default_timeout="none")
    seen: list[int] = []

    @registry.register
    def where() -> str:
        """Where."""
        seen.append(threading.get_ident())
        return "ok"

    assert registry.invoke("where", {}).ok and seen == [threading.get_ident()]


def test_no_retries_by_default_or_for_non_idempotent_tools(registry_factory: Callable[..., ToolRegistry]) -> None:
    attempts: list[str] = []

    def flaky(tag: str) -> str:
        attempts.append(tag)
        if len([a for a in attempts if a == tag]) < 3:
            raise ConnectionError("reset by peer")
        return "ok"

    plain = registry_factory()
    plain.register(Tool.from_function(flaky, metadata=ToolMetadata(idempotent_hint=True)))
    assert plain.invoke("flaky", {"tag": "a"}).error_kind == "execution"
    assert attempts == ["a"]

    retrying = registry_factory(retry=RetryPolicy(attempts=3, backoff=0.01))
    retrying.register(Tool.from_function(flaky, name="not_idempotent"))
    retrying.register(Tool.from_function(flaky, metadata=ToolMetadata(idempotent_hint=True)))
    assert retrying.invoke("not_idempotent", {"tag": "b"}).is_error
    assert attempts.count("b") == 1
    assert retrying.invoke("flaky", {"tag": "c"}).content == "ok"
    assert attempts.count("c") == 3
    result = asyncio.run(retrying.ainvoke("flaky", {"tag": "d"}))
    assert result.ok and attempts.count("d") == 3


def test_retries_apply_only_to_the_listed_errors(registry_factory: Callable[..., ToolRegistry]) -> None:
    calls = 0

    def broken() -> str:
        nonlocal calls
        calls += 1
        raise ValueError("a bug, not a transient error")

    registry = registry_factory(retry=RetryPolicy(attempts=5, backoff=0.01))
    registry.register(Tool.from_function(broken, metadata=ToolMetadata(read_only_hint=True)))
    assert registry.invoke("broken", {}).is_error and calls == 1


def test_async_retries(registry_factory: Callable[..., ToolRegistry]) -> None:
    tries = 0

    async def fetch() -> str:
        nonlocal tries
        tries += 1
        if tries < 2:
            raise TimeoutError("upstream slow")
        return "data"

    registry = registry_factory(retry=RetryPolicy(attempts=2, backoff=0.01))
    registry.register(Tool.from_function(fetch, metadata=ToolMetadata(idempotent_hint=True)))
    assert registry.invoke("fetch", {}).content == "data" and tries == 2


def test_a_tool_may_call_the_registry(registry: ToolRegistry) -> None:
    registry.register(add)

    @registry.register
    def twice(x: int) -> int:
        """Calls add through the registry."""
        inner = registry.invoke("add", {"a": x, "b": x})
        return int(inner.text)

    assert registry.invoke("twice", {"x": 4}).value == 8


def test_injected_context(registry: ToolRegistry) -> None:
    @registry.register
    def who(ctx: ToolContext) -> str:
        """Who."""
        assert ctx.remaining() is not None
        return f"{ctx.values['user']}:{ctx.call.id}"

    assert registry.invoke("who", {}, context={"user": "ana"}, call_id="z").content == "ana:z"


def test_progress_reaches_the_reporter_from_every_path(registry: ToolRegistry) -> None:
    from toolregistry.types import reporting_progress

    @registry.register
    def crunch(n: int, ctx: ToolContext) -> str:
        """Counts to n, saying so."""
        for i in range(1, n + 1):
            ctx.report_progress(i, n, f"step {i}")
        return "done"

    @registry.register
    async def acrunch(n: int, ctx: ToolContext) -> str:
        """Counts to n, saying so, asynchronously."""
        for i in range(n):
            ctx.report_progress(i + 1)
        return "done"

    seen: list[tuple[float, float | None, str | None, str]] = []

    def reporter(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message, threading.current_thread().name))

    assert registry.invoke("crunch", {"n": 2}).content == "done"  # nobody asked: a no-op
    assert seen == []
    with reporting_progress(reporter):
        assert registry.invoke("crunch", {"n": 2}).content == "done"
        assert registry.invoke("acrunch", {"n": 1}).content == "done"

        async def both() -> list[ToolResult]:
            return [await registry.ainvoke("crunch", {"n": 1}),
                    await registry.ainvoke("acrunch", {"n": 1})]

        assert [r.content for r in asyncio.run(both())] == ["done", "done"]
    assert [s[:3] for s in seen] == [(1, 2, "step 1"), (2, 2, "step 2"), (1, None, None),
                                     (1, 1, "step 1"), (1, None, None)]
    # ainvoke runs the sync tool on a worker thread: the reporter went with the call.
    assert seen[3][3] == "toolregistry-worker"


def test_contextvars_go_with_the_call_into_worker_threads(registry: ToolRegistry) -> None:
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

    @registry.register
    def whoami() -> str:
        """The request id the caller set."""
        return f"{request_id.get()}@{threading.current_thread().name}"

    async def call() -> str:
        request_id.set("r-42")
        return (await registry.ainvoke("whoami", {})).text

    assert asyncio.run(call()) == "r-42@toolregistry-worker"


def test_the_first_call_leaves_no_copy_of_its_context_behind(tmp_path: Any) -> None:
    # The execution machinery is imported by the first call, in the caller's context: nothing
    # it builds at import may keep that context, or the caller's contextvars (a served
    # request, its session) would live as long as the process. A fresh interpreter, so that
    # this call is the first.
    import subprocess
    import sys
    import textwrap

    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    script = textwrap.dedent('''
        import asyncio, contextvars, gc, sys, weakref
        from toolregistry import ToolRegistry

        class Request:
            pass

        current = contextvars.ContextVar("current")
        registry = ToolRegistry()

        @registry.register
        def answer() -> str:
            """A sync tool: it runs on a worker thread."""
            return "ok"

        async def call():
            request = Request()
            current.set(request)
            assert "toolregistry._execution._threads" not in sys.modules
            assert (await registry.ainvoke("answer", {})).text == "ok"
            return weakref.ref(request)

        gone = asyncio.run(call())
        gc.collect()
        registry.close()
        print("kept" if gone() is not None else "gone")
    ''')
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "gone"


def test_a_finished_call_keeps_no_context_until_its_deadline(registry: ToolRegistry) -> None:
    # A call's deadline timer is cancelled when the call ends, but a cancelled timer stays in
    # the loop until its time: it must not hold the caller's contextvars all that while.
    import contextvars
    import gc
    import weakref

    current: contextvars.ContextVar[object] = contextvars.ContextVar("current")

    class Request:
        pass

    @registry.register
    def quick() -> str:
        """A sync tool (the worker pool)."""
        return "sync"

    @registry.register
    async def aquick() -> str:
        """An async tool (its own task, under a timer)."""
        return "async"

    async def one(name: str) -> weakref.ref[Request]:
        request = Request()
        current.set(request)
        assert (await registry.ainvoke(name, {}, timeout=600)).ok
        return weakref.ref(request)

    async def main() -> list[bool]:
        # A timer due sooner (a server has many): the calls' cancelled timers are not at the
        # head of the loop's heap, so the loop keeps them until their time.
        sooner = asyncio.get_running_loop().call_later(300, lambda: None)
        refs = [await asyncio.create_task(one("quick")), await asyncio.create_task(one("aquick"))]
        await asyncio.sleep(0)  # the loop lets go of the last task it woke this one with
        gc.collect()
        sooner.cancel()
        return [r() is None for r in refs]

    assert asyncio.run(main()) == [True, True]


# --- logging ----------------------------------------------------------------------------------

@pytest.fixture
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    try:
        with capture_logs() as entries:
            yield entries
    finally:
        structlog.reset_defaults()


def test_one_event_per_call_without_argument_values(reg: ToolRegistry,
                                                    logs: list[MutableMapping[str, Any]]) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    reg.execute_tool_calls([chat("add", {"a": 111, "b": 222}, "c1"),
                            chat("nope", {"a": 333}, "c2")])
    events = [e for e in logs if e["event"].startswith("call.")]
    assert [(e["event"], e["tool"], e["call_id"], e["outcome"]) for e in events] == [
        ("call.failed", "nope", "c2", "unknown_tool"), ("call.finished", "add", "c1", "ok")]
    assert all(isinstance(e["duration"], float) for e in events)
    # the values appear nowhere but in the durations' digits (0.001117 s holds a "111")
    text = repr([{k: v for k, v in e.items() if k != "duration"} for e in logs])
    assert "111" not in text and "333" not in text


def test_a_refused_argument_value_stays_out_of_the_failure_event(
        reg: ToolRegistry, logs: list[MutableMapping[str, Any]]) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    schema_first = Tool(name="unlock", description="Unlock.", callable=lambda code: code,
                        parameters={"type": "object", "properties": {"code": {"type": "integer"}}})
    reg.register(schema_first)
    for name, arguments in (("add", {"a": "hunter2-secret", "b": 1}),
                            ("unlock", {"code": "hunter2-secret"})):
        result = reg.invoke(name, arguments)
        assert "hunter2-secret" in result.text  # the model reads what it sent
        assert result.redacted_text is not None and "hunter2" not in result.loggable_text
        assert "<str, 14 chars>" in result.loggable_text
    failed = [e for e in logs if e["event"] == "call.failed"]
    assert len(failed) == 2 and "hunter2" not in repr(logs)
    assert reg.invoke("add", {"a": 1, "b": 2}).redacted_text is None


def test_argument_values_at_debug_level(reg: ToolRegistry, logs: list[MutableMapping[str, Any]]) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    reg.invoke("add", {"a": 111, "b": 222}, call_id="c1")
    started = [e for e in logs if e["event"] == "call.started"]
    assert started == [{"event": "call.started", "log_level": "debug", "tool": "add",
                        "call_id": "c1", "arguments": {"a": 111, "b": 222}}]


# --- corners ----------------------------------------------------------------------------------

def test_unsafe_async_tools_run_alone_on_both_apis(registry: ToolRegistry) -> None:
    active = 0
    peak = 0

    @registry.register(metadata=ToolMetadata(is_concurrency_safe=False))
    async def exclusive(i: int) -> int:
        """Unsafe async."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return i

    calls = [chat("exclusive", {"i": i}, f"c{i}") for i in range(4)]
    assert [r.value for r in registry.execute_tool_calls(calls)] == [0, 1, 2, 3]
    assert [r.value for r in asyncio.run(registry.aexecute_tool_calls(calls))] == [0, 1, 2, 3]
    assert peak == 1


def test_a_sync_callable_returning_a_coroutine_is_awaited(registry: ToolRegistry) -> None:
    async def compute(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    registry.register(Tool(name="wrapped", callable=lambda **kw: compute(**kw), is_async=False,
                           parameters={"type": "object",
                                       "properties": {"x": {"type": "integer"}}}))
    assert registry.invoke("wrapped", {"x": 4}).value == 8
    assert asyncio.run(registry.ainvoke("wrapped", {"x": 5})).value == 10


def test_nested_calls_do_not_deadlock_a_full_pool(registry_factory: Callable[..., ToolRegistry]) -> None:
    registry = registry_factory(max_workers=1)
    registry.register(add)

    @registry.register
    def outer(x: int) -> int:
        """Calls the registry from the only worker."""
        return int(registry.invoke("add", {"a": x, "b": 1}).text)

    calls = [chat("outer", {"x": i}, f"c{i}") for i in range(3)]
    assert [r.value for r in registry.execute_tool_calls(calls)] == [1, 2, 3]
    assert [r.value for r in asyncio.run(registry.aexecute_tool_calls(calls))] == [1, 2, 3]


def test_async_tools_see_their_cancel_event(registry: ToolRegistry) -> None:
    seen = threading.Event()

    @registry.register
    async def watch(ctx: ToolContext) -> str:
        """Waits."""
        try:
            await asyncio.sleep(1)
        finally:
            if ctx.cancelled:
                seen.set()
        return "late"

    assert registry.invoke("watch", {}, timeout=0.05).error_kind == "timeout"
    assert seen.wait(1)


def test_close_ends_calls_still_waiting_for_a_worker() -> None:
    registry = ToolRegistry(max_workers=1, default_timeout=5)

    @registry.register
    def hold(s: float) -> float:
        """Sleeps."""
        time.sleep(s)
        return s

    out: list[list[ToolResult]] = []
    runner = threading.Thread(target=lambda: out.append(registry.execute_tool_calls(
        [chat("hold", {"s": 0.3}, "a"), chat("hold", {"s": 0.3}, "b")])))
    runner.start()
    time.sleep(0.1)
    registry.close()
    runner.join(3)
    assert not runner.is_alive()
    assert out[0][0].ok
    assert out[0][1].error_kind == "cancelled" and "closed" in out[0][1].text  # never started


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_workers(reg: ToolRegistry) -> None:
    assert reg.invoke("add", {"a": 1, "b": 1}).ok  # the parent's pool exists now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: exit status 0 only when the call worked
        try:
            result = reg.invoke("add", {"a": 2, "b": 3}, timeout=5)
            os._exit(0 if result.value == 5 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_start_call_runs_a_sync_tool_before_it_is_awaited() -> None:
    from toolregistry.plugin import start_call

    seen: list[str] = []
    ran = threading.Event()
    release = threading.Event()

    def slow(x: int) -> int:
        """Record the thread, wait to be released."""
        seen.append(threading.current_thread().name)
        ran.set()
        release.wait(10)
        return x * 2

    def quick(x: int) -> int:
        """Double x."""
        return x * 2

    async def twice(x: int) -> int:
        """Double x, async."""
        return x * 2

    with ToolRegistry(think_augment=False, tool_discovery=False) as registry:
        for fn in (slow, quick, twice):
            registry.register(fn)

        async def main() -> list[ToolResult]:
            out: list[Any] = [None]
            # Made on a thread without a loop (a sandbox's I/O thread), awaited on this loop.
            maker = threading.Thread(target=lambda: out.__setitem__(0, [
                start_call(registry, "slow", {"x": 1}, call_id="s"),
                start_call(registry, "quick", {"x": 2}, call_id="q"),
                start_call(registry, "twice", {"x": 3}, call_id="t"),
                start_call(registry, "nope", {}, call_id="n"),
                start_call(registry, "quick", {"x": "a lot"}, call_id="b")]))
            maker.start()
            maker.join()
            assert ran.wait(10)  # running on a worker before anyone awaits it
            await asyncio.sleep(0.05)  # quick has ended by now: no wake-up needed
            release.set()
            return [await started for started in out[0]]

        results = asyncio.run(main())
        assert [(r.call_id, r.value, r.error_kind) for r in results] == [
            ("s", 2, None), ("q", 4, None), ("t", 6, None), ("n", None, "unknown_tool"),
            ("b", None, "invalid_arguments")]
        assert seen == ["toolregistry-worker"]
        # the same results as ainvoke's, through the same pipeline
        again = asyncio.run(registry.ainvoke("quick", {"x": 2}, call_id="q"))
        assert (again.call_id, again.content, again.metadata) == (
            results[1].call_id, results[1].content, results[1].metadata)


def test_a_started_call_that_is_cancelled_is_interrupted_and_reported() -> None:
    from toolregistry.plugin import start_call

    started = threading.Event()
    stopped = threading.Event()

    def blocker() -> str:
        """Wait until interrupted."""
        started.set()
        try:
            for _ in range(1000):
                time.sleep(0.01)
        finally:
            stopped.set()
        return "never"

    def never() -> str:
        """Must not run."""
        raise AssertionError("ran")

    with ToolRegistry(think_augment=False, tool_discovery=False, max_workers=1) as registry:
        registry.register(blocker)
        registry.register(never)
        with capture_logs() as logs:
            call = start_call(registry, "blocker", call_id="b1")
            assert started.wait(10)
            queued = start_call(registry, "never", call_id="n1")  # waits for the one worker
            queued.cancel()
            call.cancel()
            assert stopped.wait(10)
        ended = {e["call_id"]: e["outcome"] for e in logs if e["event"] == "call.failed"}
        assert ended == {"b1": "cancelled", "n1": "cancelled"}
