"""Scheduling for the async API (``ainvoke``, ``aexecute_tool_calls``), and the coroutine that
runs an async tool under its deadline on any loop (the caller's, or the private one).

An async tool is awaited on the caller's loop; a sync tool goes to the worker pool and its
outcome comes back through a future of the caller's loop; a dispatched call's runner future is
awaited. A batch is cut into the same segments as on the sync API; a segment's sync calls reach
the pool in one hand-off; a segment whose concurrency groups order some calls starts each call
once the calls it waits for finished (:meth:`AsyncScheduler.run_ordered`).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry._log import log
from toolregistry.errors import ToolCallError, ToolCancelled, ToolTimeoutError
from toolregistry.types import ToolResult

from ._intask import await_in_caller
from ._policies import group_order
from ._sync import pool_work, segments
from ._threads import SPREAD_AFTER, in_pool
from ._work import Work

if TYPE_CHECKING:
    from toolregistry.hookspecs import Runner

    from ._executor import Executor
    from ._pipeline import Prepared

__all__ = ["AsyncScheduler", "StartedCall"]

# A deadline timer runs in an empty context of its own (its callbacks read no contextvars),
# not in the copy of the caller's that ``call_at`` would take: a cancelled timer stays in the
# loop's heap until its time would have come, and kept the call's contextvars (a served MCP
# request and its session) that long, the whole timeout (60 s by default) after a quick call.
# One per timer: a context is entered by one thread at a time, and loops run in several.
_empty = contextvars.Context


class AsyncScheduler:
    """Runs prepared calls for the async API of one executor."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.pipeline = executor.pipeline
        self._orphans: set[asyncio.Task[Any]] = set()

    # -- async tools, on whichever loop runs this -----------------------------------------
    async def body(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                   prep: Prepared, started: float, in_caller: bool = False) -> Any:
        """Await an async tool under its deadline (and its per-tool lock when it must run
        alone); returns on time even when the tool ignores cancellation (it is then left to
        finish in the background). ``in_caller``: the running task is the caller's own (the
        async API), where a tool that ends on cancellation is awaited."""
        if prep.plan.safe:
            return await self._with_deadline(fn, args, kwargs, prep, in_caller)
        lock = await self.executor.locks.acquire_async(prep.plan.tool.name, prep.timeout,
                                                       started)
        try:
            return await self._with_deadline(fn, args, kwargs, prep, in_caller)
        finally:
            lock.release()

    async def _with_deadline(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                             prep: Prepared, in_caller: bool = False) -> Any:
        if not prep.observed:
            if prep.timeout is None:
                return await fn(*args, **kwargs)  # in this task's context: the caller's values
            task = _in_caller(prep) if in_caller else None
            if task is not None:
                return await await_in_caller(fn, args, kwargs, prep, task,
                                             self.executor.in_flight)
        # The tool's own task, in the call's own context (entered by nothing else).
        coro = fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        if prep.timeout is None:
            if not asyncio.iscoroutine(coro):
                coro = _awaited(coro)
            return await loop.create_task(coro, context=prep.context)
        # Wait for the task or the deadline, whichever comes first: one future woken by the
        # task itself as it ends (no done callback, which would cost the loop one more turn)
        # or by a timer. Awaiting the task itself would not do: a tool that ignores its
        # cancellation would hold the caller.
        waiter = loop.create_future()
        task = loop.create_task(_signalling(coro, waiter), context=prep.context)
        timer = loop.call_at(loop.time() + prep.timeout, _wake, waiter, context=_empty())
        call_id = prep.call.id
        if call_id is not None:
            in_flight = self.executor.in_flight.calls
            in_flight[call_id] = entry = (prep.plan.tool.name, waiter)
        try:
            await waiter
        except (asyncio.CancelledError, ToolCallError):  # the caller gave up, or cancel_call
            timer.cancel()
            self._abandon(task, prep)
            raise
        finally:
            if call_id is not None and in_flight.get(call_id) is entry:
                del in_flight[call_id]
        timer.cancel()
        if not task.done():
            self._abandon(task, prep)
            raise ToolTimeoutError()
        return task.result()

    def _abandon(self, task: asyncio.Task[Any], prep: Prepared) -> None:
        task.cancel()
        if prep.ctx is not None:
            prep.ctx.cancel_event.set()
        if not task.done():
            self._orphans.add(task)
            task.add_done_callback(self._orphan_done)

    def _orphan_done(self, task: asyncio.Task[Any]) -> None:
        self._orphans.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" warning

    # -- the API --------------------------------------------------------------------------
    async def execute(self, calls: Iterable[Any], context: Mapping[str, Any] | None,
                      timeout: float | None) -> list[ToolResult]:
        """A batch: one result per call, in order."""
        items, batch = self.pipeline.prepare_batch(calls, context, timeout, async_path=True)
        try:  # authorizations still to come, in order, before any call runs
            for i, item in enumerate(items):
                if not isinstance(item, ToolResult) and item.deciding is not None:
                    items[i] = await self.pipeline.decided(item)
        except BaseException:  # cancelled: the decisions not asked for are closed
            for item in items:
                if not isinstance(item, ToolResult) and item.deciding is not None:
                    item.deciding.close()
            raise
        results: list[Any] = list(items)
        for segment in segments(items):
            if len(segment) == 1:
                i, prep = segment[0]
                results[i] = await self.run(prep)
                continue
            after = group_order(segment)
            if after:
                out: dict[int, ToolResult] = {}
                await self.run_ordered(segment, after, out)
                for i, _ in segment:
                    results[i] = out[i]
                continue
            done = await self._run_segment(segment)
            for (i, _), result in zip(segment, done):
                results[i] = result
        return self.pipeline.batch_finished(batch, results)

    async def run_ordered(self, segment: list[tuple[int, Prepared]],
                          after: dict[int, list[int]], out: dict[int, ToolResult]) -> None:
        """Run a segment's calls concurrently, each once the calls it waits for (``after``,
        from its concurrency group) finished; results land in ``out`` as they come."""
        finished = {i: asyncio.Event() for i, _ in segment}

        async def one(i: int, prep: Prepared) -> None:
            for j in after.get(i, ()):
                await finished[j].wait()
            try:
                out[i] = await self.run(prep)
            finally:
                finished[i].set()

        await asyncio.gather(*(one(i, prep) for i, prep in segment))

    async def run(self, prep: Prepared) -> ToolResult:
        """One call, start to result."""
        started = time.perf_counter()
        if prep.plan.hooks.runner is not None:
            return await self._run_dispatched(prep, prep.plan.hooks.runner, started)
        try:
            fn, args, kwargs = self.executor.call_fn(prep)
            if prep.is_async:
                task = _in_caller(prep)
                if task is not None and prep.plan.safe:  # no frame of _with_deadline's
                    value = await await_in_caller(fn, args, kwargs, prep, task,
                                                  self.executor.in_flight)
                elif prep.plan.safe:  # its own task (no caller's task to await it in)
                    value = await self._with_deadline(fn, args, kwargs, prep)
                else:
                    value = await self.body(fn, args, kwargs, prep, started, task is not None)
            else:
                work, fut = self._pool_work(fn, args, kwargs, prep,
                                            asyncio.get_running_loop(), started)
                submitted = time.perf_counter()
                in_flight = self.executor.in_flight
                entry = in_flight.add(prep.call.id, prep.plan.tool.name, (work, fut))
                self.executor.pool.submit(work)
                try:
                    value = await self._await_work(work, fut, prep, submitted)
                finally:
                    in_flight.forget(prep.call.id, entry)
        except asyncio.CancelledError as exc:
            # The caller gave up: the call still ends once, for the log and its observers.
            self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
            raise
        except (Exception, ToolCancelled) as exc:
            return self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
        return self.pipeline.finish(prep, value, None, time.perf_counter() - started)

    def start(self, prep: Prepared) -> StartedCall:
        """One call started now, on this thread (which need not run a loop): a sync tool goes
        to the pool at once; the rest runs as :meth:`run` once the call is awaited."""
        if prep.deciding is not None or prep.is_async or prep.plan.hooks.runner is not None:
            return StartedCall(self, prep, None, None, 0.0)
        started = time.perf_counter()
        try:
            fn, args, kwargs = self.executor.call_fn(prep)
        except Exception as exc:
            return StartedCall(self, prep, None, exc, started)
        work = pool_work(fn, args, kwargs, prep, started)
        handoff = _Handoff()
        work.callback = handoff.done
        try:
            self.executor.pool.submit(work)
        except RuntimeError as exc:  # closed meanwhile
            return StartedCall(self, prep, None, ToolCallError(str(exc)), started)
        call = StartedCall(self, prep, work, None, started)
        call.handoff = handoff
        # As a sync caller would: a worker woken on this CPU runs first, so a quick tool has
        # ended before the loop that is to hear of it looks.
        self.executor.pool.let_run(work)
        return call

    async def _run_dispatched(self, prep: Prepared, runner: Runner, started: float
                              ) -> ToolResult:
        """A call handed to its runner, awaited under its deadline; cancelled (and its runner
        told) when the deadline passes or the awaiting task is cancelled."""
        executor = self.executor
        lock = None
        try:
            if not prep.plan.safe:
                lock = await executor.locks.acquire_async(prep.plan.tool.name, prep.timeout,
                                                          started)
            job = executor.job(prep)
            future = prep.context.copy().run(runner.submit, job)
            if not future.done():
                # Woken from the runner's thread when the future ends, or by a timer at the
                # deadline (cheaper than wrap_future + asyncio.wait; same outcomes).
                loop = asyncio.get_running_loop()
                waiter = loop.create_future()
                future.add_done_callback(_threadsafe_waker(loop, waiter))
                timer = None
                if prep.timeout is not None:
                    timer = loop.call_at(loop.time() + prep.timeout, _wake, waiter,
                                         context=_empty())
                try:
                    await waiter
                except asyncio.CancelledError:
                    executor.stop_job(runner, job, future)
                    raise
                finally:
                    if timer is not None:
                        timer.cancel()
                if not future.done():
                    executor.stop_job(runner, job, future)
                    raise ToolTimeoutError()
            if future.cancelled():  # the runner cancelled it: as the caller being cancelled
                raise asyncio.CancelledError()
            value = future.result()
        except asyncio.CancelledError as exc:
            self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
            raise
        except BaseException as exc:
            return self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
        finally:
            if lock is not None:
                lock.release()
        return self.pipeline.finish(prep, value, None, time.perf_counter() - started)

    # -- sync tools on the pool -----------------------------------------------------------
    @staticmethod
    def _pool_work(fn: Callable[..., Any], args: Any, kwargs: dict[str, Any], prep: Prepared,
                   loop: asyncio.AbstractEventLoop, started: float
                   ) -> tuple[Work, asyncio.Future[Any]]:
        """A pool call whose outcome lands in a future of ``loop``; a worker reaching it
        after its deadline does not start it."""
        fut: asyncio.Future[Any] = loop.create_future()
        work = pool_work(fn, args, kwargs, prep, started)

        def settle(w: Work) -> None:
            loop.call_soon_threadsafe(_settle, fut, w)

        work.callback = settle
        return work, fut

    async def _await_work(self, work: Work, fut: asyncio.Future[Any], prep: Prepared,
                          started: float) -> Any:
        pool = self.executor.pool
        deadline = None if prep.timeout is None else started + prep.timeout
        expiry = None
        if deadline is not None:
            expiry = asyncio.get_running_loop().call_later(
                max(0.0, deadline - time.perf_counter()), _expire, fut, context=_empty())
        try:
            value = await fut
        except asyncio.CancelledError:
            pool.interrupt(work)
            raise
        except ToolTimeoutError:  # the expiry fired
            if pool.interrupt(work):
                raise
            work.done.acquire()  # it finished right at the deadline
            if work.overran(deadline):
                raise
            if work.error is not None:
                raise work.error from None
            return work.result
        except BaseException:
            if work.overran(deadline):
                raise ToolTimeoutError() from None
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
        if work.overran(deadline):  # the loop was too busy to look in time
            raise ToolTimeoutError()
        return value

    async def _collect_work(self, prep: Prepared, work: Work, fut: asyncio.Future[Any],
                            started: float) -> ToolResult:
        try:
            value = await self._await_work(work, fut, prep, started)
        except (Exception, ToolCancelled) as exc:
            return self.pipeline.finish(prep, None, exc, time.perf_counter() - started)
        return self.pipeline.finish(prep, value, None, time.perf_counter() - started)

    async def _finished(self, prep: Prepared, error: BaseException, started: float
                        ) -> ToolResult:
        return self.pipeline.finish(prep, None, error, time.perf_counter() - started)

    async def _run_segment(self, segment: list[tuple[int, Prepared]]) -> list[ToolResult]:
        """A concurrent segment: sync calls go to the pool in one hand-off."""
        if in_pool():
            return list(await asyncio.gather(*(self.run(p) for _, p in segment)))
        executor = self.executor
        loop = asyncio.get_running_loop()
        coros: list[Any] = []
        works: list[tuple[Work, asyncio.Future[Any]]] = []
        for _, prep in segment:
            if prep.is_async or prep.plan.hooks.runner is not None:
                coros.append(self.run(prep))
                continue
            started = time.perf_counter()
            try:
                fn, args, kwargs = executor.call_fn(prep)
            except Exception as exc:
                coros.append(self._finished(prep, exc, started))
                continue
            work, fut = self._pool_work(fn, args, kwargs, prep, loop, started)
            works.append((work, fut))
            coros.append(self._collect_work(prep, work, fut, started))
        try:
            executor.pool.submit_many([w for w, _ in works])
        except RuntimeError as exc:  # closed meanwhile
            for _, fut in works:
                fut.set_exception(ToolCallError(str(exc)))
        if len(works) > 1:
            loop.call_later(SPREAD_AFTER, self._spread_waiting)
        return list(await asyncio.gather(*coros))

    def _spread_waiting(self) -> None:
        pool = self.executor.pool_or_none
        if pool is not None and pool.has_backlog:
            try:
                pool.spread()
            except Exception as exc:  # no thread to be had: the busy ones drain the backlog
                log.debug("pool.spread_failed", error=str(exc))


class StartedCall:
    """A call made on one thread and awaited on an event loop (see
    :func:`toolregistry.plugin.start_call`): prepared, and a sync tool running on the pool
    already. Await it once, or :meth:`cancel` it."""

    __slots__ = ("error", "handoff", "prep", "ready", "sched", "started", "work")

    def __init__(self, sched: AsyncScheduler, prep: Prepared | None, work: Work | None,
                 error: BaseException | None, started: float,
                 ready: ToolResult | None = None) -> None:
        self.sched = sched
        self.prep: Prepared = prep  # type: ignore[assignment]  # None only when ready
        self.work = work
        self.error = error
        self.started = started
        self.ready = ready
        """The call's result already (it ended in preparation: unknown tool, bad arguments)."""
        self.handoff: _Handoff | None = None

    def __await__(self) -> Any:
        return self.result().__await__()

    async def result(self) -> ToolResult:
        """The call's result (awaited on the loop that is to hear of it)."""
        if self.ready is not None:
            return self.ready
        sched, prep, work = self.sched, self.prep, self.work
        if work is None:
            if self.error is not None:
                return self._finish(None, self.error)
            if prep.deciding is not None:
                decided = await sched.pipeline.decided(prep)
                if isinstance(decided, ToolResult):
                    return decided
            return await sched.run(prep)
        if work.done.locked():  # still running: be woken when it ends (see _Handoff)
            handoff = self.handoff
            assert handoff is not None
            fut = handoff.wait(asyncio.get_running_loop())
            if work.done.locked():
                return await sched._collect_work(prep, work, fut, self.started)
            fut.cancel()  # it ended meanwhile: nothing to wait for
        # Ended before anyone waited (a quick tool, run while this loop was being woken): its
        # outcome as _await_work gives it, without the wake-up.
        return self._finish(*self._outcome(work))

    def cancel(self) -> None:
        """End a call that will not be awaited: a pooled tool still running is interrupted,
        an authorization still to come closed, a tool not started never runs; the call's
        result (``cancelled`` unless its tool had ended) is logged and its observers told."""
        prep, work = self.prep, self.work
        if self.ready is not None:
            return
        if self.error is not None:
            self._finish(None, self.error)
        elif work is not None and not work.done.locked():
            self._finish(*self._outcome(work))
        else:
            if work is not None:
                self.sched.executor.pool.interrupt(work)
            elif prep.deciding is not None:
                prep.deciding.close()
            self._finish(None, asyncio.CancelledError())

    def _outcome(self, work: Work) -> tuple[Any, BaseException | None]:
        timeout = self.prep.timeout
        if timeout is not None and work.overran(self.started + timeout):
            return None, ToolTimeoutError()
        return work.result, work.error

    def _finish(self, value: Any, error: BaseException | None) -> ToolResult:
        duration = time.perf_counter() - self.started if self.started else 0.0
        return self.sched.pipeline.finish(self.prep, value, error, duration)


class _Handoff:
    """How a started pooled call wakes the loop that waits for it, once one does: the worker
    calls :meth:`done` after the call ended (``work.done`` released), the loop sets its
    future (:meth:`wait`) and then looks at ``work.done`` again, so either the loop sees the
    call ended or the worker sees the future; a call that ended first costs no wake-up."""

    __slots__ = ("fut", "loop")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.fut: asyncio.Future[Any] | None = None

    def wait(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = loop.create_future()
        self.loop = loop
        self.fut = fut
        return fut

    def done(self, work: Work) -> None:
        fut, loop = self.fut, self.loop
        if fut is not None and loop is not None:
            loop.call_soon_threadsafe(_settle, fut, work)


def _in_caller(prep: Prepared) -> asyncio.Task[Any] | None:
    """The running task, when this call's async tool is to be awaited in it under its
    deadline (its source declared it ends on cancellation; no observer's context to keep
    apart; a deadline to keep); else ``None``."""
    if prep.timeout is None or prep.observed or not prep.plan.tool.ends_on_cancel:
        return None
    return asyncio.current_task()


def _settle(fut: asyncio.Future[Any], work: Work) -> None:
    if fut.done():
        return
    if work.error is not None:
        fut.set_exception(work.error)
    else:
        fut.set_result(work.result)


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(ToolTimeoutError())


def _threadsafe_waker(loop: asyncio.AbstractEventLoop, waiter: asyncio.Future[None]
                      ) -> Callable[[Any], None]:
    """A done callback for a ``concurrent.futures.Future`` ending on any thread: wakes
    ``waiter`` on ``loop`` (nothing to wake once that loop is closed)."""
    def done(_: Any) -> None:
        try:
            loop.call_soon_threadsafe(_wake, waiter)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    return done


def _wake(waiter: asyncio.Future[None]) -> None:
    """Wake ``waiter`` unless it ended already (a deadline's timer)."""
    if not waiter.done():
        waiter.set_result(None)


async def _signalling(awaitable: Any, waiter: asyncio.Future[None]) -> Any:
    """Await an async tool, then wake ``waiter`` (unless the deadline or the caller's end woke
    it already): the caller waits on ``waiter``, not on this task."""
    try:
        return await awaitable
    finally:
        if not waiter.done():
            waiter.set_result(None)


async def _awaited(awaitable: Any) -> Any:
    """A coroutine for whatever awaitable an async callable returned (a task needs one)."""
    return await awaitable
