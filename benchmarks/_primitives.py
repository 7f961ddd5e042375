"""Bare hand-off primitives for ``handoff_bench.py --primitives``: one thread hands a call to
another and waits for the answer, each way done with a different primitive, no registry.

The caller runs about 3 µs of Python before each hand-off (what the pipeline does around a
call) and the "tool" about 1 µs. Each mode runs in a fresh process of its own (an idle thread
of another mode changes how the scheduler places these: with an anyio portal's thread in the
process, the unpinned hand-off cost a tenth on a quiet machine), the modes' processes in a
shuffled order per repeat; medians of the wall clock and the process's CPU time per call over
every round. Standard library only, except the anyio row (skipped without it).
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures as cf
import ctypes
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

CALLER_WORK = 150  # loop steps: about 3 µs
TOOL_WORK = 40  # about 1 µs


def _spend(n: int) -> int:
    x = 0
    for i in range(n):
        x += i
    return x


def tool() -> int:
    return _spend(TOOL_WORK)


class _PipeWorker:
    """The kernel pool's primitive: the worker blocks reading its pipe, the answer comes back
    through a raw lock. ``pin``: the caller pins the worker on its own CPU before the write and
    yields after it, the worker takes its mask back once awake (``handoff-pinning``).
    ``caller_spin`` / ``worker_spin``: seconds the caller polls for the answer, the worker for
    its next call, before sleeping (releasing the interpreter between looks)."""

    def __init__(self, pin: bool = False, caller_spin: float = 0.0,
                 worker_spin: float = 0.0) -> None:
        self.rfd, self.wfd = os.pipe()
        self.pin, self.caller_spin, self.worker_spin = pin, caller_spin, worker_spin
        self.job: Callable[[], Any] | None = None
        self.restore: Any = None
        self.sleeping = not worker_spin  # a polling worker says when it sleeps
        self.guard = threading.Lock()
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.native = 0
        self.getcpu: Any = None
        if pin:
            self.getcpu = ctypes.PyDLL(None).sched_getcpu
            self.getcpu.restype, self.getcpu.argtypes = ctypes.c_int, ()
        ready = threading.Event()
        threading.Thread(target=self._main, args=(ready,), daemon=True).start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        self.native = threading.get_native_id()
        ready.set()
        while True:
            sleep = True
            if self.worker_spin:
                end = time.perf_counter() + self.worker_spin
                while self.job is None and time.perf_counter() < end:
                    os.sched_yield()  # releases the interpreter lock
                with self.guard:
                    self.sleeping = sleep = self.job is None
            if sleep:
                if os.read(self.rfd, 1) != b"\x01":
                    return
                if self.restore is not None:
                    mask, self.restore = self.restore, None
                    os.sched_setaffinity(0, mask)
            job, self.job = self.job, None
            assert job is not None
            job()
            self.done.release()

    def call(self) -> None:
        with self.guard:
            self.job = tool
            wake = self.sleeping
            if self.worker_spin:
                self.sleeping = False
        if wake:
            if self.pin:
                self.restore = os.sched_getaffinity(self.native)
                os.sched_setaffinity(self.native, (self.getcpu(),))
            os.write(self.wfd, b"\x01")
            if self.pin:
                os.sched_yield()
        if self.caller_spin:
            end = time.perf_counter() + self.caller_spin
            acquire = self.done.acquire
            while not acquire(False):
                if time.perf_counter() > end:
                    acquire()
                    return
                os.sched_yield()
            return
        self.done.acquire()


class _LockWorker:
    """Raw locks both ways (the worker blocks on one, the caller on the other)."""

    def __init__(self) -> None:
        self.go = _thread.allocate_lock()
        self.go.acquire()
        self.done = _thread.allocate_lock()
        self.done.acquire()
        threading.Thread(target=self._main, daemon=True).start()

    def _main(self) -> None:
        while True:
            self.go.acquire()
            tool()
            self.done.release()

    def call(self) -> None:
        self.go.release()
        self.done.acquire()


class _QueueWorker:
    """A ``queue.SimpleQueue`` to the worker, a raw lock back."""

    def __init__(self) -> None:
        self.q: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.done = _thread.allocate_lock()
        self.done.acquire()
        threading.Thread(target=self._main, daemon=True).start()

    def _main(self) -> None:
        while self.q.get():
            tool()
            self.done.release()

    def call(self) -> None:
        self.q.put(1)
        self.done.acquire()


async def atool() -> int:
    return tool()


def _executor() -> Callable[[], Any]:
    executor = cf.ThreadPoolExecutor(1)
    return lambda: executor.submit(tool).result()


def _asyncio() -> Callable[[], Any]:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return lambda: asyncio.run_coroutine_threadsafe(atool(), loop).result()


def _anyio() -> Callable[[], Any]:
    from anyio.from_thread import start_blocking_portal

    manager = start_blocking_portal()  # kept: its finalizer would stop the portal
    portal = manager.__enter__()
    return lambda: (manager, portal.call(atool))[1]


MODES: dict[str, Callable[[], Callable[[], Any]]] = {
    "inline (no hand-off)": lambda: tool,
    "pipe + raw lock (the pool, unpinned)": lambda: _PipeWorker().call,
    "pipe + raw lock, pinned + yield": lambda: _PipeWorker(pin=True).call,
    "ThreadPoolExecutor submit + result": _executor,
    "raw lock + raw lock": lambda: _LockWorker().call,
    "SimpleQueue + raw lock": lambda: _QueueWorker().call,
    "caller polls <= 100 µs for the answer": lambda: _PipeWorker(caller_spin=1e-4).call,
    "worker polls <= 200 µs for work": lambda: _PipeWorker(worker_spin=2e-4).call,
    "asyncio loop: run_coroutine_threadsafe": _asyncio,
    "anyio BlockingPortal.call": _anyio,
}


def _available(mode: str) -> bool:
    if "pinned" in mode:
        return hasattr(os, "sched_setaffinity")
    if "anyio" in mode:
        try:
            import anyio  # noqa: F401
        except ImportError:
            return False
    return True


def worker(mode: str, rounds: int, calls: int) -> None:
    """In a fresh process: ``rounds`` timings of one mode, printed as JSON."""
    fn = MODES[mode]()
    if "polls" in mode:
        # A polling thread competes with the other for the interpreter: under load a call
        # can take a switch interval (5 ms) or more, so fewer calls keep the run short.
        calls = max(20, calls // 10)
    for _ in range(50):
        fn()
    print(json.dumps([_measure(fn, calls) for _ in range(rounds)]), flush=True)
    os._exit(0)  # an anyio portal's thread would hold the exit


def _measure(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    spend = _spend
    t0, p0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        spend(CALLER_WORK)
        fn()
    return ((time.perf_counter() - t0) / calls, (time.process_time() - p0) / calls)


def main(*, quick: bool, repeats: int, load: Callable[[], float]) -> int:
    rounds, calls = (3, 200) if quick else (10, 500)
    order = [m for m in MODES if _available(m)]
    samples: dict[str, list[tuple[float, float]]] = {m: [] for m in order}
    rng = random.Random(0)
    loads = [load()]
    for _ in range(repeats):
        rng.shuffle(order)
        for mode in order:
            out = subprocess.run(
                [sys.executable, __file__, mode, str(rounds), str(calls)],
                capture_output=True, text=True, check=True, timeout=600)
            samples[mode].extend(tuple(x) for x in json.loads(out.stdout))
        loads.append(load())
    print(f"\nhandoff_bench --primitives: {repeats} process(es) x {rounds} rounds x {calls} "
          f"calls per mode; load {min(loads):.2f}-{max(loads):.2f}; medians per call, µs "
          "(the caller's 3 µs included)")
    print(f"{'primitive':42s} {'wall':>8s} {'CPU':>8s}")
    for mode in (m for m in MODES if m in samples):
        values = samples[mode]
        wall = statistics.median(v[0] for v in values) * 1e6
        cpu = statistics.median(v[1] for v in values) * 1e6
        print(f"{mode:42s} {wall:8.1f} {cpu:8.1f}")
    return 0


if __name__ == "__main__":
    worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
