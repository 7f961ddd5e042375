"""Scheduling for the sync API (``invoke``, ``execute_tool_calls``): where each prepared call
runs, and waiting for it under its deadline.

A sync tool runs on the worker pool when its call has a deadline (from every thread, so the
caller is answered on time whatever the tool does), inline when it has none or, opted into
with ``inline-calls``, on the main thread under the watchdog; an
async tool on the private loop; a tool with a runner (``dispatch``) wherever its runner runs
it. A batch is cut into segments (``segments``); the calls of a segment are started together
and collected earliest deadline first, each through a typed :class:`Handle` that knows how to
wait for the kind of work it stands for. A segment whose concurrency groups order some calls
runs on the async scheduler, which starts each call once the calls it waits for finished.
Each call runs in its own ``contextvars.Context`` (``Prepared.context``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry import _watchdog
from toolregistry._calling import note_calling_loop
from toolregistry.errors import ToolCallError, ToolCancelled, ToolTimeoutError

from ._policies import group_order
from ._threads import DONE, REFUSED, SPREAD_AFTER, WAITING, PoolClosed, in_pool
from ._work import Work

if TYPE_CHECKING:
    from toolregistry.hookspecs import Runner
    from toolregistry.types import Job, ToolResult

    from ._executor import Executor
    from ._pipeline import Prepared

__all__ = ["Done", "Handle", "SyncScheduler", "segments"]


def segments(items: list[Prepared | ToolResult]) -> list[list[tuple[int, Prepared]]]:
    """Consecutive concurrency-safe calls form one concurrent segment; an unsafe call runs
    alone, in order. Items that are already results are left out."""
    from ._pipeline import Prepared

    out: list[list[tuple[int, Prepared]]] = []
    current: list[tuple[int, Prepared]] = []
    for i, item in enumerate(items):
        if not isinstance(item, Prepared):
            continue
        if item.plan.safe:
            current.append((i, item))
            continue
        if current:
            out.append(current)
            current = []
        out.append([(i, item)])
    if current:
        out.append(current)
    return out


def pool_work(fn: Callable[..., Any], args: Any, kwargs: dict[str, Any], prep: Prepared,
              started: float) -> Work:
    """The pool's job for a call started at ``started`` (``perf_counter``): in the call's
    context, with its cancel event and its deadline (a worker reaching it later does not start
    it)."""
    work = Work(fn, args, kwargs, prep.context)
    work.key = prep.plan.tool.name  # what the pool learns CPU use by
    if prep.ctx is not None:
        work.cancel_event = prep.ctx.cancel_event
    if prep.timeout is not None:
        work.deadline = started + prep.timeout
    return work


# --- handles: one started call each ----------------------------------------------------------

class Handle:
    """A started call of a batch (its position ``index``), to be collected by :meth:`collect`."""

    __slots__ = ("index", "prep", "started")

    def __init__(self, index: int, prep: Prepared, started: float) -> None:
        self.index = index
        self.prep = prep
        self.started = started

    @property
    def deadline(self) -> float:
        """When its time is up (``perf_counter``); far away for calls without a deadline."""
        timeout = self.prep.timeout
        return self.started + (timeout if timeout is not None else 1e12)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        timeout = self.prep.timeout
        if timeout is None:
            return None
        return max(0.0, timeout - (time.perf_counter() - self.started))

    def finish(self, sched: SyncScheduler, value: Any, error: BaseException | None
               ) -> ToolResult:
        return sched.pipeline.finish(self.prep, value, error, time.perf_counter() - self.started)

    def collect(self, sched: SyncScheduler) -> ToolResult:
        """Wait for the call (at most until its deadline) and return its result."""
        raise NotImplementedError


class Done(Handle):
    """A call that ended as it was started (ran on this thread, or failed to start)."""

    __slots__ = ("error", "value")

    def __init__(self, index: int, prep: Prepared, started: float, value: Any,
                 error: BaseException | None) -> None:
        super().__init__(index, prep, started)
        self.value = value
        self.error = error

    def collect(self, sched: SyncScheduler) -> ToolResult:
        return self.finish(sched, self.value, self.error)


class Pooled(Handle):
    """A call handed to the worker pool."""

    __slots__ = ("work",)

    def __init__(self, index: int, prep: Prepared, started: float, work: Work) -> None:
        # Handle's fields set here: one call less on every pooled call's path.
        self.index = index
        self.prep = prep
        self.started = started
        self.work = work

    def collect(self, sched: SyncScheduler) -> ToolResult:
        return self.finish(sched, *self.outcome(sched))


    def outcome(self, sched: SyncScheduler, waited: bool = False
                ) -> tuple[Any, BaseException | None]:
        """Wait for the call, at most until its deadline: its value and error. A signal that
        interrupts the wait (Ctrl-C) stops the call too, and propagates. ``waited``: the
        pool waited for it once already (``WorkerPool.call``), and it was not done."""
        work = self.work
        pool = sched.executor.pool
        remaining = self.remaining()
        acquired = False
        if not waited:
            pool.let_run(work)
        try:
            if pool.has_backlog:
                first = SPREAD_AFTER if remaining is None else min(remaining, SPREAD_AFTER)
                acquired = work.done.acquire(True, first)
                if not acquired:
                    pool.spread()  # calls still wait after a while: run them alongside
                    remaining = self.remaining()
            if not acquired:
                if remaining is None:
                    work.done.acquire()
                elif not work.done.acquire(True, remaining) and pool.interrupt(work):
                    return None, ToolTimeoutError()
        except BaseException:
            pool.interrupt(work)
            raise
        return self.answer()

    def answer(self) -> tuple[Any, BaseException | None]:
        """Once ``work.done`` is taken: the call's value and error (a timeout when it finished
        after its deadline)."""
        work = self.work
        if work.abandoned is not None:  # cancelled for its caller (``cancel_call``)
            return None, work.abandoned
        timeout = self.prep.timeout
        if timeout is not None and work.overran(self.started + timeout):
            return None, ToolTimeoutError()
        return work.result, work.error


class Listed(Pooled):
    """A pooled call of a batch that can be cancelled (``cancel_call``) while it runs."""

    __slots__ = ("entry",)
    entry: tuple[str, Any] | None

    def collect(self, sched: SyncScheduler) -> ToolResult:
        try:
            outcome = self.outcome(sched)
        finally:
            sched.executor.in_flight.forget(self.prep.call.id, self.entry)
        return self.finish(sched, *outcome)


class Grouped(Handle):
    """An async call run with the other async calls of its segment as one private-loop task;
    its outcome lands in ``out[index]``."""

    __slots__ = ("future", "out")

    def __init__(self, index: int, prep: Prepared, started: float, future: cf.Future[Any],
                 out: dict[int, tuple[Any, BaseException | None]]) -> None:
        super().__init__(index, prep, started)
        self.future = future
        self.out = out

    def collect(self, sched: SyncScheduler) -> ToolResult:
        out, key = self.out, self.index
        if key not in out:
            remaining = self.remaining()
            try:
                # The group enforces each deadline itself; the margin only guards against a
                # loop blocked by a misbehaving tool.
                self.future.result(None if remaining is None else remaining + 0.05)
            except BaseException:  # timed out, cancelled or broken: what is in ``out`` stands
                pass
        outcome = out.get(key)
        if outcome is None:
            if self.prep.ctx is not None:
                self.prep.ctx.cancel_event.set()
            return self.finish(sched, None, ToolTimeoutError())
        return self.finish(sched, outcome[0], outcome[1])


class Dispatched(Handle):
    """A call handed to a runner (the ``dispatch`` hook); ``lock`` is the tool's exclusive
    lock, held until the call is collected, when the tool must run alone."""

    __slots__ = ("future", "job", "lock", "runner")

    def __init__(self, index: int, prep: Prepared, started: float, future: cf.Future[Any],
                 runner: Runner, job: Job, lock: threading.Lock | None) -> None:
        super().__init__(index, prep, started)
        self.future = future
        self.runner = runner
        self.job = job
        self.lock = lock

    def collect(self, sched: SyncScheduler) -> ToolResult:
        try:
            try:
                value = self.future.result(self.remaining())
            except cf.TimeoutError:
                sched.executor.stop_job(self.runner, self.job, self.future)
                return self.finish(sched, None, ToolTimeoutError())
            except BaseException as exc:  # the tool's error, or the runner's cancellation
                return self.finish(sched, None, exc)
            return self.finish(sched, value, None)
        finally:
            if self.lock is not None:
                self.lock.release()


class Looped(Handle):
    """An async call running on the private loop on its own."""

    __slots__ = ("future",)

    def __init__(self, index: int, prep: Prepared, started: float, future: cf.Future[Any]
                 ) -> None:
        super().__init__(index, prep, started)
        self.future = future

    def collect(self, sched: SyncScheduler) -> ToolResult:
        try:
            value = self.future.result(self.remaining())
        except cf.TimeoutError:
            self.future.cancel()
            if self.prep.ctx is not None:
                self.prep.ctx.cancel_event.set()
            return self.finish(sched, None, ToolTimeoutError())
        except BaseException as exc:
            return self.finish(sched, None, exc)
        return self.finish(sched, value, None)


# --- the scheduler ---------------------------------------------------------------------------

class SyncScheduler:
    """Runs prepared calls for the sync API of one executor."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.pipeline = executor.pipeline
        self.inline = executor.inline_calls

    def execute(self, calls: Iterable[Any], context: Mapping[str, Any] | None,
                timeout: float | None) -> list[ToolResult]:
        """A batch: one result per call, in order."""
        items, batch = self.pipeline.prepare_batch(calls, context, timeout)
        results: list[Any] = list(items)
        loop = self.executor.loop_or_none
        nested = in_pool() or (loop is not None and threading.get_ident() == loop.ident)
        for segment in segments(items):
            if len(segment) == 1:
                i, prep = segment[0]
                results[i] = self.run(prep)
                continue
            after = group_order(segment)
            if after:
                for (i, _), result in zip(segment, self._run_ordered(segment, after, nested)):
                    results[i] = result
                continue
            # Earliest deadline first, so each overrunning call is stopped at its own deadline;
            # once one deadline passed, every call past its own is stopped at once.
            if nested:
                handles = [self.start(prep, i) for i, prep in segment]
                handles.sort(key=_deadline_of)
            else:
                handles = self.start_segment(segment)  # sorted so already
            for k, handle in enumerate(handles):
                if k and handle.prep.timeout is not None and \
                        handle.deadline <= time.perf_counter():
                    self._stop_overdue(handles, k)
                results[handle.index] = handle.collect(self)
        return self.pipeline.batch_finished(batch, results)

    def _stop_overdue(self, handles: list[Handle], first: int) -> None:
        """Interrupt the pooled calls from ``handles[first:]`` whose deadline passed, in one
        go (each stopped call frees the interpreter for the caller and the others)."""
        now = time.perf_counter()
        overdue = [h.work for h in handles[first:]
                   if isinstance(h, Pooled) and h.deadline <= now]
        if overdue:
            self.executor.pool.interrupt_many(overdue)

    def _run_ordered(self, segment: list[tuple[int, Prepared]], after: dict[int, list[int]],
                     nested: bool) -> list[ToolResult]:
        """A segment whose concurrency groups order some calls: each call starts once the
        calls it waits for finished (on the private loop, sync calls on the pool); on a
        worker or the private loop itself, one call after the other, in order."""
        if nested:
            return [self.run(prep) for _, prep in segment]
        executor = self.executor
        out: dict[int, ToolResult] = {}
        future = executor.loop_thread.submit(executor.aio.run_ordered(segment, after, out))
        timeouts = [prep.timeout for _, prep in segment]
        bound = None if None in timeouts else sum(t for t in timeouts if t is not None) + 1.0
        try:
            future.result(bound)
        except BaseException:  # a loop blocked past every deadline: answer what is missing
            pass
        return [out[i] if i in out else self.pipeline.finish(prep, None, ToolTimeoutError(), 0.0)
                for i, prep in segment]

    def run(self, prep: Prepared) -> ToolResult:
        """One call, start to result."""
        if prep.is_async or prep.plan.hooks.runner is not None:
            return self.start(prep, 0).collect(self)
        if prep.timeout is None or (
                self.inline and _watchdog.inline_available(ToolCancelled) and not in_pool()):
            return self.run_inline(prep)
        return self.run_pooled(prep)

    def run_pooled(self, prep: Prepared) -> ToolResult:
        """A sync call with a deadline, from any thread: on a worker, waited for here at most
        until its deadline (the tool may go on running on its worker; see ``Pooled``).

        Everything this thread has to do before it waits is done before the worker is woken
        (``WorkerPool.call`` waits right after the wake-up)."""
        executor = self.executor
        in_flight = executor.in_flight.calls
        started = time.perf_counter()
        try:
            fn, args, kwargs = executor.call_fn(prep)
        except Exception as exc:
            return self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
        work = pool_work(fn, args, kwargs, prep, started)
        note_calling_loop(prep.context)
        handle = Pooled(0, prep, started, work)
        pool = executor.pool
        call_id = prep.call.id
        if call_id is not None:
            in_flight[call_id] = entry = (prep.plan.tool.name, work)
        try:
            try:
                # A tool calling the registry from a worker while every worker is busy runs
                # its call here rather than wait for a worker that may be waiting for it.
                status = pool.call(work, work.deadline, saturated_ok=not in_pool())
            except PoolClosed as exc:  # closed meanwhile (raised before the hand-off)
                return handle.finish(self, None, ToolCallError(str(exc)))
            except BaseException:  # a signal while it waited (Ctrl-C): the call stops too
                pool.interrupt(work)
                raise
            if status == DONE:
                value, error = handle.answer()
            elif status == REFUSED:
                try:
                    value, error = prep.context.run(fn, *args, **kwargs), None
                except (Exception, ToolCancelled) as exc:
                    value, error = None, exc
            else:
                value, error = handle.outcome(self, status == WAITING)
        finally:
            if call_id is not None and in_flight.get(call_id) is entry:
                del in_flight[call_id]
        if isinstance(error, (KeyboardInterrupt, SystemExit)) and \
                threading.current_thread() is threading.main_thread():
            raise error  # as from the function itself (see docs/errors.md)
        return handle.finish(self, value, error)

    def run_inline(self, prep: Prepared) -> ToolResult:
        """Run a sync call on this thread: without a deadline there is nothing to wait for;
        with one, the watchdog interrupts the call on time (see ``_watchdog``)."""
        started = time.perf_counter()
        try:
            fn, args, kwargs = self.executor.call_fn(prep)
        except Exception as exc:
            return self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
        entry = None
        call_id = prep.call.id
        in_flight = self.executor.in_flight.calls
        if prep.timeout is not None:
            entry = _watchdog.arm(time.monotonic() + prep.timeout,
                                  prep.ctx.cancel_event if prep.ctx is not None else None)
            if call_id is not None:
                in_flight[call_id] = known = (prep.plan.tool.name, entry)
        value: Any = None
        error: BaseException | None = None
        try:
            try:
                value = prep.context.run(fn, *args, **kwargs)
            except (Exception, ToolCancelled) as exc:
                error = exc
            finally:
                if entry is not None:
                    # A signal may land between the call's end and here, or during disarm:
                    # disarm keeps trying and hands back what landed.
                    landed = _watchdog.disarm(entry)
                    if landed is not None:
                        error = landed
                    if call_id is not None and in_flight.get(call_id) is known:
                        del in_flight[call_id]
        except ToolCancelled as exc:  # landed inside the except clause above (raised once)
            error = exc
        if entry is not None and entry.fired:
            error, value = entry.cancelled or ToolTimeoutError(), None
        elif isinstance(error, ToolCancelled) and _watchdog.outer_fired():
            raise error  # an enclosing call's deadline: let it reach that call
        return self.pipeline.finish(prep, value, error, time.perf_counter() - started)

    def start(self, prep: Prepared, index: int) -> Handle:
        """Start one call; collect it with ``handle.collect(self)``."""
        executor = self.executor
        started = time.perf_counter()
        runner = prep.plan.hooks.runner
        if runner is not None:
            return self._dispatch(prep, index, started, runner)
        try:
            fn, args, kwargs = executor.call_fn(prep)
        except Exception as exc:
            return Done(index, prep, started, None, exc)
        if prep.is_async:
            coro = executor.aio.body(_contained(fn, prep.plan.tool.name), args, kwargs, prep,
                                     started)
            loop = executor.loop_thread
            if threading.get_ident() == loop.ident:
                # A tool on the private loop calling the sync API: a loop cannot wait on itself.
                # (A copy of the call's context: the tool's own task enters the context itself.)
                work = Work(asyncio.run, (coro,), {}, prep.context.copy())
                executor.pool.submit(work)
                return Pooled(index, prep, started, work)
            # The loop's task starts in a copy of this thread's context: the caller's values.
            return Looped(index, prep, started, loop.submit(coro))
        work = pool_work(fn, args, kwargs, prep, started)
        note_calling_loop(prep.context)
        try:
            # A tool calling the registry from a worker while every worker is busy runs its
            # call here rather than wait for a worker that may be waiting for it.
            queued = executor.pool.submit(work, saturated_ok=not in_pool())
        except RuntimeError as exc:  # closed meanwhile
            return Done(index, prep, started, None, ToolCallError(str(exc)))
        if not queued:
            try:
                return Done(index, prep, started, prep.context.run(fn, *args, **kwargs), None)
            except (Exception, ToolCancelled) as exc:
                return Done(index, prep, started, None, exc)
        return self._pooled(index, prep, started, work)

    def _pooled(self, index: int, prep: Prepared, started: float, work: Work) -> Pooled:
        """The handle of a batch's call on the pool: listed for ``cancel_call`` when it has
        an id."""
        if prep.call.id is None:
            return Pooled(index, prep, started, work)
        handle = Listed(index, prep, started, work)
        handle.entry = self.executor.in_flight.add(prep.call.id, prep.plan.tool.name, work)
        return handle

    def _dispatch(self, prep: Prepared, index: int, started: float, runner: Runner) -> Handle:
        """Hand a call to its runner (after taking its tool's lock when it must run alone)."""
        executor = self.executor
        lock = None
        if not prep.plan.safe:
            lock = executor.locks(prep.plan.tool.name)
            if not lock.acquire(True, -1 if prep.timeout is None else prep.timeout):
                return Done(index, prep, started, None, ToolTimeoutError())
        try:
            job = executor.job(prep)
            # submit sees the call's values (a span to carry along) through a copy: the
            # runner may enter job.context itself at once, on another thread.
            future = prep.context.copy().run(runner.submit, job)
        except Exception as exc:
            if lock is not None:
                lock.release()
            return Done(index, prep, started, None, exc)
        return Dispatched(index, prep, started, future, runner, job, lock)

    def start_segment(self, segment: list[tuple[int, Prepared]]) -> list[Handle]:
        """Start a concurrent segment: sync calls to the pool in one hand-off, async calls
        to the private loop as one task (fewer cross-thread wake-ups than one per call); the
        handles earliest deadline first (sorted before the hand-off, so that the caller
        runs as little as it can between waking the worker and waiting for it)."""
        executor = self.executor
        handles: list[Handle] = []
        works: list[Work] = []
        group: list[tuple[int, Callable[..., Any], Any, dict[str, Any], Prepared, float]] = []
        for i, prep in segment:
            if prep.plan.hooks.runner is not None:
                handles.append(self.start(prep, i))
                continue
            started = time.perf_counter()
            try:
                fn, args, kwargs = executor.call_fn(prep)
            except Exception as exc:
                handles.append(Done(i, prep, started, None, exc))
                continue
            if prep.is_async:
                group.append((i, fn, args, kwargs, prep, started))
                continue
            work = pool_work(fn, args, kwargs, prep, started)
            note_calling_loop(prep.context)
            works.append(work)
            handles.append(self._pooled(i, prep, started, work))
        handles.sort(key=_deadline_of)
        try:
            executor.pool.submit_many(works)
        except RuntimeError as exc:  # closed meanwhile
            for h in handles:
                if isinstance(h, Listed):
                    executor.in_flight.forget(h.prep.call.id, h.entry)
            return [h if not isinstance(h, Pooled)
                    else Done(h.index, h.prep, h.started, None, ToolCallError(str(exc)))
                    for h in handles]
        if group:
            out: dict[int, tuple[Any, BaseException | None]] = {}
            # The group's task starts in a copy of this thread's context (the caller's
            # values), and gather gives each call a copy of that.
            future = executor.loop_thread.submit(self._async_group(group, out))
            for i, _, _, _, prep, started in group:
                handles.append(Grouped(i, prep, started, future, out))
            handles.sort(key=_deadline_of)
        return handles

    async def _async_group(self, group: list[tuple[int, Callable[..., Any], Any, dict[str, Any],
                                                   Prepared, float]],
                           out: dict[int, tuple[Any, BaseException | None]]) -> None:
        body = self.executor.aio.body

        async def one(i: int, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                      prep: Prepared, started: float) -> None:
            try:
                value = await body(_contained(fn, prep.plan.tool.name), args, kwargs, prep,
                                   started)
            except (Exception, ToolCancelled) as exc:
                out[i] = (None, exc)
            else:
                out[i] = (value, None)

        await asyncio.gather(*(one(*entry) for entry in group))


def _contained(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` for the private loop: ``KeyboardInterrupt`` / ``SystemExit`` from an async tool
    would leave asyncio's loop and end the loop thread (every later async call would then wait
    for its deadline); they end this call instead, as on a worker thread."""
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit) as exc:
            raise ToolCallError(f"tool {name!r} failed: {type(exc).__name__}: {exc}") from None

    return run


def _deadline_of(handle: Handle) -> float:
    return handle.deadline
