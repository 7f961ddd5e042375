"""Where sync calls and the sync API's async calls run: the worker pool and the private loop.

:class:`WorkerPool` hands a call to a worker thread through a pipe (the cheapest wake-up), can
stop a call that overran its deadline by raising :class:`~toolregistry.errors.ToolCancelled` in
its thread, and lets a batch of quick calls share one worker. :class:`LoopThread` is a private
event loop on a daemon thread, for async tools called from sync code. Neither knows about tools:
they run callables.
"""

from __future__ import annotations

import _thread
import asyncio
import collections
import concurrent.futures as cf
import contextvars
import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from toolregistry._log import log
from toolregistry.errors import ToolCancelled

from . import _switch
from ._affinity import Pinning

__all__ = ["SPREAD_AFTER", "ClosedBeforeStart", "LoopThread", "Work", "WorkerPool", "in_pool"]


class ClosedBeforeStart(ToolCancelled):
    """The registry was closed while the call waited for a worker."""


_local = threading.local()

_PENDING, _RUNNING, _INTERRUPTED, _DONE, _CANCELLED = range(5)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                               ctypes.py_object(exc) if exc else None)


class Work:
    """One sync call handed to a worker thread; ``done`` (a raw lock) is released when it ends.

    ``state`` moves PENDING -> RUNNING -> DONE, or to CANCELLED (timed out before it started)
    or INTERRUPTED (timed out while running); transitions happen under the pool's lock so an
    interrupt can never land in the worker's next call.
    """

    __slots__ = ("args", "callback", "cancel_event", "context", "deadline", "done", "error",
                 "finished", "fn", "heavy", "ident", "key", "kwargs", "pinned", "result", "state")

    def __init__(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                 context: contextvars.Context | None = None) -> None:
        self.fn = fn
        # The call runs inside ``context`` (else a copy of the submitting thread's): the
        # caller's contextvars go with it into the worker thread (request ids, tracing, the
        # MCP server's per-call log routing).
        self.context = contextvars.copy_context() if context is None else context
        self.args = args
        self.kwargs = kwargs
        self.result: Any = None
        self.error: BaseException | None = None
        self.state = _PENDING
        self.ident = 0
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.callback: Callable[[Work], None] | None = None
        self.cancel_event: threading.Event | None = None
        self.finished = 0.0
        # When its time is up (``perf_counter``; ``None``: never): a worker that reaches the
        # call later does not start it (it ends as cancelled before it started).
        self.deadline: float | None = None
        # What the pool learns CPU use by (the tool's name; ``None``: never held back), and
        # whether the call holds one of the pool's CPU slots.
        self.key: str | None = None
        self.heavy = False
        self.pinned = False

    def overran(self, deadline: float | None) -> bool:
        """True when it finished after ``deadline`` (a ``perf_counter`` time): the caller looked
        late (a busy thread, a long batch), but the call still ran past its time."""
        return deadline is not None and self.finished > deadline


class _Worker:
    """One worker thread and the pipe it waits on for work (``work``: its call now;
    ``restore``: the CPU mask to put back when it wakes, when its caller pinned it)."""

    __slots__ = ("clock", "idle_since", "native", "restore", "rfd", "thread", "waited", "wfd",
                 "work")

    def __init__(self, work: Work | None) -> None:
        self.rfd, self.wfd = os.pipe()
        self.work = work
        self.idle_since = 0.0
        self.thread: threading.Thread | None = None
        self.clock: int | None = None  # the thread's CPU-time clock, where there is one
        self.native = 0  # its thread id in the OS
        self.restore: frozenset[int] | None = None
        # Seconds it had waited for a CPU when last asked, and when (-1: not asked yet).
        self.waited = (-1.0, 0.0)


_GO, _QUIT = b"\x01", b"\x00"
SPREAD_AFTER = 0.0002
"""Seconds a batch's calls may wait for the one worker running them before more are woken."""
_WATCH = 0.01
"""Seconds between two looks at the running calls while more run than there are CPU slots."""
_CLOSING = Work(lambda: None, (), {})  # WorkerPool._next: leave, do not wait
_CPU_CLOCKS = hasattr(time, "pthread_getcpuclockid")
_sched_yield: Callable[[], None] = getattr(os, "sched_yield", lambda: None)


class WorkerPool:
    """A small thread pool with a cheap hand-off.

    Each idle worker blocks reading its own pipe; ``submit`` hands a call to the most recently
    idle worker and writes one byte. ``os.write`` releases the GIL before it wakes the worker,
    so the worker runs at once instead of waking, finding the GIL taken and sleeping again
    (a queue and lock hand-off costs about 13 us here, the pipe about 5). Results come back
    through the call's raw lock. When every worker is busy and the pool is at ``max_workers``,
    calls wait in a backlog. A worker idle for ``idle_timeout`` seconds is retired at the next
    submit, and all leave at :meth:`shutdown` once their current call ends. With ``pinning``
    (Linux), ``submit`` wakes the worker on the caller's CPU, which the worker leaves at once
    for its own CPU mask (see ``_affinity``): a wake-up across CPUs costs a VM 30-100 us.

    **CPU slots.** Threads share one interpreter lock: every thread running Python code makes
    everyone else wait longer for it (about 5 ms per such thread at each switch), and the
    callers waiting for their answers are among them. So once the pool has had to grow (the
    spawner thread exists), while more calls run than there are CPU slots (one less than the
    CPUs, at least one), the spawner thread looks at the running calls' CPU time every
    :data:`_WATCH` seconds (ten times less often while fewer run, never while none do; nothing
    on the calls' own path): a tool whose calls keep a CPU busy is marked
    CPU-bound, and its calls then start only while fewer than ``cpu_slots`` CPU-bound calls run
    (more would not finish sooner: they would share the same CPUs). Calls held back wait in
    order; a call whose deadline passes while it waits ends without running, answered on time.
    A CPU-bound tool that is seen waiting instead (I/O) is unmarked. Calls a tool makes from a
    worker are never held back (its caller holds a slot). The same look stops running calls
    whose deadline passed, in one go, without waiting for their callers to get the interpreter.
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0,
                 cpu_slots: int | None = None, switch_interval: float | None = None,
                 pinning: bool | str = "auto") -> None:
        self._max = max_workers
        # The interpreter's switch interval while calls of CPU-bound tools run (None: left
        # alone; see _switch).
        self.switch_interval = switch_interval
        self._ledger_key = id(self)
        self._idle_timeout = idle_timeout
        self.lock = _thread.allocate_lock()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._backlog: collections.deque[Work] = collections.deque()
        self._shutdown = False
        self._spawner: threading.Thread | None = None
        self._spawn_wanted = threading.Event()
        self.cpu_slots = cpu_slots if cpu_slots is not None else max(1, (os.cpu_count() or 2) - 1)
        self.heavy_keys: set[str] = set()  # tools seen keeping a CPU busy
        self._held: collections.deque[Work] = collections.deque()  # waiting for a CPU slot
        self._heavy_running = 0
        self._running = 0
        self._samples: dict[_Worker, tuple[Work, float, int]] = {}
        self._sampled_at = self._process_at = 0.0
        self.pinning = Pinning(pinning)

    def _follow_switch(self) -> None:
        """The switch interval follows whether the pool is crowded (called after each call's
        start and end, and each look at the running calls; inline checks: it is on every
        call's path)."""
        if self.switch_interval is not None and (
                self._heavy_running > 0 or self._running > self.cpu_slots
        ) != (self._ledger_key in _switch.ASKED):
            _switch.follow(self, self.switch_interval, self._crowded)

    def _crowded(self) -> bool:
        """More calls run than there are CPU slots, or calls of CPU-bound tools run: threads
        may be waiting for the interpreter while others keep it."""
        return self._heavy_running > 0 or self._running > self.cpu_slots

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

    # -- submitting -----------------------------------------------------------------------
    def submit(self, work: Work, *, saturated_ok: bool = True) -> bool:
        """Hand ``work`` to a worker; False (nothing queued) when every worker is busy, the
        pool is at its size and ``saturated_ok`` is false."""
        stale = None
        new = spawn = False
        if self.heavy_keys and work.key is not None and in_pool():
            work.key = None  # a tool's own call: its caller holds the slot it would wait for
        with self.lock:
            if self._shutdown:
                raise RuntimeError("the registry is closed")
            idle = self._idle
            if (idle or not self._workers) and self.heavy_keys and not self._admit(work):
                return True  # held until a CPU slot is free
            if idle:
                worker = idle.pop()
                worker.work = work
                if idle and time.monotonic() - idle[0].idle_since > self._idle_timeout:
                    stale = idle.pop(0)
            elif not self._workers:
                worker = _Worker(work)  # the first: started here, cheap while nothing runs
                self._workers.add(worker)
                new = True
            elif len(self._workers) < self._max:
                self._backlog.append(work)  # a new worker is started by the spawner
                spawn = True
            elif not saturated_ok:
                return False
            else:
                self._backlog.append(work)
                return True
        if new:
            self._start(worker)  # outside the lock: starting a thread waits for it
            return True
        if spawn:
            self._want_workers()
            return True
        if self.pinning.on:  # its caller waits for it: wake it on the caller's CPU
            worker.restore = restore = self.pinning.pin(worker.native)
            work.pinned = restore is not None
        os.write(worker.wfd, _GO)
        if stale is not None:
            os.write(stale.wfd, _QUIT)
        return True

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
                raise RuntimeError("the registry is closed")
            self._backlog.extend(works[1:])
        self.submit(works[0])

    @staticmethod
    def let_run(work: Work) -> None:
        """Called by a thread about to wait for ``work`` (submitted by it): when its worker was
        woken on this thread's CPU, give that CPU to it first (``sched_yield``).

        The worker then usually runs the call and goes back to sleep before this thread runs
        again, so the answer is in without a wake-up. Otherwise the worker's answer wakes this
        thread, and the scheduler puts a woken thread on an idle CPU when its own is busy (the
        worker still runs there): the wake-up of a halted CPU the pin was there to avoid, 30 us
        of a 50 us ``invoke`` on a virtual machine. Only for a pinned worker, so only while a
        CPU is idle (``handoff-pinning = "auto"``): on a busy CPU another process would get
        it, for a whole time slice. A tool that takes longer (or sleeps) lets this thread run
        again when it blocks or its slice ends; this thread then waits as usual."""
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
        hold the interpreter (5 ms per busy thread and switch): 32 starts held a caller -- or
        the event loop -- for seconds. The spawner takes that wait for everyone.

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
                    # others keep the interpreter: keep looking meanwhile (32 starts took
                    # 0.6 s with CPU-bound calls among them, none of which were held).
                    self._watch()
                self._start(worker)

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
        self._follow_switch()  # tools marked (or unmarked) CPU-bound just now

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

    def _next(self, worker: _Worker) -> Work | None:
        """Under the lock: the next backlog call for ``worker``; else ``None`` after marking
        it idle, or ``_CLOSING`` when the pool is closing."""
        if self._backlog or self._held:
            work = self._take()
            if work is not None:
                worker.work = work
                return work
        if self._shutdown:
            return _CLOSING
        worker.work = None
        worker.idle_since = time.monotonic()
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
                self._follow_switch()
                work.result = work.context.run(work.fn, *work.args, **work.kwargs)
            except BaseException as exc:
                work.error = exc
            work.finished = time.perf_counter()
        else:
            work.error = ToolCancelled("the call timed out before it started")
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
                    following = self._next(worker)
                break
            except ToolCancelled:  # the interrupt landed after the tool returned
                if work.error is None:
                    work.result = None
                    work.error = ToolCancelled("timed out")
        work.done.release()
        self._follow_switch()
        callback = work.callback
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
        _switch.release(self)
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


class LoopThread:
    """A private event loop on a daemon thread, for async tools called from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ident = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,),
                                        name="toolregistry-loop", daemon=True)
        self._thread.start()
        ready.wait(5)

    def _main(self, ready: threading.Event) -> None:
        self.ident = threading.get_ident()
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def submit(self, coro: Any) -> cf.Future[Any]:
        """Run ``coro`` on the loop; its outcome lands in the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Cancel what still runs on the loop (waiting at most 2 s), stop it and close it."""
        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=2) if tasks else None

        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


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


def in_pool() -> bool:
    """True on a worker thread of some registry's pool."""
    return getattr(_local, "in_pool", False)
