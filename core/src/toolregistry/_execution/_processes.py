"""Process isolation: a :class:`~toolregistry.plugin.Runner` that runs calls in worker
processes, killed at their deadline.

A tool with ``ToolMetadata(isolation="process")`` (or in a namespace listed in the
``process-namespaces`` setting) has its calls run by the registry's :class:`ProcessRunner`
through the ``dispatch`` seam: validation, hooks, authorization, observers and answers stay
in the registry's process; only the tool's body runs in a worker process. A worker runs one
call at a time; a call still running at its deadline has its process killed (no busy thread
or process is left behind) and a fresh one takes its place for the next call. Results, errors
and messages are those of a call on a thread.

The workers come from ``multiprocessing``'s *forkserver* (a clean process forked from a server
started once, where available; *spawn* elsewhere): the tool's function travels by reference
(its module and name) and must be importable there, so a lambda or a function defined inside
another one cannot run in a process (its calls get an error naming the tool and why). Its
arguments and its return value travel pickled. Injected values work when they pickle; a
``ToolContext`` parameter does not cross (the call gets an error saying so).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import multiprocessing
import pickle
import threading
import time
from typing import TYPE_CHECKING, Any

from toolregistry._context import carried
from toolregistry._log import log
from toolregistry.errors import ToolCallError, ToolTimeoutError
from toolregistry.types import ToolContext

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import BaseContext

    from toolregistry.types import Job

__all__ = ["ProcessRunner"]


def _child_main(conn: Connection) -> None:
    """A worker process: run the calls it is sent, one at a time, until its pipe closes."""
    from toolregistry._context import continued

    while True:
        try:
            fn, args, kwargs, is_async, carrier, continuers = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        try:
            with continued(carrier, continuers):  # the caller's trace, as far as it travels
                value = fn(*args, **kwargs)
                if is_async:
                    value = asyncio.run(value)
            out: tuple[Any, ...] = ("ok", value)
        except ToolCallError as exc:  # keeps its kind and its words
            out = ("tool_error", str(exc), exc.kind, isinstance(exc, ToolTimeoutError))
        except BaseException as exc:  # whatever the tool raised is its result
            out = ("error", exc, type(exc).__name__, str(exc))
            try:  # an exception pickles by its args: it may not rebuild on the other side
                pickle.loads(pickle.dumps(exc))
            except Exception:
                out = ("error", None, type(exc).__name__, str(exc))
        try:
            conn.send(out)
        except Exception as exc:  # the value (or the exception) does not pickle
            what = "result" if out[0] == "ok" else "exception"
            conn.send(("unsendable", what, f"{type(exc).__name__}: {exc}",
                       out[2] if out[0] == "error" else None,
                       out[3] if out[0] == "error" else None))


def _exception_named(name: str, message: str) -> BaseException:
    """An exception whose type has ``name`` (one that did not pickle), so the error text is
    the one a thread would give (``tool 'x' failed: Name: message``)."""
    error: BaseException = type(name, (Exception,), {})(message)
    return error


class _Worker:
    """One worker process and the parent's end of its pipe."""

    __slots__ = ("conn", "job", "process")

    def __init__(self, context: BaseContext) -> None:
        parent, child = context.Pipe(duplex=True)
        self.conn: Connection = parent
        self.process = context.Process(target=_child_main, args=(child,),  # type: ignore[attr-defined]
                                       name="toolregistry-process", daemon=True)
        self.process.start()
        child.close()
        self.job: Job | None = None

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.join(5)
        finally:
            self.conn.close()


class ProcessRunner:
    """Runs the calls handed to it in up to ``max_workers`` worker processes (a ``Runner``).

    Each worker process has a driver thread in this process that sends it the next waiting
    call, waits for the answer until the call's deadline (without the GIL), and kills the
    process if the deadline passes first or the caller gives up (:meth:`cancel`). A call whose
    deadline passed while it waited for a worker is never started. A new driver (and worker
    process) starts only when every driver has a call: a driver counts as free from the moment
    its call's answer is in (before the caller hears of it), so the caller's next call goes to
    the warm worker that just answered rather than to a process still to be started.
    """

    def __init__(self, max_workers: int, start_method: str | None = None) -> None:
        if start_method is None:
            methods = multiprocessing.get_all_start_methods()
            start_method = "forkserver" if "forkserver" in methods else "spawn"
        self._context = multiprocessing.get_context(start_method)
        self._max = max_workers
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._waiting: collections.deque[tuple[Job, cf.Future[Any]]] = collections.deque()
        self._drivers = 0
        self._busy = 0  # drivers between taking a call and resolving it
        self._threads: set[threading.Thread] = set()
        self._running: dict[int, _Worker] = {}  # id(future) -> the worker running its call
        self._closed = False

    # -- the Runner protocol --------------------------------------------------------------
    def submit(self, job: Job) -> cf.Future[Any]:
        """Queue ``job`` for a worker process (starting one when none is free)."""
        future: cf.Future[Any] = cf.Future()
        problem = _unsendable(job)
        if problem is not None:
            future.set_exception(ToolCallError(problem, kind="execution"))
            return future
        with self._lock:
            if self._closed:
                future.set_exception(ToolCallError("the registry is closed", kind="execution"))
                return future
            self._waiting.append((job, future))
            self._ready.notify()
            start = (len(self._waiting) > self._drivers - self._busy
                     and self._drivers < self._max)
            if start:
                self._drivers += 1
        if start:
            thread = threading.Thread(target=self._drive, name="toolregistry-process-driver",
                                      daemon=True)
            with self._lock:
                self._threads.add(thread)
            thread.start()
        return future

    def cancel(self, job: Job, future: cf.Future[Any]) -> None:
        """The caller stopped waiting (deadline or cancellation): kill the call's process."""
        with self._lock:
            worker = self._running.pop(id(future), None)
        if worker is not None:
            worker.process.kill()  # its driver sees the pipe close, reaps it and moves on

    def close(self) -> None:
        """Kill every worker process; calls still waiting end as cancelled."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
            self._waiting.clear()
            running = list(self._running.values())
            self._running.clear()
            self._ready.notify_all()
        for _, future in waiting:
            if not future.done():
                future.set_exception(ToolCallError("the registry was closed before the call "
                                                   "started", kind="cancelled"))
        for worker in running:
            worker.process.kill()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:  # each reaps its process; a driver may be starting one
            if thread is not threading.current_thread():
                thread.join(10)

    # -- the drivers ----------------------------------------------------------------------
    def _next(self) -> tuple[Job, cf.Future[Any]] | None:
        """The next waiting call, counted busy (``None``: closed, or idle for a minute; the
        driver is no longer counted then, so a call submitted next starts another)."""
        with self._lock:
            while not self._waiting:
                woke = not self._closed and self._ready.wait(60.0)
                if self._closed or (not woke and not self._waiting):
                    self._drivers -= 1
                    return None
            self._busy += 1
            return self._waiting.popleft()

    def _free(self) -> None:
        """This driver's call is over (its future is about to be resolved)."""
        with self._lock:
            self._busy -= 1

    def _drive(self) -> None:
        worker: _Worker | None = None
        counted = True  # in self._drivers (until _next returns None)
        try:
            while True:
                item = self._next()
                if item is None:
                    counted = False
                    return
                job, future = item
                if not future.set_running_or_notify_cancel():
                    self._free()
                    continue
                if job.deadline is not None and time.monotonic() >= job.deadline:
                    self._free()
                    future.set_exception(ToolTimeoutError())  # never started
                    continue
                if worker is None or not worker.process.is_alive():
                    try:
                        worker = _Worker(self._context)
                    except Exception as exc:
                        self._free()
                        future.set_exception(ToolCallError(
                            f"tool {job.tool.name!r}: no worker process could be started "
                            f"({type(exc).__name__}: {exc})", kind="execution"))
                        worker = None
                        continue
                worker = self._run(worker, job, future)
        finally:
            if worker is not None:
                worker.kill()
            with self._lock:
                if counted:  # an unexpected error ended the driver
                    self._drivers -= 1
                self._threads.discard(threading.current_thread())

    def _run(self, worker: _Worker, job: Job, future: cf.Future[Any]) -> _Worker | None:
        """Run ``job`` on ``worker``; the worker to keep (``None`` when it was killed)."""
        name = job.tool.name
        with self._lock:
            if self._closed:
                self._busy -= 1
                future.set_exception(ToolCallError("the registry is closed", kind="cancelled"))
                return worker
            self._running[id(future)] = worker
        try:
            carrier, continuers = job.context.run(carried)
            worker.conn.send((job.fn, job.args, dict(job.kwargs), job.is_async, carrier,
                              continuers))
            remaining = None if job.deadline is None else max(0.0, job.deadline - time.monotonic())
            answered = worker.conn.poll(remaining)
            out = worker.conn.recv() if answered else None
        except (EOFError, OSError) as exc:
            out = ("died", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # the call does not pickle, or the answer does not unpickle
            out = ("unsendable", "call or its result", f"{type(exc).__name__}: {exc}", None,
                   None)
        with self._lock:
            mine = self._running.pop(id(future), None) is worker
            self._busy -= 1  # before the caller hears: its next call may come at once
        if out is None:  # the deadline passed: the process goes, with whatever it was doing
            worker.kill()
            if not future.done():
                future.set_exception(ToolTimeoutError())
            return None
        if not mine:  # cancelled meanwhile (the process was killed)
            worker.kill()
            return None
        kind = out[0]
        if kind == "ok":
            future.set_result(out[1])
        elif kind == "tool_error":
            error_type = ToolTimeoutError if out[3] else ToolCallError
            future.set_exception(error_type(out[1], kind=out[2]))
        elif kind == "error":
            future.set_exception(out[1] if out[1] is not None
                                 else _exception_named(out[2], out[3]))
        elif kind == "unsendable":
            _, what, why, exc_name, exc_text = out
            if what == "exception":
                future.set_exception(_exception_named(exc_name, exc_text))
            else:
                future.set_exception(ToolCallError(
                    f"tool {name!r} runs in a process and its {what} could not be sent "
                    f"across: {why}", kind="execution"))
        else:  # died
            code = worker.process.exitcode
            log.warning("process.died", tool=name, exitcode=code)
            worker.kill()
            future.set_exception(ToolCallError(
                f"tool {name!r}: its worker process died during the call (exit code {code})",
                kind="execution"))
            return None
        return worker


def _unsendable(job: Job) -> str | None:
    """Why ``job`` cannot run in another process (``None``: it can)."""
    name = job.tool.name
    if any(isinstance(v, ToolContext) for v in (*job.args, *job.kwargs.values())):
        return (f"tool {name!r} runs in a process and takes a ToolContext, which cannot "
                "cross to it; drop the parameter or run the tool on a thread")
    try:
        pickle.dumps(job.fn)
    except Exception as exc:
        return (f"tool {name!r} cannot run in a process: its function cannot be sent there "
                f"by reference ({type(exc).__name__}: {exc}); define it at the top level of "
                "an importable module")
    return None
