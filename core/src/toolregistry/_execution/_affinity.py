"""Waking a worker on its caller's CPU (Linux): the pool's hand-off, made cheap
(``handoff-pinning``, ``"auto"`` by default; ``false`` turns it off). Only the pool's own
worker threads are ever pinned, and only until they wake: the affinity of every other thread,
the caller's included, is the application's business and never changed.

A sync call with a deadline crosses to a worker thread and back. When the worker sleeps on the
other CPU, each crossing wakes a halted CPU -- on a virtual machine an inter-processor
interrupt and a VM exit, many times what the same hand-off on one CPU costs. So, just before
it wakes a worker for a call it will wait for, the caller pins that worker to the CPU it runs
on (if the worker may run there at all); the worker, once awake and before it runs anything,
puts back the CPU mask it had. The tool itself -- and any process it
starts, which inherits the mask -- therefore always runs with the worker's own mask and
migrates as the scheduler likes; only the wake-up is placed. A sync caller that then waits
gives its CPU to the worker (``WorkerPool.let_run``), so that the answer is in when it runs
again: were it woken by the answer while the worker still runs on its CPU, the scheduler would
put it on the idle one.

That pays only while some CPU is idle (a halted CPU is what makes the wake-up dear). When every
CPU is busy, a wake-up elsewhere is cheap anyway, and waiting for the caller's CPU alone costs
more. So with ``"auto"`` a worker is pinned only while fewer tasks are runnable than there are
CPUs, as ``/proc/loadavg`` says (read at most every 10 ms).

Where there is no ``os.sched_setaffinity`` or ``sched_getcpu`` (macOS, Windows) nothing is
pinned; a failing system call (refused in a container) switches pinning off for the pool,
logged once at debug level.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from typing import Any

from toolregistry._log import log

__all__ = ["AUTO", "Pinning", "available"]

AUTO = "auto"
_LOOK_EVERY = 0.01


def _load_getcpu() -> Callable[[], int] | None:
    """libc's ``sched_getcpu`` (a vDSO read, no system call), or ``None``."""
    if not hasattr(os, "sched_setaffinity") or not hasattr(os, "sched_getaffinity"):
        return None
    try:
        # PyDLL: called with the interpreter lock held (no release and re-take around a
        # call that takes a fraction of a microsecond).
        getcpu = ctypes.PyDLL(None).sched_getcpu
    except (OSError, AttributeError, TypeError):
        return None
    getcpu.restype = ctypes.c_int
    getcpu.argtypes = ()
    try:
        if getcpu() < 0:
            return None
    except OSError:
        return None
    return getcpu


_getcpu: Callable[[], int] | None = None
_loaded = False


def available() -> bool:
    """Can this platform pin a thread to the current CPU?"""
    global _getcpu, _loaded
    if not _loaded:
        _getcpu = _load_getcpu()
        _loaded = True
    return _getcpu is not None


class _Load:
    """Is a CPU idle now? From the runnable tasks in ``/proc/loadavg`` (one read of an open
    file), looked at again at most every :data:`_LOOK_EVERY` seconds."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.cpus = os.cpu_count() or 1  # the runnable count is over every online CPU
        self.looked = -1.0
        self.idle = True

    def idle_cpu(self) -> bool:
        now = time.monotonic()
        if now - self.looked < _LOOK_EVERY:
            return self.idle
        self.looked = now
        try:
            if self.fd is None:
                self.fd = os.open("/proc/loadavg", os.O_RDONLY)
            # "0.52 0.58 0.59 1/467 12345": runnable tasks / all tasks, the caller included
            running = int(os.pread(self.fd, 128, 0).split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            self.idle = True  # not known: pin (what a wake-up on an idle CPU would cost)
        else:
            # The caller is one of them. While workers are pinned, so is (on Linux 6.12 and
            # later) the worker that last went to sleep on the caller's CPU: EEVDF's delayed
            # dequeue keeps it counted for a while (nine reads of ten on an idle machine), so
            # one more is allowed then -- the pinning's own shadow, not another CPU's work.
            self.idle = running < self.cpus + self.idle
        return self.idle


_load = _Load()


class Pinning:
    """One pool's pinning of the workers it wakes (``on``: still doing it; ``auto``: only
    while a CPU is idle)."""

    __slots__ = ("auto", "on")

    def __init__(self, mode: bool | str) -> None:
        self.on = bool(mode) and available()
        self.auto = mode == AUTO

    def pin(self, native: int) -> frozenset[int] | None:
        """Pin thread ``native`` (an idle worker about to be woken) to this thread's CPU;
        returns the mask it had (to put back once it is awake), or ``None`` when it was left
        alone: this CPU is not one it may use (the application narrowed its mask), or the
        system refused (pinning is then off for good)."""
        getcpu = _getcpu
        if getcpu is None or (self.auto and not _load.idle_cpu()):
            return None
        try:
            # The worker's mask now (not one kept from earlier): whoever changed it since
            # -- the application, ``taskset -a`` -- is never overridden.
            mask = frozenset(os.sched_getaffinity(native))
            cpu = getcpu()
            if cpu not in mask or len(mask) == 1:
                return None
            os.sched_setaffinity(native, (cpu,))
        except OSError as exc:
            self._failed(exc)
            return None
        return mask

    def unpin(self, mask: Any) -> None:
        """On the woken worker: put its own mask back, before it runs anything."""
        try:
            os.sched_setaffinity(0, mask)
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        if self.on:
            self.on = False
            log.debug("pool.pinning_off", error=f"{type(exc).__name__}: {exc}")
