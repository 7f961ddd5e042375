"""Where sync calls run: the worker pool.

:class:`WorkerPool` hands a call to a worker thread through a pipe (the cheapest wake-up), can
stop a call that overran its deadline by raising :class:`~toolregistry.errors.ToolCancelled` in
its thread, and lets a batch of quick calls share one worker. It owns its workers, the backlog,
the spawner thread that starts new workers, the hand-off (pinned on the caller's CPU with
``_affinity``) and shutdown; which calls may start while CPU-bound tools run, and the watch
over the running calls, are its base class :class:`~._cpuslots.CpuSlots`; the records it hands
around (:class:`~._work.Work`) are in ``_work``. It knows nothing about tools: it runs
callables.
"""

from __future__ import annotations

import _thread
import collections
import contextvars
import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from toolregistry._log import log
from toolregistry.errors import ToolCancelled

from ._affinity import Pinning
from ._cpuslots import _WATCH, CpuSlots
from ._work import _CANCELLED, _DONE, _INTERRUPTED, _PENDING, _RUNNING, Work, _Worker

__all__ = ["DONE", "QUEUED", "REFUSED", "SPREAD_AFTER", "WAITING", "ClosedBeforeStart",
           "PoolClosed", "WorkerPool", "in_pool"]


class ClosedBeforeStart(ToolCancelled):
    """The registry was closed while the call waited for a worker."""


class PoolClosed(RuntimeError):
    """A call was handed to a pool that was shut down (the registry is closed)."""


class _Local(threading.local):
    # A class default: ``getattr(local, name, False)`` on a thread that never set the name
    # raises and catches an AttributeError inside, on every pooled call's path.
    in_pool = False


_local = _Local()


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                               ctypes.py_object(exc) if exc else None)


_GO, _QUIT = b"\x01", b"\x00"
REFUSED, QUEUED, WAITING, DONE = range(4)
"""What ``WorkerPool.call`` did with a call (see there)."""
SPREAD_AFTER = 0.0002
"""Seconds a batch's calls may wait for the one worker running them before more are woken."""
# WorkerPool._next: leave, do not wait. Never run, so an empty context: this module is
# imported by the first call, and a copy of that caller's context would keep its contextvars
# (an MCP server's request and session objects, say) for the life of the process.
_CLOSING = Work(lambda: None, (), {}, contextvars.Context())
_CPU_CLOCKS = hasattr(time, "pthread_getcpuclockid")
_sched_yield: Callable[[], None] = getattr(os, "sched_yield", lambda: None)


class WorkerPool(CpuSlots):
    """A small thread pool with a cheap hand-off.

    Each idle worker blocks reading its own pipe; ``submit`` hands a call to the most recently
    idle worker and writes one byte. ``os.write`` releases the GIL before it wakes the worker,
    so the worker runs at once instead of waking, finding the GIL taken and sleeping again
    (as it does after a queue and lock hand-off). Results come back
    through the call's raw lock. When every worker is busy and the pool is at ``max_workers``,
    calls wait in a backlog. A worker idle for ``idle_timeout`` seconds is retired at the next
    submit, and all leave at :meth:`shutdown` once their current call ends. With ``pinning``
    (Linux; the registry's default, ``"auto"``), ``submit`` wakes the worker on the caller's
    CPU, which the worker leaves at once for its own CPU mask (see ``_affinity``): a wake-up
    across CPUs is dear on a VM.

    **CPU slots** (``cpu_slots``; see ``_cpuslots``): calls of tools seen
    keeping a CPU busy take turns in fewer slots than there are CPUs, and the spawner thread
    watches the running calls' CPU time while the pool is crowded, also stopping calls past
    their deadline at once.
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0,
                 cpu_slots: int | None = None, pinning: bool | str = False) -> None:
        self._max = max_workers
        self._idle_timeout = idle_timeout
        self.lock = _thread.allocate_lock()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._backlog: collections.deque[Work] = collections.deque()
        self._shutdown = False
        self._spawner: threading.Thread | None = None
        self._spawn_wanted = threading.Event()
        super().__init__(cpu_slots)
        self.pinning = Pinning(pinning)

    # -- submitting -----------------------------------------------------------------------
    def submit(self, work: Work, *, saturated_ok: bool = True) -> bool:
        """Hand ``work`` to a worker; False (nothing queued) when every worker is busy, the
        pool is at its size and ``saturated_ok`` is false."""
        worker = self._place(work, saturated_ok)
        if isinstance(worker, int):
            return worker == QUEUED
        if self.pinning.on:  # its caller waits for it: wake it on the caller's CPU
            worker.restore = restore = self.pinning.pin(worker.native)
            work.pinned = restore is not None
        os.write(worker.wfd, _GO)
        return True

    def call(self, work: Work, until: float | None, *, saturated_ok: bool = True) -> int:
        """Hand ``work`` to a worker and wait for it until ``until`` (``perf_counter``;
        ``None``: no end) or, while other calls wait for workers, :data:`SPREAD_AFTER`
        seconds: :data:`REFUSED` (as ``submit``), :data:`QUEUED` (waiting for a worker or a
        CPU slot: not waited for), :data:`WAITING` (not done yet) or :data:`DONE` (done, and
        ``work.done`` taken).

        The caller blocks right after the write that wakes the worker: every bytecode it
        runs in between holds the interpreter lock the worker is waking up to take, and a
        worker that finds it taken sleeps again until the caller blocks (a second wake-up).
        So the caller has done all its own work before (the wait's time is worked out
        before the write too, and an idle worker gone stale is let go before the wake)."""
        worker = self._place(work, saturated_ok)
        if isinstance(worker, int):
            return worker
        if self.pinning.on:  # its caller waits for it: wake it on the caller's CPU
            worker.restore = restore = self.pinning.pin(worker.native)
            work.pinned = restore is not None
        if until is None:
            wait = -1.0 if not self._backlog else SPREAD_AFTER
        else:
            wait = until - time.perf_counter()
            wait = 0.0 if wait < 0.0 else wait if not self._backlog or wait < SPREAD_AFTER \
                else SPREAD_AFTER
        os.write(worker.wfd, _GO)
        if work.pinned and work.state != _DONE:
            _sched_yield()  # see let_run
        return DONE if work.done.acquire(True, wait) else WAITING

    def _place(self, work: Work, saturated_ok: bool) -> _Worker | int:
        """Find ``work`` a worker: the idle worker to wake, else :data:`QUEUED` (for a new
        worker or a CPU slot; a first worker is started here) or :data:`REFUSED` (see
        ``submit``)."""
        stale = None
        start = spawn = False
        if self.heavy_keys and work.key is not None and in_pool():
            work.key = None  # a tool's own call: its caller holds the slot it would wait for
        with self.lock:
            if self._shutdown:
                raise PoolClosed("the registry is closed")
            idle = self._idle
            if (idle or not self._workers) and self.heavy_keys and not self._admit(work):
                return QUEUED  # held until a CPU slot is free
            if idle:
                worker = idle.pop()
                worker.work = work
                if idle and time.perf_counter() - idle[0].idle_since > self._idle_timeout:
                    stale = idle.pop(0)
            elif not self._workers:
                worker = _Worker(work)  # the first: started here, cheap while nothing runs
                self._workers.add(worker)
                start = True
            elif len(self._workers) < self._max:
                self._backlog.append(work)  # a new worker is started by the spawner
                spawn = True
            elif not saturated_ok:
                return REFUSED
            else:
                self._backlog.append(work)
                return QUEUED
        if start:
            self._start(worker)  # outside the lock: starting a thread waits for it
            return QUEUED
        if spawn:
            self._want_workers()
            return QUEUED
        if stale is not None:  # let it go before the wake-up, not while the call runs
            os.write(stale.wfd, _QUIT)
        return worker

    def submit_many(self, works: list[Work]) -> None:
        """Queue a batch and wake one worker, which runs the calls back to back.

        Every write that wakes a worker gives the GIL away, so a batch of quick calls is
        fastest on one thread; whoever waits for the batch calls :meth:`spread` after
        :data:`SPREAD_AFTER` seconds if calls are still waiting, so slow or blocking calls
        still run concurrently, at most that much later.
        """
        if not works:
            return
        with self.lock:
            if self._shutdown:
                raise PoolClosed("the registry is closed")
            self._backlog.extend(works[1:])
        self.submit(works[0])

    @staticmethod
    def let_run(work: Work) -> None:
        """Called by a thread about to wait for ``work`` (submitted by it): when its worker was
        woken on this thread's CPU, give that CPU to it first (``sched_yield``).

        The worker then usually runs the call and goes back to sleep before this thread runs
        again, so the answer is in without a wake-up. Otherwise the worker's answer wakes this
        thread, and the scheduler puts a woken thread on an idle CPU when its own is busy (the
        worker still runs there): the wake-up of a halted CPU the pin was there to avoid, most
        of a short ``invoke`` on a virtual machine. Only for a pinned worker, so only while a
        CPU is idle (``handoff-pinning = "auto"``): on a busy CPU another process would get
        it, for a whole time slice. A tool that takes longer (or sleeps) lets this thread run
        again when it blocks or its slice ends; this thread then waits as usual. (``call``
        does the same right after its write.)"""
        if work.pinned and work.state != _DONE:
            _sched_yield()

    @property
    def has_backlog(self) -> bool:
        """True while calls wait for a worker (not those waiting for a CPU slot)."""
        return bool(self._backlog)

    def spread(self) -> None:
        """Give every waiting call a worker: idle ones now, new ones (up to the size) from the
        spawner thread, so that the caller is never held up starting threads."""
        if not self._idle and (not self._backlog or len(self._workers) >= self._max):
            return  # nothing to hand out or start (read without the lock: see _want_workers)
        wake: list[_Worker] = []
        with self.lock:
            while not self._shutdown and self._idle:
                work = self._take()
                if work is None:
                    break
                worker = self._idle.pop()
                worker.work = work
                wake.append(worker)
            grow = bool(self._backlog) and len(self._workers) < self._max
        for worker in wake:
            os.write(worker.wfd, _GO)
        if grow:
            self._want_workers()

    def _want_workers(self) -> None:
        """Ask the spawner thread for workers for the backlog (started on first use).

        ``Thread.start`` waits until the new thread runs, which takes long while busy threads
        hold the interpreter (a switch interval per busy thread): a burst of starts held a
        caller -- or the event loop -- for long. The spawner takes that wait for everyone.

        Neither the pool's lock nor the event's is taken once the spawner runs and has been
        asked already: under load every caller comes here, and a thread that blocks on a lock
        takes the interpreter again only after the busy threads let it go, holding that lock
        meanwhile (a convoy that kept the pool locked for seconds)."""
        if self._spawner is None:
            spawner = None
            with self.lock:
                if self._spawner is None and not self._shutdown:
                    spawner = self._spawner = threading.Thread(
                        target=self._spawn_main, name="toolregistry-spawner", daemon=True)
            if spawner is not None:
                spawner.start()  # outside the lock: starting a thread waits for it
        if not self._spawn_wanted.is_set():
            self._spawn_wanted.set()

    def _spawn_main(self) -> None:
        wanted = self._spawn_wanted
        while True:
            # Watch often while more calls run than there are CPU slots, now and then while
            # some run, and not at all while none do (until the next request for workers).
            busy = self._running > self.cpu_slots
            wanted.wait(_WATCH if busy else 10 * _WATCH if self._running else None)
            wanted.clear()
            if busy or self._running > self.cpu_slots:
                self._watch()
            while True:
                wake: list[_Worker] = []
                worker = None
                with self.lock:
                    if self._shutdown:
                        return
                    while self._idle:  # freed since the request: use them first
                        work = self._take()
                        if work is None:
                            break
                        idle = self._idle.pop()
                        idle.work = work
                        wake.append(idle)
                    if (self._backlog or self._held) and len(self._workers) < self._max:
                        work = self._take()
                        if work is not None:
                            worker = _Worker(work)
                            self._workers.add(worker)
                for idle in wake:
                    os.write(idle.wfd, _GO)
                if worker is None:
                    break
                if self._running > self.cpu_slots and \
                        time.perf_counter() - self._sampled_at >= _WATCH:
                    # Each start waits for the new thread to run, which takes long while
                    # others keep the interpreter: keep looking meanwhile (a burst of starts
                    # would otherwise leave the CPU-bound calls among them unheld).
                    self._watch()
                self._start(worker)

    # -- the workers ----------------------------------------------------------------------
    def _start(self, worker: _Worker) -> None:
        worker.thread = threading.Thread(target=self._main, args=(worker,),
                                         name="toolregistry-worker", daemon=True)
        worker.thread.start()

    def _main(self, worker: _Worker) -> None:
        ident = threading.get_ident()
        _local.in_pool = True
        worker.native = threading.get_native_id()
        if _CPU_CLOCKS:
            try:
                worker.clock = time.pthread_getcpuclockid(ident)
            except OSError:
                pass
        lock = self.lock
        read = os.read
        pinning = self.pinning
        try:
            work = worker.work
            while True:
                if work is not None:
                    work = self._run(work, worker, ident, lock)
                    if work is _CLOSING:
                        return  # not made idle, so nobody will write to this worker
                    if work is not None:
                        continue  # the next call from the backlog
                # Idle: a GO (from submit) or a QUIT (stale, or close) is sure to come.
                if read(worker.rfd, 1) != _GO:
                    return
                restore = worker.restore
                if restore is not None:  # woken on its caller's CPU: its own mask again
                    worker.restore = None
                    pinning.unpin(restore)
                work = worker.work
        finally:
            with lock:
                self._workers.discard(worker)
                if worker in self._idle:
                    self._idle.remove(worker)
            os.close(worker.rfd)
            os.close(worker.wfd)

    def _next(self, worker: _Worker, now: float) -> Work | None:
        """Under the lock: the next backlog call for ``worker``; else ``None`` after marking
        it idle (since ``now``, a ``perf_counter`` time), or ``_CLOSING`` when the pool is
        closing."""
        if self._backlog or self._held:
            work = self._take()
            if work is not None:
                worker.work = work
                return work
        if self._shutdown:
            return _CLOSING
        worker.work = None
        worker.idle_since = now
        self._idle.append(worker)
        return None

    def _run(self, work: Work, worker: _Worker, ident: int, lock: Any) -> Work | None:
        """Run one call; returns the next call to run (from the backlog) or ``None``."""
        deadline = work.deadline
        with lock:
            # Looked at once the lock is held: waiting for it may have taken the deadline.
            started = work.state == _PENDING and (
                deadline is None or time.perf_counter() <= deadline)
            if started:
                work.state = _RUNNING
                work.ident = ident
                self._running += 1
            elif work.state == _PENDING:
                work.state = _CANCELLED
        if started:
            try:
                work.result = work.context.run(work.fn, *work.args, **work.kwargs)
            except BaseException as exc:
                work.error = exc
            work.finished = now = time.perf_counter()
        else:
            work.error = ToolCancelled("the call timed out before it started")
            now = time.perf_counter()
        while True:
            try:
                with lock:
                    if work.state == _INTERRUPTED:
                        _set_async_exc(ident, None)  # drop an interrupt still pending
                    if started:
                        started = False
                        self._running -= 1
                    if work.heavy:
                        work.heavy = False
                        self._heavy_running -= 1
                    work.state = _DONE
                    following = self._next(worker, now)
                break
            except ToolCancelled:  # the interrupt landed after the tool returned
                if work.error is None:
                    work.result = None
                    work.error = ToolCancelled("timed out")
        # All the bookkeeping before the answer: what runs after it competes with the woken
        # caller for the interpreter lock (and makes it sleep again until this thread blocks).
        callback = work.callback
        if work.abandoned is not None:  # its caller was answered already
            return following
        work.done.release()
        if callback is not None:
            try:
                callback(work)
            except Exception as exc:  # a closed loop: nobody waits any more
                log.debug("call.orphaned", error=str(exc))
        return following

    def interrupt(self, work: Work) -> bool:
        """Stop ``work`` (its deadline passed); False when it had already finished."""
        if work.state == _DONE:  # final: no need for the lock
            return False
        with self.lock:
            state = self._interrupt(work)
        if work.cancel_event is not None and state in (_PENDING, _RUNNING):
            work.cancel_event.set()
        return state != _DONE

    def abandon(self, work: Work, error: BaseException) -> bool:
        """Cancel ``work`` for its caller: interrupted as at its deadline, and its caller woken
        at once to answer ``error``; False when it had already finished."""
        with self.lock:
            if work.state not in (_PENDING, _RUNNING) or work.callback is not None:
                return False
            state = self._interrupt(work)
            work.abandoned = error
        if work.cancel_event is not None:
            work.cancel_event.set()
        work.done.release()
        return state != _DONE

    def interrupt_many(self, works: list[Work]) -> None:
        """Stop every call of ``works`` that has not finished, under one hold of the lock:
        when a batch's deadline passes, its overrunning calls all stop at once (each one
        stopped later keeps competing for the interpreter with the caller)."""
        with self.lock:
            states = [self._interrupt(work) for work in works]
        for work, state in zip(works, states):
            if work.cancel_event is not None and state in (_PENDING, _RUNNING):
                work.cancel_event.set()

    @staticmethod
    def _interrupt(work: Work) -> int:
        """Under the lock: cancel ``work`` if it waits, interrupt it if it runs; its state
        before."""
        state = work.state
        if state == _PENDING:
            work.state = _CANCELLED
        elif state == _RUNNING:
            work.state = _INTERRUPTED
            _set_async_exc(work.ident, ToolCancelled)
        return state

    @property
    def thread_count(self) -> int:
        """Worker threads alive now."""
        return len(self._workers)

    def shutdown(self) -> None:
        """Let every worker leave once its current call ends; calls still waiting for a
        worker end as cancelled."""
        with self.lock:
            self._shutdown = True
            self._spawn_wanted.set()  # the spawner leaves
            idle, self._idle = self._idle, []
            backlog = list(self._backlog) + list(self._held)
            self._backlog.clear()
            self._held.clear()
        for worker in idle:
            try:
                os.write(worker.wfd, _QUIT)
            except OSError:
                pass
        for work in backlog:
            work.state = _CANCELLED
            work.error = ClosedBeforeStart("the registry was closed before the call started")
            work.done.release()
            if work.callback is not None:
                try:
                    work.callback(work)
                except Exception:
                    pass


def in_pool() -> bool:
    """True on a worker thread of some registry's pool."""
    return _local.in_pool
