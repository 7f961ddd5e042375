"""The executor of one registry: its resources (worker pool, private loop, per-tool locks) and
the four entry points, each a pipeline step, a scheduler step and a pipeline step again.

``invoke`` / ``execute`` run on :class:`~._sync.SyncScheduler`, ``ainvoke`` / ``aexecute`` on
:class:`~._async.AsyncScheduler`; both prepare and finish calls through the one
:class:`~._pipeline.CallPipeline`. Threads are started on first use and again in a forked
child.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry._log import log
from toolregistry._settings import TIMEOUT_RULE, valid_timeout
from toolregistry.errors import ToolCallError
from toolregistry.types import Job

from ._async import AsyncScheduler, StartedCall
from ._cancel import InFlight
from ._loop import LoopThread
from ._pipeline import CallPipeline, Prepared
from ._policies import ExclusiveLocks, exclusive, retrying
from ._processes import ProcessRunner
from ._sync import SyncScheduler
from ._threads import WorkerPool

if TYPE_CHECKING:
    from toolregistry._registry import ToolRegistry
    from toolregistry.hookspecs import Runner
    from toolregistry.types import ToolResult

__all__ = ["Executor"]


class Executor:
    """Executes calls for one registry (see the package docstring)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._pool: WorkerPool | None = None
        self._loop: LoopThread | None = None
        self.locks = ExclusiveLocks()
        self.pipeline = CallPipeline(registry, registry.plugins.hooks)
        self.pipeline.process_runner = self.process_runner
        self._processes: ProcessRunner | None = None
        self.inline_calls = registry.settings.inline_calls
        self.in_flight = InFlight(self)
        self.sync = SyncScheduler(self)
        self.aio = AsyncScheduler(self)
        _executors.add(self)

    # -- resources ------------------------------------------------------------------------
    @property
    def pool(self) -> WorkerPool:
        """The worker pool, started on first use."""
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    settings = self._registry.settings
                    self._pool = WorkerPool(settings.max_workers,
                                            pinning=settings.handoff_pinning)
                pool = self._pool
        return pool

    @property
    def pool_or_none(self) -> WorkerPool | None:
        """The worker pool if it was started."""
        return self._pool

    @property
    def loop_thread(self) -> LoopThread:
        """The private event loop, started on first use."""
        if self._loop is None:
            with self._lock:
                if self._loop is None:
                    self._loop = LoopThread()
        return self._loop

    @property
    def loop_or_none(self) -> LoopThread | None:
        """The private event loop if it was started."""
        return self._loop

    def process_runner(self) -> ProcessRunner:
        """The runner of the tools isolated in processes, started on first use (one worker
        process per CPU at most)."""
        if self._processes is None:
            with self._lock:
                if self._processes is None:
                    self._processes = ProcessRunner(os.cpu_count() or 2)
        return self._processes

    @property
    def thread_count(self) -> int:
        """Threads this executor runs now (workers and the private loop)."""
        count = self._pool.thread_count if self._pool is not None else 0
        return count + (1 if self._loop is not None and self._loop.loop.is_running() else 0)

    def shutdown(self) -> None:
        """No new calls; stop the private loop; workers leave once their call ends."""
        self.pipeline.closed = True
        if self._loop is not None:
            self._loop.stop()
        if self._pool is not None:
            self._pool.shutdown()
        if self._processes is not None:
            self._processes.close()

    def invalidate(self, names: Iterable[str] | None = None) -> None:
        """The registry changed: forget the call plans of ``names`` (all when ``None``)."""
        self.pipeline.invalidate(names)

    def call_fn(self, prep: Prepared) -> tuple[Callable[..., Any], Any, dict[str, Any]]:
        """The function to run for ``prep`` with its arguments, wrapped for retries and
        exclusivity when the tool asks for them."""
        plan = prep.plan
        fn = prep.fn
        if fn is None:
            raise ToolCallError(f"tool {plan.tool.name!r} has no callable", kind="execution")
        retry = self._registry.retry
        if retry is not None and plan.idempotent:
            fn = retrying(fn, retry, plan.tool.name, prep.timeout, prep.is_async)
        if not plan.safe and not prep.is_async:
            # Async tools take the lock in AsyncScheduler.body.
            fn = exclusive(fn, self.locks(plan.tool.name), prep.timeout)
        return fn, prep.args, prep.kwargs

    def job(self, prep: Prepared) -> Job:
        """What a runner gets for ``prep`` (a dispatched call), its deadline starting now."""
        plan = prep.plan
        fn = prep.fn
        if fn is None:
            raise ToolCallError(f"tool {plan.tool.name!r} has no callable", kind="execution")
        timeout = prep.timeout
        retry = self._registry.retry if plan.idempotent else None
        return Job(plan.tool, prep.call, fn, prep.is_async, tuple(prep.args), prep.kwargs,
                   timeout, None if timeout is None else time.monotonic() + timeout,
                   prep.context, retry, prep.ctx.cancel_event if prep.ctx is not None else None)

    @staticmethod
    def stop_job(runner: Runner, job: Job, future: cf.Future[Any]) -> None:
        """A dispatched call's deadline passed or its caller gave up: cancel its future, set
        its cancel event and tell its runner (a failing runner is logged)."""
        future.cancel()
        if job.cancel_event is not None:
            job.cancel_event.set()
        try:
            runner.cancel(job, future)
        except Exception as exc:
            log.warning("runner.cancel_failed", tool=job.tool.name, call_id=job.call.id,
                        error=f"{type(exc).__name__}: {exc}")

    # -- the API --------------------------------------------------------------------------
    def invoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
               context: Mapping[str, Any] | None, timeout: float | None,
               call_id: str | None) -> ToolResult:
        """``registry.invoke``."""
        timeout = call_timeout(timeout)
        prep = self.pipeline.prepare_invoke(name, arguments, context, timeout, call_id, False)
        return self.sync.run(prep) if isinstance(prep, Prepared) else prep

    def execute(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None,
                timeout: float | None) -> list[ToolResult]:
        """``registry.execute_tool_calls``."""
        return self.sync.execute(calls, context, call_timeout(timeout))

    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
                      context: Mapping[str, Any] | None, timeout: float | None,
                      call_id: str | None) -> ToolResult:
        """``registry.ainvoke``."""
        timeout = call_timeout(timeout)
        prep = self.pipeline.prepare_invoke(name, arguments, context, timeout, call_id, True)
        if isinstance(prep, Prepared) and prep.deciding is not None:
            prep = await self.pipeline.decided(prep)
        return await self.aio.run(prep) if isinstance(prep, Prepared) else prep

    def start(self, name: str, arguments: Mapping[str, Any] | str | None, *,
              context: Mapping[str, Any] | None, timeout: float | None,
              call_id: str | None) -> StartedCall:
        """``toolregistry.plugin.start_call``: ``ainvoke``'s call, prepared on this thread and,
        for a sync tool, started on the pool now."""
        timeout = call_timeout(timeout)
        prep = self.pipeline.prepare_invoke(name, arguments, context, timeout, call_id, True)
        if isinstance(prep, Prepared):
            return self.aio.start(prep)
        return StartedCall(self.aio, None, None, None, 0.0, prep)

    async def aexecute(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None,
                       timeout: float | None) -> list[ToolResult]:
        """``registry.aexecute_tool_calls``."""
        return await self.aio.execute(calls, context, call_timeout(timeout))


def call_timeout(value: Any) -> float | None:
    """The ``timeout=`` of a call as given (``None``: the tool's or the registry's default;
    ``0``: no deadline), or a ``ValueError`` naming it: ``nan``, ``inf``, ``1e10``, negative
    numbers and non-numbers would break the call later, far from the mistake."""
    if value is None or (value == 0 and not isinstance(value, bool)
                         and isinstance(value, (int, float))):
        return value
    if not valid_timeout(value):
        raise ValueError(f"timeout= {TIMEOUT_RULE}, 0 for no deadline, or None for the tool's "
                         f"or the registry's default; got {value!r}")
    return float(value)


_executors: weakref.WeakSet[Executor] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A forked child has none of the parent's threads: start its pool and loop afresh.
    for executor in list(_executors):
        executor._pool = None
        executor._loop = None
        executor._processes = None
        executor._lock = threading.Lock()
        executor.locks = ExclusiveLocks()
        executor.pipeline.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
