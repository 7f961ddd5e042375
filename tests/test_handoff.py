"""Waking a worker on its caller's CPU (the cost of the hand-off): the pin is never seen by
the tool -- its CPU mask, and that of a process it starts, is the worker's own; a mask the
application narrowed is kept; a batch's spread workers are not pinned; only the pool's own
workers are ever pinned; a refusing system call, the setting and platforms without the calls
turn it off. The tests run with ``handoff_pinning=True`` and with the default (``"auto"``) on a
machine made to look idle (``/proc/loadavg`` read from a file saying one task is runnable): a
loaded test machine may never have an idle CPU, and ``"auto"`` would then pin nothing.

``os.sched_setaffinity`` is observed through a wrapper that records each call and makes it
(the real call: the tests see the real masks the threads end up with)."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from toolregistry import ToolRegistry
from toolregistry._execution._affinity import available

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2
    or not available(), reason="pinning needs Linux's affinity calls and two CPUs to use")

MASK = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


class Recorder:
    """``os.sched_setaffinity`` recorded: (thread id, mask) of each call, then made, and the
    thread whose mask it changed (its name: ``0`` is the calling thread);
    ``refuse``: fail pins to one CPU with this errno instead."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = os.sched_setaffinity
        self.calls: list[tuple[int, frozenset[int]]] = []
        self.targets: list[str] = []
        self.refuse: int | None = None
        monkeypatch.setattr(os, "sched_setaffinity", self)

    def __call__(self, pid: int, mask: Any) -> None:
        mask = frozenset(mask)
        self.calls.append((pid, mask))
        native = pid or threading.get_native_id()
        self.targets.extend(t.name for t in threading.enumerate() if t.native_id == native)
        if self.refuse is not None and len(mask) == 1:
            raise OSError(self.refuse, os.strerror(self.refuse))
        self.real(pid, mask)

    @property
    def pins(self) -> list[tuple[int, frozenset[int]]]:
        """Calls that pinned another thread to one CPU."""
        return [(pid, mask) for pid, mask in self.calls if pid != 0 and len(mask) == 1]


@pytest.fixture
def setaffinity(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    return Recorder(monkeypatch)


def tools(reg: ToolRegistry) -> ToolRegistry:
    def mask() -> list[int]:
        """The CPUs this thread may run on."""
        return sorted(os.sched_getaffinity(0))

    def child_mask() -> list[int]:
        """The CPUs a process started here may run on."""
        out = subprocess.run([sys.executable, "-c",
                              "import os; print(sorted(os.sched_getaffinity(0)))"],
                             capture_output=True, text=True, check=True, timeout=60)
        return [int(c) for c in out.stdout.strip(" []\n").split(",")]

    def native() -> int:
        """This worker's thread id."""
        return threading.get_native_id()

    for fn in (mask, child_mask, native):
        reg.register(fn)
    return reg


@pytest.fixture
def idle_machine(tmp_path: Any) -> Iterator[None]:
    """``"auto"`` sees an idle CPU at every look: ``/proc/loadavg`` says one task runs."""
    from toolregistry._execution._affinity import _load

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.01 0.02 0.03 1/90 4242\n")
    saved = _load.fd
    _load.fd, _load.looked = os.open(loadavg, os.O_RDONLY), -1.0
    try:
        yield
    finally:
        os.close(_load.fd)
        _load.fd, _load.looked = saved, -1.0


@pytest.fixture(params=["true", "default"])
def reg(request: pytest.FixtureRequest) -> Iterator[ToolRegistry]:
    """A registry pinning always, or by default on an idle machine."""
    if request.param == "default":
        request.getfixturevalue("idle_machine")
        registry = ToolRegistry(load_plugins=[])
    else:
        registry = ToolRegistry(load_plugins=[], handoff_pinning=True)
    with registry:
        yield tools(registry)


def masks(reg: ToolRegistry, n: int = 20, name: str = "mask") -> set[frozenset[int]]:
    out = set()
    for _ in range(n):
        result = reg.invoke(name, {})
        assert result.ok, result.content
        out.add(frozenset(result.value))
    return out


def test_the_tool_runs_with_the_workers_own_mask(reg: ToolRegistry,
                                                  setaffinity: Recorder) -> None:
    assert masks(reg) == {MASK}
    assert len(setaffinity.pins) >= 10  # the workers were pinned to wake up: and let go
    assert reg._executor is not None and reg._executor.pool.pinning.on
    # Only the pool's own workers: pinned by their callers, let go by themselves.
    assert set(setaffinity.targets) == {"toolregistry-worker"}
    assert len(setaffinity.targets) == len(setaffinity.calls)
    assert frozenset(os.sched_getaffinity(0)) == MASK  # the caller's own


def test_a_process_started_by_a_tool_gets_the_whole_mask(reg: ToolRegistry,
                                                          setaffinity: Recorder) -> None:
    masks(reg, 3)  # a worker exists and is idle: the next call pins it to wake it
    before = len(setaffinity.pins)
    assert masks(reg, 3, "child_mask") == {MASK}
    assert len(setaffinity.pins) > before


def test_the_async_api_lets_go_of_the_pin_too(reg: ToolRegistry,
                                              setaffinity: Recorder) -> None:
    async def main() -> set[frozenset[int]]:
        seen = set()
        for _ in range(20):
            result = await reg.ainvoke("mask", {})
            assert result.ok, result.content
            seen.add(frozenset(result.value))
        return seen

    assert asyncio.run(main()) == {MASK}
    assert setaffinity.pins


def test_a_mask_the_application_narrowed_is_kept(reg: ToolRegistry,
                                                 setaffinity: Recorder) -> None:
    """The worker's mask narrowed after it started (as ``taskset -a`` does) stays narrowed,
    and a caller on a CPU the worker may not use does not pin it there."""
    first, other = sorted(MASK)[0], sorted(MASK)[-1]
    worker = reg.invoke("native", {}).value
    setaffinity.real(worker, {first})
    assert masks(reg, 5) == {frozenset({first})}
    seen: list[set[frozenset[int]]] = []

    def caller() -> None:
        setaffinity.real(0, {other})  # this thread only
        setaffinity.calls.clear()
        seen.append(masks(reg, 5))

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join()
    assert seen == [{frozenset({first})}]
    assert not setaffinity.pins  # never pinned to a CPU it may not use
    assert frozenset(os.sched_getaffinity(worker)) == {first}


@pytest.mark.parametrize("how", ["taskset", "sched_setaffinity"])
def test_a_process_mask_the_application_narrowed_is_kept(how: str, tmp_path: Any) -> None:
    """By default, in a process the application narrowed to one CPU (``taskset -c``, or
    ``os.sched_setaffinity`` of the process before the registry starts), tools and their
    callers keep that mask, and nothing is pinned."""
    first = min(MASK)
    code = ("import os, sys\n"
            "if sys.argv[1] == 'sched_setaffinity':\n"
            f"    os.sched_setaffinity(0, {{{first}}})\n"
            "calls = []\n"
            "real = os.sched_setaffinity\n"
            "os.sched_setaffinity = lambda pid, mask: (calls.append(pid), real(pid, mask))\n"
            "from toolregistry import ToolRegistry\n"
            "r = ToolRegistry(load_plugins=[])\n"
            "r.register(lambda: sorted(os.sched_getaffinity(0)), name='mask')\n"
            "seen = {tuple(r.invoke('mask', {}).value) for _ in range(30)}\n"
            "r.close()\n"
            "print(sorted(seen), sorted(os.sched_getaffinity(0)), calls)\n")
    command = [sys.executable, "-c", code, how]
    if how == "taskset":
        if not shutil.which("taskset"):
            pytest.skip("no taskset")
        command = ["taskset", "-c", str(first), *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"[({first},)] [{first}] []"


def test_a_batch_pins_only_the_worker_its_caller_waits_for(reg: ToolRegistry,
                                                          setaffinity: Recorder) -> None:
    def slow_mask() -> list[int]:
        threading.Event().wait(0.05)  # long enough for the batch to be spread over workers
        return sorted(os.sched_getaffinity(0))

    reg.register(slow_mask)
    calls = [{"id": str(i), "name": "slow_mask", "arguments": {}} for i in range(4)]
    reg.execute_tool_calls(calls)  # the workers exist and are idle
    setaffinity.calls.clear()
    results = reg.execute_tool_calls(calls)
    assert all(r.ok for r in results)
    assert {frozenset(r.value) for r in results} == {MASK}
    assert len(setaffinity.pins) <= 1  # the spread workers were woken where they were


@pytest.fixture
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    try:
        with capture_logs() as entries:
            yield entries
    finally:
        structlog.reset_defaults()


@pytest.mark.parametrize("code", [errno.EPERM, errno.EINVAL])
def test_a_refused_pin_turns_pinning_off_for_the_pool(
        reg: ToolRegistry, setaffinity: Recorder, logs: list[MutableMapping[str, Any]],
        code: int) -> None:
    setaffinity.refuse = code
    assert masks(reg) == {MASK}  # every call answered, on workers with their own mask
    assert reg._executor is not None and not reg._executor.pool.pinning.on
    assert len(setaffinity.pins) == 1  # tried once, then never again
    off = [e for e in logs if e["event"] == "pool.pinning_off"]
    assert len(off) == 1 and off[0]["log_level"] == "debug"
    assert os.strerror(code) in off[0]["error"]


def test_by_default_the_pool_pins_its_own_workers_while_a_cpu_is_idle(
        idle_machine: None, setaffinity: Recorder) -> None:
    """The default is ``"auto"``: on an idle machine the worker a sync caller waits for is
    woken on the caller's CPU -- a change of the affinity of the pool's own threads only."""
    with ToolRegistry(load_plugins=[]) as registry:
        assert registry.settings.handoff_pinning == "auto"
        assert masks(tools(registry), 20) == {MASK}
        pinning = registry._executor.pool.pinning if registry._executor else None
        assert pinning is not None and pinning.on and pinning.auto
    assert len(setaffinity.pins) >= 10
    assert set(setaffinity.targets) == {"toolregistry-worker"}
    assert frozenset(os.sched_getaffinity(0)) == MASK


def test_auto_pinning_keeps_the_tool_on_the_workers_own_mask(setaffinity: Recorder) -> None:
    """``"auto"``: pinned or not depending on the machine's load, the tool never sees it."""
    with ToolRegistry(load_plugins=[], handoff_pinning="auto") as registry:
        assert masks(tools(registry), 50) == {MASK}


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_setting_turns_pinning_off(how: str, setaffinity: Recorder,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "environment":
        monkeypatch.setenv("TOOLREGISTRY_HANDOFF_PINNING", "0")
        registry = ToolRegistry(load_plugins=[])
    else:
        registry = ToolRegistry(load_plugins=[], handoff_pinning=False)
    with registry:
        assert masks(tools(registry)) == {MASK}
        assert registry._executor is not None and not registry._executor.pool.pinning.on
    assert not setaffinity.calls


def test_without_the_affinity_calls_calls_run_as_before(tmp_path: Any) -> None:
    """As on macOS or Windows (no ``os.sched_setaffinity``): nothing is pinned."""
    code = ("import os, threading\n"
            "del os.sched_setaffinity\n"
            "from toolregistry import ToolRegistry\n"
            "r = ToolRegistry(load_plugins=[])\n"
            "r.register(lambda: threading.get_ident(), name='where')\n"
            "ids = {r.invoke('where', {}).value for _ in range(5)}\n"
            "assert threading.get_ident() not in ids, ids\n"
            "print(r._executor.pool.pinning.on)\n"
            "r.close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


class Yields:
    """``sched_yield`` of the pool's callers recorded (thread idents), then made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from toolregistry._execution import _threads

        self.real = _threads._sched_yield
        self.threads: list[int] = []
        monkeypatch.setattr(_threads, "_sched_yield", self)

    def __call__(self) -> None:
        self.threads.append(threading.get_ident())
        self.real()


def test_a_caller_gives_its_cpu_to_the_worker_it_pinned(
        reg: ToolRegistry, setaffinity: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned worker runs the call before its caller runs again, so no wake-up of the
    caller lands on the idle CPU: the caller yields once per pinned hand-off it waits for
    (a call still running when it comes to wait: this tool's take 2 ms)."""
    def slow() -> list[int]:
        threading.Event().wait(0.002)
        return sorted(os.sched_getaffinity(0))

    reg.register(slow)
    yields = Yields(monkeypatch)
    masks(reg, 3, "slow")
    setaffinity.calls.clear()
    yields.threads.clear()
    assert masks(reg, 20, "slow") == {MASK}
    assert len(setaffinity.pins) == 20
    assert yields.threads == [threading.get_ident()] * 20


def test_an_unpinned_worker_or_the_async_api_never_gets_the_callers_cpu(
        reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a thread that waits for a worker it pinned yields: not the event loop (which has
    other work to do), and not a caller whose worker was woken elsewhere (its CPU may have
    other processes' work waiting, which would take it for a whole time slice)."""
    yields = Yields(monkeypatch)

    async def main() -> None:
        for _ in range(10):
            assert (await reg.ainvoke("mask", {})).ok

    asyncio.run(main())
    with ToolRegistry(load_plugins=[], handoff_pinning=False) as unpinned:
        assert masks(tools(unpinned), 10) == {MASK}
    assert yields.threads == []


def test_auto_pinning_follows_the_runnable_tasks(tmp_path: Any) -> None:
    """``"auto"``: pinned while fewer tasks are runnable than CPUs, the caller included; once
    pinning, one more is allowed (the worker that has just gone to sleep may still be counted,
    Linux 6.12's delayed dequeue), not two; once off, it takes a free CPU again."""
    from toolregistry._execution._affinity import _Load

    loadavg = tmp_path / "loadavg"
    load = _Load()
    load.cpus = 2
    load.fd = os.open(loadavg, os.O_RDONLY | os.O_CREAT)
    try:
        seen = []
        for running in (1, 2, 2, 3, 2, 2, 1, 2):
            loadavg.write_text(f"0.10 0.20 0.30 {running}/90 4242\n")
            load.looked = -1.0  # look again now
            seen.append(load.idle_cpu())
        assert seen == [True, True, True, False, False, False, True, True]
    finally:
        os.close(load.fd)
