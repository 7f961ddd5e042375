"""Process isolation (issue 16 item 5): tools whose calls run in worker processes, killed at
their deadline, through the dispatch seam, with the results, errors and messages of threads."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolContext, ToolMetadata, ToolRegistry
from toolregistry.errors import ToolCallError

ISOLATED = ToolMetadata(isolation="process")


# The tools: module-level functions, so that a worker process can import them by name.
def pid() -> int:
    return os.getpid()


async def apid(delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return os.getpid()


def fails(text: str) -> str:
    raise ValueError(text)


def refuses() -> str:
    raise ToolCallError("quota exhausted", kind="remote")


class Odd(Exception):
    def __init__(self, a: int, b: int) -> None:  # cannot be rebuilt from its args: no pickle
        super().__init__(f"odd {a} {b}")


def odd() -> str:
    raise Odd(1, 2)


def sleeper(path: str, seconds: float) -> str:
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return "woke"


def spin(path: str, seconds: float) -> int:
    Path(path).write_text(str(os.getpid()))
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
    return n


def dies() -> str:
    os._exit(3)


def add(a: int, b: int) -> int:
    return a + b


def wants_context(ctx: ToolContext) -> str:
    return "never"


def unpicklable_result() -> Any:
    return lambda: None


REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("request", default=None)


def inject_request(carrier: MutableMapping[str, str]) -> None:
    value = REQUEST.get()
    if value:
        carrier["x-request-id"] = value


@contextlib.contextmanager
def continue_request(carrier: Mapping[str, str]) -> Iterator[None]:
    token = REQUEST.set(carrier.get("x-request-id"))
    try:
        yield
    finally:
        REQUEST.reset(token)


def request_id() -> str | None:
    return REQUEST.get()


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry()
    for fn in (pid, apid, fails, refuses, odd, sleeper, spin, dies, add, wants_context,
               unpicklable_result):
        reg.register(fn, metadata=ISOLATED)
    reg.register(fails, name="fails_here")  # the same tool on a thread, for comparison
    yield reg
    reg.close()
    assert multiprocessing.active_children() == []  # close() leaves no process behind


def _gone(pid_file: Path) -> bool:
    deadline = time.monotonic() + 5
    target = int(pid_file.read_text())
    while time.monotonic() < deadline:
        try:
            os.kill(target, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_isolated_tools_run_in_another_process_on_both_apis(registry: ToolRegistry) -> None:
    here = os.getpid()
    assert registry.invoke("pid", {}).value != here
    assert asyncio.run(registry.ainvoke("pid", {})).value != here
    assert registry.invoke("apid", {}).value != here
    calls: list[dict[str, Any]] = [{"id": str(i), "name": "apid" if i % 2 else "pid",
                                    "arguments": {}}
             for i in range(6)]
    for results in (registry.execute_tool_calls(calls),
                    asyncio.run(registry.aexecute_tool_calls(calls))):
        assert all(r.ok and r.value != here for r in results), results
    assert registry.invoke("add", {"a": "2", "b": 3}).content == "5"  # validated here


def test_errors_read_as_they_do_on_a_thread(registry: ToolRegistry) -> None:
    isolated = registry.invoke("fails", {"text": "boom"})
    local = registry.invoke("fails_here", {"text": "boom"})
    assert isolated.error_kind == local.error_kind == "execution"
    assert isolated.text == local.text.replace("fails_here", "fails")
    assert isolated.text == "Error: tool 'fails' failed: ValueError: boom"
    refused = registry.invoke("refuses", {})
    assert (refused.error_kind, refused.text) == ("remote", "Error: quota exhausted")
    assert registry.invoke("odd", {}).text == "Error: tool 'odd' failed: Odd: odd 1 2"
    bad = registry.invoke("add", {"a": "x", "b": 1})
    assert bad.error_kind == "invalid_arguments"  # never reached a process
    sent = registry.invoke("unpicklable_result", {})
    assert sent.error_kind == "execution" and "could not be sent across" in sent.text


def test_a_call_past_its_deadline_has_its_process_killed(registry: ToolRegistry,
                                                        tmp_path: Path) -> None:
    here = os.getpid()

    def warm() -> None:
        """A worker process is up and has imported this module before the timed call: a call
        goes to the idle worker, so the deadline is the call's, not that of a fresh worker's
        start, which takes seconds on a loaded machine (that made this test fail at load 8)."""
        assert registry.invoke("pid", {}).value != here

    for name in ("sleeper", "spin"):
        marker = tmp_path / f"{name}.pid"
        warm()
        begun = time.monotonic()
        result = registry.invoke(name, {"path": str(marker), "seconds": 60}, timeout=2.0)
        assert result.error_kind == "timeout", result
        assert time.monotonic() - begun < 10
        assert marker.exists(), f"{name}: the call never started in its worker process"
        assert _gone(marker), f"{name}: the worker process still runs"
    marker = tmp_path / "async.pid"
    warm()
    result = asyncio.run(registry.ainvoke("sleeper", {"path": str(marker), "seconds": 60},
                                          timeout=2.0))
    assert result.error_kind == "timeout" and marker.exists() and _gone(marker)
    # no busy thread left behind: the calls ran in the killed processes, and this process
    # keeps at most one driver thread per worker process
    drivers = [t for t in threading.enumerate() if t.name == "toolregistry-process-driver"]
    assert len(drivers) <= (os.cpu_count() or 2)
    assert registry.invoke("pid", {}).ok  # a fresh worker takes the next call


def _job(registry: ToolRegistry, name: str, timeout: float = 60.0, **arguments: Any) -> Any:
    """A call of ``name`` as the registry hands it to a runner."""
    import contextvars

    from toolregistry import ToolCall
    from toolregistry.types import Job

    tool = registry[name]
    assert tool.callable is not None
    return Job(tool=tool, call=ToolCall(name, arguments, id=f"call_{name}"), fn=tool.callable,
               is_async=False, args=(), kwargs=arguments, timeout=timeout,
               deadline=time.monotonic() + timeout, context=contextvars.copy_context())


def test_a_call_submitted_as_the_last_one_ends_goes_to_its_worker(registry: ToolRegistry,
                                                                   tmp_path: Path) -> None:
    """The worker that just answered takes the next call, even one submitted in the instant
    before its driver waits for work again (here: from the finished call's done callback, on
    the driver's own thread). Starting a fresh worker process for it instead would begin the
    call seconds late on a loaded machine, its deadline already running."""
    from toolregistry._execution._processes import ProcessRunner

    runner = ProcessRunner(max_workers=2)
    try:
        marker = tmp_path / "first.pid"
        chained: list[Any] = []
        first = runner.submit(_job(registry, "sleeper", path=str(marker), seconds=0.3))
        first.add_done_callback(lambda _: chained.append(runner.submit(_job(registry, "pid"))))
        assert first.result(60) == "woke"
        deadline = time.monotonic() + 60
        while not chained and time.monotonic() < deadline:
            time.sleep(0.01)
        assert chained[0].result(60) == int(marker.read_text()), "a new worker took the call"
    finally:
        runner.close()


def test_a_worker_that_dies_is_an_error_and_is_replaced(registry: ToolRegistry) -> None:
    died = registry.invoke("dies", {})
    assert died.error_kind == "execution" and "worker process died" in died.text
    assert registry.invoke("add", {"a": 1, "b": 2}).content == "3"


def test_what_cannot_cross_is_named(registry: ToolRegistry) -> None:
    result = registry.invoke("wants_context", {})
    assert result.error_kind == "execution" and "ToolContext" in result.text

    def local() -> int:
        return 1

    registry.register(local, metadata=ISOLATED)
    result = registry.invoke("local", {})
    assert result.error_kind == "execution"
    assert "'local' cannot run in a process" in result.text and "top level" in result.text


def test_namespaces_from_the_setting_and_the_thread_opt_out() -> None:
    reg = ToolRegistry(process_namespaces=["heavy"])
    try:
        reg.register(pid, namespace="heavy")
        reg.register(pid, namespace="light")
        reg.register(pid, namespace="heavy", name="here",
                     metadata=ToolMetadata(isolation="thread"))
        names = sorted(reg.list_tools())
        by_name = {n: reg.invoke(n, {}).value for n in names}
        here = os.getpid()
        assert [by_name[n] != here for n in names] == [
            "heavy" in n and "here" not in n for n in names], by_name
    finally:
        reg.close()


def test_isolation_must_be_process_thread_or_none() -> None:
    with pytest.raises(ValueError, match='isolation must be "process", "thread" or None'):
        ToolMetadata(isolation="ray")  # type: ignore[arg-type]


def test_a_carrier_with_a_continuer_reaches_the_worker_process() -> None:
    from toolregistry import _context
    from toolregistry.plugin import add_carrier

    saved = _context._carriers, _context._continuers
    reg = ToolRegistry()
    try:
        add_carrier(inject_request, continue_request)
        reg.register(request_id, metadata=ISOLATED)
        token = REQUEST.set("abc")
        try:
            assert reg.invoke("request_id", {}).value == "abc"
        finally:
            REQUEST.reset(token)
        assert reg.invoke("request_id", {}).value is None  # nothing current, nothing carried
    finally:
        reg.close()
        _context._carriers, _context._continuers = saved
