"""Tool calls on a real local Ray: where they run, what stays with the registry, deadlines,
failures of the worker, of the tool and of shipping."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Annotated, Any

import psutil
import pytest

from toolregistry import Injected, ToolContext, ToolMetadata
from toolregistry.errors import ToolRejected
from toolregistry.plugin import hookimpl
from toolregistry.types import Decision

from .conftest import MakeRegistry

ON_RAY = ToolMetadata(extra={"ray": True})


def cpu_work(n: int) -> dict[str, float]:
    """A CPU-bound tool: sums squares, reports where and when it ran."""
    start = time.time()
    total = sum(i * i for i in range(n))
    return {"pid": os.getpid(), "start": start, "end": time.time(), "total": total}


def test_sync_and_async_tools_run_in_ray_workers(make_registry: MakeRegistry) -> None:
    registry = make_registry(tools=["where*"])

    @registry.register
    def where_sync(x: int) -> dict[str, int]:
        return {"pid": os.getpid(), "x": x * 2}

    @registry.register
    async def where_async(x: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"pid": os.getpid(), "x": x + 1}

    @registry.register
    def here() -> int:
        return os.getpid()

    results = registry.execute_tool_calls([
        {"id": "1", "name": "where_sync", "arguments": {"x": 4}},
        {"id": "2", "name": "where_async", "arguments": {"x": 4}},
        {"id": "3", "name": "here", "arguments": {}},
    ])
    assert [r.outcome for r in results] == ["ok", "ok", "ok"]
    assert results[0].value["x"] == 8 and results[1].value["x"] == 5
    assert results[0].value["pid"] != os.getpid() and results[1].value["pid"] != os.getpid()
    assert results[2].value == os.getpid()  # not selected: the registry's own pool

    async def both() -> list[int]:
        a = await registry.ainvoke("where_sync", {"x": 1})
        b = await registry.ainvoke("where_async", {"x": 1})
        return [a.value["x"], b.value["x"]]

    assert asyncio.run(both()) == [2, 2]


def test_twenty_cpu_bound_calls_run_in_parallel_across_workers(make_registry: MakeRegistry
                                                                ) -> None:
    registry = make_registry(tools=["cpu_work"])
    registry.register(cpu_work)
    calls = [{"id": str(i), "name": "cpu_work", "arguments": {"n": 300_000}} for i in range(20)]
    results = registry.execute_tool_calls(calls)
    assert all(r.ok for r in results), [r.text for r in results if not r.ok]
    runs = [r.value for r in results]
    assert {v["total"] for v in runs} == {sum(i * i for i in range(300_000))}
    pids = {v["pid"] for v in runs}
    assert os.getpid() not in pids and len(pids) >= 2
    # Two workers at once: some call started before another one ended, in another process.
    overlapping = any(a["pid"] != b["pid"] and a["start"] < b["end"] and b["start"] < a["end"]
                      for a in runs for b in runs)
    assert overlapping


def test_validation_and_authorization_stay_with_the_registry(make_registry: MakeRegistry,
                                                             tmp_path: Path) -> None:
    class Guard:
        @hookimpl
        def authorize(self, tool, call):  # type: ignore[no-untyped-def]
            if call.arguments.get("path", "").startswith("/etc"):
                return Decision.deny("not under /etc", rule="no-etc")
            return None

    registry = make_registry({"plugins": [Guard()]}, tools=["touch"])
    marks = tmp_path / "marks"
    marks.mkdir()

    @registry.register
    def touch(path: str, times: int) -> str:
        (marks / f"{os.getpid()}-{time.monotonic_ns()}").write_text(path)
        return "touched"

    bad, denied, good = registry.execute_tool_calls([
        {"id": "1", "name": "touch", "arguments": {"path": "/tmp/x", "times": "many"}},
        {"id": "2", "name": "touch", "arguments": {"path": "/etc/passwd", "times": 1}},
        {"id": "3", "name": "touch", "arguments": {"path": "/tmp/y", "times": 1}},
    ])
    assert bad.error_kind == "invalid_arguments"
    assert denied.error_kind == "denied" and "not under /etc" in denied.text
    assert good.ok
    assert [p.read_text() for p in marks.iterdir()] == ["/tmp/y"]  # only the allowed call ran


def test_the_tool_context_is_rebuilt_in_the_worker(make_registry: MakeRegistry) -> None:
    registry = make_registry(tools=["who"])

    @registry.register
    def who(greeting: str, ctx: ToolContext) -> dict[str, object]:
        remaining = ctx.remaining()
        return {"call": ctx.call.id, "name": ctx.call.name, "args": ctx.call.arguments,
                "tenant": ctx.values.get("tenant"), "limited": remaining is not None
                and 0 < remaining <= 60, "pid": os.getpid()}

    result = registry.invoke("who", {"greeting": "hi"}, context={"tenant": "acme"},
                             timeout=60, call_id="c-7")
    assert result.ok, result.text
    assert result.value == {"call": "c-7", "name": "who", "args": {"greeting": "hi"},
                            "tenant": "acme", "limited": True, "pid": result.value["pid"]}
    assert result.value["pid"] != os.getpid()


def _wait_gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_a_timeout_cancels_the_ray_task(make_registry: MakeRegistry, tmp_path: Path) -> None:
    registry = make_registry(tools=["slow*"])

    @registry.register
    def slow_sync(path: str, seconds: float) -> str:
        Path(path).write_text(str(os.getpid()))
        time.sleep(seconds)
        return "finished"

    @registry.register
    async def slow_async(path: str, seconds: float) -> str:
        Path(path).write_text(str(os.getpid()))
        await asyncio.sleep(seconds)
        return "finished"

    # Both tools once, side by side, to the end: their functions are shipped and two workers
    # are up, so that the timed calls start at once (the deadline is for the call, not for
    # starting a worker on a loaded machine).
    warm = registry.execute_tool_calls([
        {"id": "1", "name": "slow_sync", "arguments": {"path": str(tmp_path / "w1"), "seconds": 0.5}},
        {"id": "2", "name": "slow_async", "arguments": {"path": str(tmp_path / "w2"), "seconds": 0.5}},
    ])
    assert [r.text for r in warm] == ["finished", "finished"]

    async def both() -> list[Any]:
        # the sync API on a thread of its own, the async one on this loop, at the same time
        return list(await asyncio.gather(
            asyncio.to_thread(registry.invoke, "slow_sync",
                              {"path": str(tmp_path / "sync.pid"), "seconds": 120}, timeout=5),
            registry.ainvoke("slow_async", {"path": str(tmp_path / "async.pid"), "seconds": 120},
                             timeout=5)))

    for result, kind in zip(asyncio.run(both()), ("sync", "async"), strict=True):
        assert result.error_kind == "timeout", result.text
        pid = int((tmp_path / f"{kind}.pid").read_text())
        assert pid != os.getpid()
        assert _wait_gone(pid), f"the worker running the timed-out {kind} tool was not stopped"


def test_a_worker_killed_mid_call_is_an_error_result_and_never_retried(
        make_registry: MakeRegistry, tmp_path: Path) -> None:
    registry = make_registry(tools=["victim"])
    starts = tmp_path / "starts"

    @registry.register
    def victim() -> str:
        with starts.open("a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(120)
        return "survived"

    async def kill_when_started() -> None:
        while not starts.exists():
            await asyncio.sleep(0.05)
        os.kill(int(starts.read_text().split()[0]), 9)

    async def run() -> object:
        killer = asyncio.create_task(kill_when_started())
        result = await registry.ainvoke("victim", {}, timeout=100)
        await killer
        return result

    result = asyncio.run(run())
    assert result.error_kind == "remote", result.text
    assert "worker process running it died" in result.text
    assert "not retried: the tool is not marked idempotent" in result.text
    time.sleep(1)
    assert len(starts.read_text().split()) == 1  # ran once


def test_an_idempotent_tool_is_retried_after_its_worker_died(make_registry: MakeRegistry,
                                                             tmp_path: Path) -> None:
    registry = make_registry(tools=["flaky"], max_retries=1)
    starts = tmp_path / "starts"

    @registry.register(metadata=ToolMetadata(idempotent_hint=True))
    def flaky() -> int:
        with starts.open("a") as fh:
            fh.write("x")
        if len(starts.read_text()) == 1:
            os._exit(1)  # the first attempt's worker dies
        return len(starts.read_text())

    result = registry.invoke("flaky", {}, timeout=100)
    assert result.ok, result.text
    assert result.value == 2


def test_a_tool_error_keeps_its_type_and_a_short_remote_traceback(make_registry: MakeRegistry
                                                                  ) -> None:
    registry = make_registry(tools=["divide"])

    def check(b: float) -> None:
        if b == 0:
            raise ZeroDivisionError("b must not be zero")

    @registry.register
    def divide(a: float, b: float) -> float:
        check(b)
        return a / b

    result = registry.invoke("divide", {"a": 1, "b": 0})
    assert result.error_kind == "execution"
    lines = result.text.splitlines()
    assert "tool 'divide' failed: ZeroDivisionError: b must not be zero" in lines[0]
    assert any(line.startswith("Remote traceback") for line in lines)
    assert any("in divide" in line for line in lines) and any("in check" in line for line in lines)
    import ray

    import toolregistry_ray

    infrastructure = (os.path.dirname(ray.__file__), os.path.dirname(toolregistry_ray.__file__))
    assert not any(d in line for d in infrastructure for line in lines[1:])
    assert registry.invoke("divide", {"a": 1, "b": 4}).value == 0.25


def test_unpicklable_tools_are_refused_at_registration(make_registry: MakeRegistry) -> None:
    import threading

    registry = make_registry(tools=["locked", "local"], ship="auto")
    lock = threading.Lock()

    def locked() -> bool:
        with lock:
            return True

    with pytest.raises(ToolRejected, match=r"tool 'locked' cannot run on Ray: its function "
                                           r"cannot be shipped.*_thread.lock"):
        registry.register(locked)
    assert "locked" not in registry

    strict = make_registry(tools=["local"], ship="import")

    def local() -> int:
        return 1

    with pytest.raises(ToolRejected, match="ship = 'import' needs a module-level function"):
        strict.register(local)


def test_unpicklable_arguments_and_results_are_error_results(make_registry: MakeRegistry
                                                             ) -> None:
    import threading

    registry = make_registry(tools=["use_*", "make_lock"])

    @registry.register
    def use_db(query: str, db: Annotated[object, Injected()]) -> str:
        return query

    result = registry.invoke("use_db", {"query": "select 1"}, context={"db": threading.Lock()})
    assert result.error_kind == "execution"
    assert ("tool 'use_db' cannot run on Ray: db cannot be sent to the workers (TypeError: "
            "cannot pickle '_thread.lock' object)") in result.text
    assert registry.invoke("use_db", {"query": "select 1"}, context={"db": "dsn"}).text == \
        "select 1"

    @registry.register
    def make_lock() -> object:
        return threading.Lock()

    result = registry.invoke("make_lock", {})
    assert result.is_error
    assert "make_lock" in result.text and "lock" in result.text.lower()
