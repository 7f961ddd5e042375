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
                 "finished", "fn", "ident", "kwargs", "result", "state")

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

    def overran(self, deadline: float | None) -> bool:
        """True when it finished after ``deadline`` (a ``perf_counter`` time): the caller looked
        late (a busy thread, a long batch), but the call still ran past its time."""
        return deadline is not None and self.finished > deadline


class _Worker:
    """One worker thread and the pipe it waits on for work."""

    __slots__ = ("idle_since", "rfd", "thread", "wfd", "work")

    def __init__(self, work: Work | None) -> None:
        self.rfd, self.wfd = os.pipe()
        self.work = work
        self.idle_since = 0.0
        self.thread: threading.Thread | None = None


_GO, _QUIT = b"\x01", b"\x00"
SPREAD_AFTER = 0.0002
"""Seconds a batch's calls may wait for the one worker running them before more are woken."""
_CLOSING = Work(lambda: None, (), {})  # WorkerPool._next: leave, do not wait


class WorkerPool:
    """A small thread pool with a cheap hand-off.

    Each idle worker blocks reading its own pipe; ``submit`` hands a call to the most recently
    idle worker and writes one byte. ``os.write`` releases the GIL before it wakes the worker,
    so the worker runs at once instead of waking, finding the GIL taken and sleeping again
    (a queue and lock hand-off costs about 13 us here, the pipe about 5). Results come back
    through the call's raw lock. When every worker is busy and the pool is at ``max_workers``,
    calls wait in a backlog. A worker idle for ``idle_timeout`` seconds is retired at the next
    submit, and all leave at :meth:`shutdown` once their current call ends.
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0) -> None:
        self._max = max_workers
        self._idle_timeout = idle_timeout
        self.lock = _thread.allocate_lock()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._backlog: collections.deque[Work] = collections.deque()
        self._shutdown = False
        self._spawner: threading.Thread | None = None
        self._spawn_wanted = threading.Event()

    def submit(self, work: Work, *, saturated_ok: bool = True) -> bool:
        """Hand ``work`` to a worker; False (nothing queued) when every worker is busy, the
        pool is at its size and ``saturated_ok`` is false."""
        stale = None
        new = spawn = False
        with self.lock:
            if self._shutdown:
                raise RuntimeError("the registry is closed")
            idle = self._idle
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

    @property
    def has_backlog(self) -> bool:
        """True while calls wait for a worker."""
        return bool(self._backlog)

    def spread(self) -> None:
        """Give every waiting call a worker: idle ones now, new ones (up to the size) from the
        spawner thread, so that the caller is never held up starting threads."""
        wake: list[_Worker] = []
        with self.lock:
            backlog = self._backlog
            while backlog and not self._shutdown and self._idle:
                worker = self._idle.pop()
                worker.work = backlog.popleft()
                wake.append(worker)
            grow = bool(backlog) and len(self._workers) < self._max
        for worker in wake:
            os.write(worker.wfd, _GO)
        if grow:
            self._want_workers()

    def _want_workers(self) -> None:
        """Ask the spawner thread for workers for the backlog (started on first use).

        ``Thread.start`` waits until the new thread runs, which takes long while busy threads
        hold the interpreter (5 ms per busy thread and switch): 32 starts held a caller -- or
        the event loop -- for seconds. The spawner takes that wait for everyone."""
        with self.lock:
            if self._spawner is None and not self._shutdown:
                self._spawner = threading.Thread(target=self._spawn_main,
                                                 name="toolregistry-spawner", daemon=True)
                self._spawner.start()
        self._spawn_wanted.set()

    def _spawn_main(self) -> None:
        while True:
            self._spawn_wanted.wait()
            self._spawn_wanted.clear()
            while True:
                wake: list[_Worker] = []
                worker = None
                with self.lock:
                    if self._shutdown:
                        return
                    backlog = self._backlog
                    while backlog and self._idle:  # freed since the request: use them first
                        idle = self._idle.pop()
                        idle.work = backlog.popleft()
                        wake.append(idle)
                    if backlog and len(self._workers) < self._max:
                        worker = _Worker(backlog.popleft())
                        self._workers.add(worker)
                for idle in wake:
                    os.write(idle.wfd, _GO)
                if worker is None:
                    break
                self._start(worker)

    def _start(self, worker: _Worker) -> None:
        worker.thread = threading.Thread(target=self._main, args=(worker,),
                                         name="toolregistry-worker", daemon=True)
        worker.thread.start()

    def _main(self, worker: _Worker) -> None:
        ident = threading.get_ident()
        _local.in_pool = True
        lock = self.lock
        read = os.read
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
        if self._backlog:
            return self._backlog.popleft()
        if self._shutdown:
            return _CLOSING
        worker.work = None
        worker.idle_since = time.monotonic()
        self._idle.append(worker)
        return None

    def _run(self, work: Work, worker: _Worker, ident: int, lock: Any) -> Work | None:
        """Run one call; returns the next call to run (from the backlog) or ``None``."""
        deadline = work.deadline
        late = deadline is not None and time.perf_counter() > deadline
        with lock:
            started = work.state == _PENDING and not late
            if started:
                work.state = _RUNNING
                work.ident = ident
            elif work.state == _PENDING:
                work.state = _CANCELLED
        if started:
            try:
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
                    work.state = _DONE
                    following = self._next(worker)
                break
            except ToolCancelled:  # the interrupt landed after the tool returned
                if work.error is None:
                    work.result = None
                    work.error = ToolCancelled("timed out")
        work.done.release()
        callback = work.callback
        if callback is not None:
            try:
                callback(work)
            except Exception as exc:  # a closed loop: nobody waits any more
                log.debug("call.orphaned", error=str(exc))
        return following

    def interrupt(self, work: Work) -> bool:
        """Stop ``work`` (its deadline passed); False when it had already finished."""
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
            backlog = list(self._backlog)
            self._backlog.clear()
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


def in_pool() -> bool:
    """True on a worker thread of some registry's pool."""
    return getattr(_local, "in_pool", False)
