"""Property-based and stress tests: bad input never raises, every call gets its one result,
no thread outlives the registry."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolregistry import Tool, ToolMetadata, ToolRegistry, ToolResult


def _build_registry() -> ToolRegistry:
    registry = ToolRegistry(default_timeout=2)

    @registry.register
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @registry.register
    def echo(text: str, times: int = 1) -> str:
        """Echo."""
        return text * max(0, min(times, 3))

    @registry.register
    async def later(x: float) -> float:
        """Async."""
        await asyncio.sleep(0)
        return x

    @registry.register(metadata=ToolMetadata(is_concurrency_safe=False))
    def alone(flag: bool = False) -> str:
        """Unsafe."""
        if flag:
            raise RuntimeError("flagged")
        return "ok"

    registry.register(Tool(
        name="schema", callable=lambda **kw: kw,
        parameters={"type": "object", "properties": {"q": {"type": "string"},
                                                      "n": {"type": "integer"}},
                    "required": ["q"]}))
    return registry


NAMES = ["add", "echo", "later", "alone", "schema", "functions.add", "ad", "", "删除"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "text", "times", "x", "flag", "q", "n", "zz"]),
                    json_values, max_size=4),
    json_values,
)
argument_text = st.one_of(arguments.map(lambda a: json.dumps(a)), st.text(max_size=30))
names = st.one_of(st.sampled_from(NAMES), st.text(max_size=12), st.integers(), st.none())
ids = st.one_of(st.none(), st.text(max_size=8), st.integers())

calls = st.one_of(
    st.builds(lambda i, n, a: {"id": i, "type": "function",
                               "function": {"name": n, "arguments": a}}, ids, names,
              argument_text),
    st.builds(lambda i, n, a: {"type": "function_call", "call_id": i, "name": n,
                               "arguments": a}, ids, names, argument_text),
    st.builds(lambda i, n, a: {"type": "tool_use", "id": i, "name": n, "input": a},
              ids, names, arguments),
    st.builds(lambda i, n, a: {"function_call": {"id": i, "name": n, "args": a}},
              ids, names, arguments),
    st.builds(lambda i, n, a: {"type": "tool_call", "id": i, "name": n, "args": a},
              ids, names, arguments),
    st.builds(lambda n, a: {"name": n, "arguments": a}, names, argument_text),
    json_values,
)

registry = _build_registry()


def _check(batch: list[Any], results: list[ToolResult]) -> None:
    assert len(results) == len(batch)
    assert all(isinstance(r, ToolResult) for r in results)
    for raw, result in zip(batch, results):
        assert isinstance(result.content, (str, list))
        if result.is_error:
            assert result.error_kind and result.text.startswith("Error: ")
        if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw.get("type") in (
                "function", "tool_use", "tool_call"):
            # an empty id is no id: never answered as "" (issue 16 item 6)
            assert result.call_id == raw["id"] if raw["id"] else result.call_id != ""


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(calls, max_size=8))
def test_random_calls_never_raise_sync(batch: list[Any]) -> None:
    _check(batch, registry.execute_tool_calls(batch))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(calls, max_size=8))
def test_random_calls_never_raise_async(batch: list[Any]) -> None:
    _check(batch, asyncio.run(registry.aexecute_tool_calls(batch)))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(names, arguments)
def test_random_invocations_never_raise(name: Any, args: Any) -> None:
    result = registry.invoke(name, args)
    assert isinstance(result, ToolResult)


# --- 1,000 concurrent calls ---------------------------------------------------------------------

def _stress_registry() -> ToolRegistry:
    reg = ToolRegistry(default_timeout=1.0)

    def work(ms: int, fail: bool) -> int:
        time.sleep(ms / 1000)
        if fail:
            raise ValueError("planned failure")
        return ms

    async def awork(ms: int, fail: bool) -> int:
        await asyncio.sleep(ms / 1000)
        if fail:
            raise ValueError("planned failure")
        return ms

    for limit in (0.05, 0.2, None):
        meta = ToolMetadata(timeout=limit)
        suffix = str(limit).replace(".", "_")
        reg.register(Tool.from_function(work, name=f"work_{suffix}", metadata=meta))
        reg.register(Tool.from_function(awork, name=f"awork_{suffix}", metadata=meta))
    return reg


def _plan(seed: int) -> tuple[list[dict[str, Any]], list[set[str | None]]]:
    rng = random.Random(seed)
    batch: list[dict[str, Any]] = []
    allowed: list[set[str | None]] = []
    for i in range(1000):
        limit = rng.choice([0.05, 0.2, None])
        kind = rng.choice(["work", "awork"])
        slow = rng.random() < 0.2
        fail = rng.random() < 0.2
        ms = rng.choice([300, 400]) if slow and limit is not None else rng.randint(0, 20)
        name = f"{kind}_{str(limit).replace('.', '_')}"
        batch.append({"id": f"c{i}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps({"ms": ms,
                                                                          "fail": fail})}})
        # Queueing counts against the deadline, so a quick call may still time out.
        if slow and limit is not None:
            allowed.append({"timeout"})
        else:
            allowed.append({"timeout", "execution" if fail else None})
    return batch, allowed


def _wait_for_threads(baseline: int) -> int:
    deadline = time.monotonic() + 10
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    return threading.active_count()


def test_a_thousand_concurrent_calls_sync() -> None:
    baseline = threading.active_count()
    reg = _stress_registry()
    batch, allowed = _plan(1)
    started = time.perf_counter()
    results = reg.execute_tool_calls(batch)
    elapsed = time.perf_counter() - started
    assert [r.call_id for r in results] == [c["id"] for c in batch]
    for result, kinds in zip(results, allowed):
        assert result.error_kind in kinds, (result.call_id, result.text)
    assert sum(r.ok for r in results) > 100  # not everything timed out
    assert elapsed < 15
    reg.close()
    assert _wait_for_threads(baseline) <= baseline


def test_a_thousand_concurrent_calls_async() -> None:
    baseline = threading.active_count()
    reg = _stress_registry()
    batch, allowed = _plan(2)

    async def main() -> list[ToolResult]:
        return await reg.aexecute_tool_calls(batch)

    results = asyncio.run(main())
    assert [r.call_id for r in results] == [c["id"] for c in batch]
    for result, kinds in zip(results, allowed):
        assert result.error_kind in kinds, (result.call_id, result.text)
    reg.close()
    assert _wait_for_threads(baseline) <= baseline


def test_threads_do_not_grow_over_many_batches() -> None:
    reg = _stress_registry()
    try:
        calls = [{"id": f"c{i}", "type": "function",
                  "function": {"name": "work_None", "arguments": '{"ms": 0, "fail": false}'}}
                 for i in range(10)]
        reg.execute_tool_calls(calls)
        executor = reg._get_executor()
        after_first = executor.thread_count
        for _ in range(200):
            assert all(r.ok for r in reg.execute_tool_calls(calls))
        assert executor.thread_count <= max(after_first, 10)
    finally:
        reg.close()


def teardown_module() -> None:
    registry.close()
