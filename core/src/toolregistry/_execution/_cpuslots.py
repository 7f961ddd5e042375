"""The worker pool's CPU slots: which calls may start while CPU-bound tools run, and the watch
over the running calls that learns which tools are CPU-bound and stops overdue calls.

Threads share one interpreter lock: every thread running Python code makes everyone else wait
longer for it (about 5 ms per such thread at each switch), and the callers waiting for their
answers are among them. So once the pool has had to grow (the spawner thread exists), while
more calls run than there are CPU slots (one less than the CPUs, at least one), the spawner
thread looks at the running calls' CPU time every :data:`_WATCH` seconds (ten times less often
while fewer run, never while none do; nothing on the calls' own path): a tool whose calls keep
a CPU busy is marked CPU-bound, and its calls then start only while fewer than ``cpu_slots``
CPU-bound calls run (more would not finish sooner: they would share the same CPUs). Calls held
back wait in order; a call whose deadline passes while it waits ends without running, answered
on time. A CPU-bound tool that is seen waiting instead (I/O) is unmarked. Calls a tool makes
from a worker are never held back (its caller holds a slot). The same look stops running calls
whose deadline passed, in one go, without waiting for their callers to get the interpreter.
The interpreter's switch interval is the application's: it is never changed here.

:class:`CpuSlots` is the base class of :class:`~._threads.WorkerPool`: its methods run on the
pool's own paths (admission under the pool's lock, the watch on its spawner thread) with no
indirection, and read the pool's workers and backlog.
"""

from __future__ import annotations

import _thread
import collections
import os
import time
from collections.abc import Callable

from toolregistry._log import log

from ._work import _RUNNING, Work, _Worker

__all__ = ["CpuSlots"]

_WATCH = 0.01
"""Seconds between two looks at the running calls while more run than there are CPU slots."""


class CpuSlots:
    """The CPU-slot state of a worker pool and what admits, holds and watches its calls.

    ``cpu_slots``: how many calls of CPU-bound tools may run at once; ``heavy_keys``: the tools
    seen keeping a CPU busy; ``_held``: their calls waiting for a slot, in order;
    ``_heavy_running`` / ``_running``: calls holding a slot / running at all.
    """

    # The pool's (WorkerPool), read and changed here under its lock.
    lock: _thread.LockType
    _workers: set[_Worker]
    _backlog: collections.deque[Work]
    interrupt_many: Callable[[list[Work]], None]

    def __init__(self, cpu_slots: int | None) -> None:
        self.cpu_slots = cpu_slots if cpu_slots is not None else max(1, (os.cpu_count() or 2) - 1)
        self.heavy_keys: set[str] = set()  # tools seen keeping a CPU busy
        self._held: collections.deque[Work] = collections.deque()  # waiting for a CPU slot
        self._heavy_running = 0
        self._running = 0
        self._samples: dict[_Worker, tuple[Work, float, int]] = {}
        self._sampled_at = self._process_at = 0.0

    # -- admission (under the lock) -------------------------------------------------------
    def _admit(self, work: Work) -> bool:
        """May ``work`` start now? Takes a CPU slot for a CPU-bound tool's call; False (it
        waits in ``_held``) when none is free."""
        if work.key is None or work.key not in self.heavy_keys:
            return True
        if self._heavy_running >= self.cpu_slots:
            self._held.append(work)
            return False
        work.heavy = True
        self._heavy_running += 1
        return True

    def _take(self) -> Work | None:
        """The next call to start: a held one when a CPU slot is free, else the oldest of the
        backlog that may start (the others are held)."""
        held = self._held
        if held and self._heavy_running < self.cpu_slots:
            work = held.popleft()
            work.heavy = True
            self._heavy_running += 1
            return work
        backlog = self._backlog
        while backlog:
            work = backlog.popleft()
            if not self.heavy_keys or self._admit(work):
                return work
        return None

    # -- watching CPU use and deadlines (on the spawner thread) ---------------------------
    def _watch(self) -> None:
        """Look at the running calls: stop those past their deadline, and learn which tools
        keep a CPU busy from their threads' CPU time since the last look."""
        now = time.perf_counter()
        process = time.process_time()
        with self.lock:
            running = [(w, w.work) for w in self._workers
                       if w.work is not None and w.work.state == _RUNNING]
        overdue = [work for _, work in running
                   if work.deadline is not None and work.deadline <= now]
        if overdue:
            self.interrupt_many(overdue)
        samples: dict[_Worker, tuple[Work, float, int]] = {}
        used: list[tuple[Work, float, _Worker]] = []
        previous = self._samples
        for worker, work in running:
            if worker.clock is None:
                continue
            try:
                cpu = time.clock_gettime(worker.clock)
            except OSError:  # the thread just ended
                continue
            before = previous.get(worker)
            if before is not None and before[0] is work:
                samples[worker] = (work, cpu, before[2])
                used.append((work, cpu - before[1], worker))
            else:
                samples[worker] = (work, cpu, 0)
        span, self._sampled_at = now - self._sampled_at, now
        spent, self._process_at = process - self._process_at, process
        if not used or span <= 0 or span > 5.0:
            self._samples = samples
            return
        total = sum(cpu for _, cpu, _ in used)
        # The calls keep the interpreter busy: at least half a CPU, or (on a loaded machine,
        # where this process gets less) most of what the process got.
        busy = total >= 0.5 * span or (total >= 0.5 * spent and spent >= 0.05 * span)
        # Otherwise a CPU-bound tool's call that hardly used a CPU, and did not wait for one
        # either, waits (on I/O). (Not while the calls keep the interpreter busy: a CPU-bound
        # call then uses little too, waiting for it; nor while this process kept a CPU busy
        # at all: threads queued for the interpreter or for the pool's lock behind others
        # look asleep too, and taking their tool for I/O-bound let every call of it start at
        # once -- 16 of them, answers seconds late; nor on a loaded machine, where it waits
        # for a CPU.)
        waiting = [] if busy or spent >= 0.5 * span else [
            work for work, cpu, worker in used
            if cpu < 0.05 * span and (work.heavy or work.key in self.heavy_keys)
            and _sleeping(worker, now)]
        with self.lock:
            if busy:
                # Those that take a fair share of it, twice in a row or over a long look,
                # are CPU-bound.
                active = sum(1 for _, cpu, _ in used if cpu > 0.02 * span)
                share = total / max(1, active)
                for work, cpu, worker in used:
                    if cpu < 0.5 * share:
                        continue
                    strikes = samples[worker][2] + 1
                    samples[worker] = (work, samples[worker][1], strikes)
                    key = work.key
                    if (strikes >= 2 or span >= 5 * _WATCH) and key is not None \
                            and key not in self.heavy_keys:
                        self._mark_heavy(key)
            for work in waiting:  # its slot is for using a CPU; its tool is not CPU-bound
                if work.state == _RUNNING:
                    if work.heavy:
                        work.heavy = False
                        self._heavy_running -= 1
                    if work.key in self.heavy_keys:
                        self.heavy_keys.discard(work.key)
                        log.debug("pool.cpu_bound", tool=work.key, cpu_bound=False)
            if self._held and any(w.key not in self.heavy_keys for w in self._held):
                # Calls of tools no longer taken for CPU-bound wait no more.
                freed = [w for w in self._held if w.key not in self.heavy_keys]
                kept = [w for w in self._held if w.key in self.heavy_keys]
                self._held = collections.deque(kept)
                self._backlog.extendleft(reversed(freed))
        self._samples = samples

    def _mark_heavy(self, key: str) -> None:
        """Under the lock: calls of tool ``key`` keep a CPU busy; its running calls take CPU
        slots (more than there are, until they end)."""
        self.heavy_keys.add(key)
        log.debug("pool.cpu_bound", tool=key, cpu_bound=True)
        for worker in self._workers:
            work = worker.work
            if work is not None and work.key == key and work.state == _RUNNING \
                    and not work.heavy:
                work.heavy = True
                self._heavy_running += 1


def _sleeping(worker: _Worker, now: float) -> bool:
    """Did ``worker``'s thread spend most of the time since it was last asked (``now``:
    ``perf_counter``) asleep rather than waiting for a CPU? (Linux's per-thread scheduler
    statistics; unknown elsewhere: True.) The first time it is asked: not known yet."""
    try:
        with open(f"/proc/self/task/{worker.native}/schedstat", "rb") as stats:
            waited = int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return True
    (before, asked), worker.waited = worker.waited, (waited, now)
    return before >= 0 and waited - before < 0.5 * (now - asked)
