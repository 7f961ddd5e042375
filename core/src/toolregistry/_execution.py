"""Running tool calls: parse, hooks, validate, execute (concurrently where safe), encode.

Where calls run:

* a sync tool runs on the registry's worker threads when its call has a deadline (the default:
  ``default_timeout`` is 60 s), so the caller gets its result -- or a timeout error -- on time
  even when the tool blocks in C code; a call without any deadline runs on the caller's thread
  (nothing to wait for, so no hand-off);
* an async tool runs on the caller's event loop for the async API, and on a private background
  loop for the sync API, so both APIs work from plain code and from inside a running loop;
* a tool marked ``is_concurrency_safe=False`` runs alone: a batch is cut into segments around
  it, and a per-tool lock keeps concurrent batches from overlapping it.

A sync tool that overruns its deadline gets a :class:`ToolCancelled` raised inside its thread
(it lands at the tool's next Python instruction, so a blocking C call finishes first) and its
``ToolContext.cancel_event`` set; the caller does not wait for it. An async tool is cancelled;
one that ignores the cancellation is left to finish in the background.
"""

from __future__ import annotations

import _thread
import asyncio
import collections
import concurrent.futures as cf
import ctypes
import inspect
import json
import logging
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog
from attrs import frozen

from . import _watchdog
from ._calls import CallParseError, parse_arguments, parse_call, short_repr
from ._log import log
from ._names import normalize_name
from ._results import error_result, make_result
from .errors import ToolCallError
from .types import ToolCall, ToolContext, ToolResult

if TYPE_CHECKING:
    from ._registry import ToolRegistry
    from .tool import Tool

__all__ = ["Executor", "RetryPolicy", "ToolCancelled"]


class ToolCancelled(BaseException):
    """Raised inside a sync tool's thread when its call timed out or was cancelled.

    A ``BaseException`` so that ``except Exception`` in tool code does not swallow it.
    """


class _ClosedBeforeStart(ToolCancelled):
    """The registry was closed while the call waited for a worker."""


@frozen
class RetryPolicy:
    """Retries for transient failures of idempotent tools (never applied by default).

    Pass it as ``ToolRegistry(retry=RetryPolicy(...))``; it applies only to tools whose metadata
    says they are idempotent (``idempotent_hint``, the ``idempotent`` or ``read_only`` tag).
    ``attempts`` counts the first try. Only exceptions of ``retry_on`` types are retried, with
    exponential backoff and jitter, within the call's deadline.
    """

    attempts: int = 3
    backoff: float = 0.2
    max_backoff: float = 5.0
    retry_on: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before try ``attempt + 1``."""
        base: float = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        """True when ``exc`` after try ``attempt`` deserves another try."""
        return attempt < self.attempts and isinstance(exc, self.retry_on)


# --- logging: cheap level checks on the hot path --------------------------------------------

_stdlib_logger = logging.getLogger("toolregistry")
_is_configured = structlog.is_configured


def _enabled(level: int) -> bool:
    """Whether an event at ``level`` could be emitted (configured structlog decides itself)."""
    return _is_configured() or _stdlib_logger.isEnabledFor(level)


def _log_result(result: ToolResult) -> None:
    # Info, not warning, for failures too: an error result is the normal way a call ends badly
    # (the model reads it and corrects itself), not a problem of the application.
    if _enabled(logging.INFO):
        if result.is_error:
            log.info("call.failed", tool=result.name, call_id=result.call_id,
                     duration=round(result.duration, 6), outcome=result.error_kind,
                     error=result.text[:500])
        else:
            log.info("call.finished", tool=result.name, call_id=result.call_id,
                     duration=round(result.duration, 6), outcome="ok")


# --- the worker pool ------------------------------------------------------------------------

_local = threading.local()

_PENDING, _RUNNING, _INTERRUPTED, _DONE, _CANCELLED = range(5)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                               ctypes.py_object(exc) if exc else None)


class _Work:
    """One sync call handed to a worker thread; ``done`` (a raw lock) is released when it ends.

    ``state`` moves PENDING -> RUNNING -> DONE, or to CANCELLED (timed out before it started)
    or INTERRUPTED (timed out while running); transitions happen under the pool's lock so an
    interrupt can never land in the worker's next call.
    """

    __slots__ = ("args", "callback", "cancel_event", "done", "error", "finished", "fn", "ident",
                 "kwargs", "result", "state")

    def __init__(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.result: Any = None
        self.error: BaseException | None = None
        self.state = _PENDING
        self.ident = 0
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.callback: Callable[[_Work], None] | None = None
        self.cancel_event: threading.Event | None = None
        self.finished = 0.0

    def overran(self, deadline: float | None) -> bool:
        """True when it finished after ``deadline`` (a ``perf_counter`` time): the caller looked
        late (a busy thread, a long batch), but the call still ran past its time."""
        return deadline is not None and self.finished > deadline


class _Worker:
    """One worker thread and the pipe it waits on for work."""

    __slots__ = ("idle_since", "rfd", "thread", "wfd", "work")

    def __init__(self, work: _Work | None) -> None:
        self.rfd, self.wfd = os.pipe()
        self.work = work
        self.idle_since = 0.0
        self.thread: threading.Thread | None = None


_GO, _QUIT = b"\x01", b"\x00"
SPREAD_AFTER = 0.0002
"""Seconds a batch's calls may wait for the one worker running them before more are woken."""
_CLOSING = _Work(lambda: None, (), {})  # _WorkerPool._next: leave, do not wait


class _WorkerPool:
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
        self._backlog: collections.deque[_Work] = collections.deque()
        self._shutdown = False

    def submit(self, work: _Work, *, saturated_ok: bool = True) -> bool:
        """Hand ``work`` to a worker; False (nothing queued) when every worker is busy, the
        pool is at its size and ``saturated_ok`` is false."""
        stale = None
        with self.lock:
            if self._shutdown:
                raise RuntimeError("the registry is closed")
            idle = self._idle
            if idle:
                worker = idle.pop()
                worker.work = work
                if idle and time.monotonic() - idle[0].idle_since > self._idle_timeout:
                    stale = idle.pop(0)
            elif len(self._workers) < self._max:
                worker = _Worker(work)
                self._workers.add(worker)
                worker.thread = threading.Thread(target=self._main, args=(worker,),
                                                 name="toolregistry-worker", daemon=True)
                worker.thread.start()
                return True
            elif not saturated_ok:
                return False
            else:
                self._backlog.append(work)
                return True
        os.write(worker.wfd, _GO)
        if stale is not None:
            os.write(stale.wfd, _QUIT)
        return True

    def submit_many(self, works: list[_Work]) -> None:
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
        """Give every waiting call a worker (idle ones first, new ones up to the size)."""
        wake: list[_Worker] = []
        with self.lock:
            backlog = self._backlog
            while backlog and not self._shutdown:
                if self._idle:
                    worker = self._idle.pop()
                    worker.work = backlog.popleft()
                    wake.append(worker)
                elif len(self._workers) < self._max:
                    new = _Worker(backlog.popleft())
                    self._workers.add(new)
                    new.thread = threading.Thread(target=self._main, args=(new,),
                                                  name="toolregistry-worker", daemon=True)
                    new.thread.start()
                else:
                    break
        for worker in wake:
            os.write(worker.wfd, _GO)

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

    def _next(self, worker: _Worker) -> _Work | None:
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

    def _run(self, work: _Work, worker: _Worker, ident: int, lock: Any) -> _Work | None:
        """Run one call; returns the next call to run (from the backlog) or ``None``."""
        with lock:
            started = work.state == _PENDING
            if started:
                work.state = _RUNNING
                work.ident = ident
        if started:
            try:
                work.result = work.fn(*work.args, **work.kwargs)
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

    def interrupt(self, work: _Work) -> bool:
        """Stop ``work`` (its deadline passed); False when it had already finished."""
        with self.lock:
            state = work.state
            if state == _PENDING:
                work.state = _CANCELLED
            elif state == _RUNNING:
                work.state = _INTERRUPTED
                _set_async_exc(work.ident, ToolCancelled)
        if work.cancel_event is not None and state in (_PENDING, _RUNNING):
            work.cancel_event.set()
        return state != _DONE

    @property
    def thread_count(self) -> int:
        """Worker threads alive now."""
        return len(self._workers)

    def shutdown(self) -> None:
        """Let every worker leave once its current call ends; calls still waiting for a
        worker end as cancelled."""
        with self.lock:
            self._shutdown = True
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
            work.error = _ClosedBeforeStart("the registry was closed before the call started")
            work.done.release()
            if work.callback is not None:
                try:
                    work.callback(work)
                except Exception:
                    pass


class _LoopThread:
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
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
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


# --- prepared calls -------------------------------------------------------------------------

class _Plan:
    """What the executor keeps per tool object (rebuilt when the registered tool changes)."""

    __slots__ = ("fn", "injected", "is_async", "safe", "tool", "validator")

    def __init__(self, tool: Tool, async_path: bool = False) -> None:
        self.tool = tool
        self.validator = tool.validator
        self.injected = self.validator.injected_params()
        # A tool with both a sync callable and an async twin runs each on its own path, so
        # neither path pays a hop to the other kind of code.
        if async_path and tool.acallable is not None:
            self.fn: Callable[..., Any] | None = tool.acallable
            self.is_async = True
        elif not async_path and tool.callable is None and tool.acallable is not None:
            self.fn = tool.acallable
            self.is_async = True
        else:
            self.fn = tool.callable
            self.is_async = bool(tool.is_async)
        self.safe = tool.metadata.is_concurrency_safe


class _Prepared:
    """A call that passed parsing, hooks and validation, ready to run."""

    __slots__ = ("args", "call", "ctx", "kwargs", "plan", "timeout")

    def __init__(self, plan: _Plan, call: ToolCall, args: Any, kwargs: dict[str, Any],
                 timeout: float | None, ctx: ToolContext | None) -> None:
        self.plan = plan
        self.call = call
        self.args = args
        self.kwargs = kwargs
        self.timeout = timeout
        self.ctx = ctx


_PLAIN_TYPES = frozenset({str, int, float, bool, dict, list, tuple, type(None), bytes})


class Executor:
    """Executes calls for one registry (see the module docstring)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._hooks = registry._hooks
        self._lock = threading.Lock()
        self._pool: _WorkerPool | None = None
        self._loop: _LoopThread | None = None
        self._exclusive: dict[str, threading.Lock] = {}
        self._plans: dict[str, _Plan] = {}
        self._aplans: dict[str, _Plan] = {}
        self._orphans: set[asyncio.Task[Any]] = set()
        self._closed = False
        _executors.add(self)

    # -- resources ------------------------------------------------------------------------
    @property
    def pool(self) -> _WorkerPool:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    workers = self._registry.max_workers or max(32, (os.cpu_count() or 1) + 4)
                    self._pool = _WorkerPool(workers)
                pool = self._pool
        return pool

    @property
    def loop_thread(self) -> _LoopThread:
        if self._loop is None:
            with self._lock:
                if self._loop is None:
                    self._loop = _LoopThread()
        return self._loop

    @property
    def thread_count(self) -> int:
        """Threads this executor runs now (workers and the private loop)."""
        count = self._pool.thread_count if self._pool is not None else 0
        return count + (1 if self._loop is not None and self._loop.loop.is_running() else 0)

    def shutdown(self) -> None:
        self._closed = True
        if self._loop is not None:
            self._loop.stop()
        if self._pool is not None:
            self._pool.shutdown()

    def _exclusive_lock(self, name: str) -> threading.Lock:
        lock = self._exclusive.get(name)
        if lock is None:
            with self._lock:
                lock = self._exclusive.setdefault(name, threading.Lock())
        return lock

    # -- preparation ----------------------------------------------------------------------
    def _lookup(self, call: ToolCall, async_path: bool = False) -> _Plan | ToolResult:
        registry = self._registry
        name = call.name
        tool = registry._tools.get(name)
        if tool is None:
            alias = _alias(name)
            tool = registry._tools.get(alias) if alias else None
            if tool is None:
                return self._unknown(call)
            call.name = name = alias or name
        if (registry._disabled or registry._disabled_namespaces) and \
                not registry.is_enabled(name):
            why = registry.disabled_reason(name)
            return error_result(
                call.id, name, "disabled",
                f"tool {name!r} is disabled" + (f" ({why})" if why else "") +
                "; do not call it again in this conversation, use another tool")
        plans = self._aplans if async_path else self._plans
        plan = plans.get(name)
        if plan is None or plan.tool is not tool:
            plan = plans[name] = _Plan(tool, async_path)
        return plan

    def _unknown(self, call: ToolCall) -> ToolResult:
        name = call.name
        try:
            close = [n for n in self._registry.suggest_names(name, 3) if n != name][:3]
        except Exception:
            close = []
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        return error_result(call.id, name, "unknown_tool",
                            f"there is no tool named {name!r}.{hint} Call only the tools you "
                            "were given, by their exact names.")

    def _prepare(self, call: ToolCall, context: Mapping[str, Any] | None,
                 timeout: float | None, async_path: bool = False) -> _Prepared | ToolResult:
        plan = self._lookup(call, async_path)
        if isinstance(plan, ToolResult):
            return plan
        registry = self._registry
        hooks = self._hooks
        tool = plan.tool
        if hooks.has_pre_invoke:
            try:
                hooks.pre_invoke(registry, tool, call)
            except Exception as exc:
                log.warning("hook.failed", hook="pre_invoke", tool=tool.name, error=str(exc))
                return error_result(call.id, tool.name, "hook",
                                    f"a plugin rejected the call: {type(exc).__name__}: {exc}",
                                    reason=call.reason)
        arguments = call.arguments
        if arguments is None:
            arguments = call.arguments = {}
        try:
            values = plan.validator.validate(arguments)
        except Exception as exc:
            coerced = _coerce(tool, arguments, exc)
            try:
                if coerced is None:
                    raise exc
                values = plan.validator.validate(coerced)
            except Exception as exc2:
                return error_result(call.id, tool.name, "invalid_arguments",
                                    _validation_message(tool.name, exc2), reason=call.reason)
        if timeout is not None:
            limit: float | None = timeout if timeout > 0 else None
        else:
            limit = tool.metadata.timeout
            if limit is None:
                limit = registry.default_timeout
        ctx = None
        if plan.injected:
            injected: dict[str, Any] = {}
            for pname, key, has_default in plan.injected:
                if key is None:
                    if ctx is None:
                        ctx = ToolContext(registry=registry, call=call, values=context or {},
                                          deadline=None if limit is None
                                          else time.monotonic() + limit)
                    injected[pname] = ctx
                elif context is not None and key in context:
                    injected[pname] = context[key]
                elif not has_default:
                    return error_result(
                        call.id, tool.name, "execution",
                        f"tool {tool.name!r} needs the application context value {key!r}, "
                        "which was not passed (context={...} on invoke / execute_tool_calls)",
                        reason=call.reason)
            args, kwargs = plan.validator.bind(values, injected)
        else:
            args, kwargs = plan.validator.bind(values, {})
        if _enabled(logging.DEBUG):
            log.debug("call.started", tool=tool.name, call_id=call.id, arguments=arguments)
        return _Prepared(plan, call, args, kwargs, limit, ctx)

    def _prepare_one(self, call: ToolCall, context: Mapping[str, Any] | None,
                     timeout: float | None, async_path: bool = False
                     ) -> _Prepared | ToolResult:
        try:
            return self._prepare(call, context, timeout, async_path)
        except Exception as exc:  # defensive: bad input never escapes as an exception
            return error_result(call.id, call.name, "execution", f"{type(exc).__name__}: {exc}")

    def _parse(self, raw: Any, index: int) -> ToolCall | ToolResult:
        try:
            call = parse_call(raw, index)
        except CallParseError as exc:
            return error_result(exc.call.id, exc.call.name, exc.kind, str(exc))
        except Exception as exc:  # defensive: a call object that breaks on inspection
            return error_result(None, "", "malformed_call",
                                f"tool call #{index} could not be read: "
                                f"{type(exc).__name__}: {exc}")
        if call.id is None:
            call.id = f"call_{os.urandom(6).hex()}"
            call.extra["generated_id"] = True
        return call

    # -- finishing ------------------------------------------------------------------------
    def _finish(self, prep: _Prepared, value: Any, error: BaseException | None,
                duration: float) -> ToolResult:
        call = prep.call
        tool = prep.plan.tool
        if error is None and type(value) not in _PLAIN_TYPES and inspect.isawaitable(value):
            value, error = _run_awaitable(value)
        if error is None:
            try:
                result = make_result(call.id, tool.name, value, reason=call.reason,
                                     duration=duration)
            except Exception as exc:
                result = error_result(call.id, tool.name, "execution",
                                      f"the result of {tool.name!r} could not be encoded: "
                                      f"{type(exc).__name__}: {exc}",
                                      reason=call.reason, duration=duration)
        else:
            result = self._error_for(prep, error, duration)
        hooks = self._hooks
        if hooks.has_post_invoke:
            try:
                result = hooks.post_invoke(self._registry, tool, call, result)
            except Exception as exc:
                log.warning("hook.failed", hook="post_invoke", tool=tool.name, error=str(exc))
                result = error_result(call.id, tool.name, "hook",
                                      f"{type(exc).__name__}: {exc}", reason=call.reason,
                                      duration=duration)
        _log_result(result)
        return result

    def _error_for(self, prep: _Prepared, exc: BaseException, duration: float) -> ToolResult:
        call, name = prep.call, prep.plan.tool.name
        if isinstance(exc, _ClosedBeforeStart):
            return error_result(call.id, name, "cancelled", f"tool {name!r}: {exc}",
                                reason=call.reason, duration=duration)
        if isinstance(exc, ToolCancelled) or getattr(exc, "_toolregistry_deadline", False):
            limit = f"{prep.timeout:g} s" if prep.timeout is not None else "its time limit"
            return error_result(call.id, name, "timeout",
                                f"tool {name!r} did not finish within {limit} and was "
                                "cancelled; try a smaller request, or a different approach",
                                reason=call.reason, duration=duration)
        if isinstance(exc, (asyncio.CancelledError, cf.CancelledError)):
            return error_result(call.id, name, "cancelled", f"tool {name!r} was cancelled",
                                reason=call.reason, duration=duration)
        if isinstance(exc, ToolCallError):
            return error_result(call.id, name, exc.kind, str(exc),
                                reason=call.reason, duration=duration)
        return error_result(call.id, name, "execution",
                            f"tool {name!r} failed: {type(exc).__name__}: {exc}",
                            reason=call.reason, duration=duration)

    def _closed_result(self, call_id: str | None, name: str) -> ToolResult:
        return error_result(call_id, name, "execution",
                            f"registry {self._registry.name!r} is closed; no calls run")

    # -- sync API -------------------------------------------------------------------------
    def _prepare_invoke(self, name: str, arguments: Mapping[str, Any] | str | None,
                        context: Mapping[str, Any] | None, timeout: float | None,
                        call_id: str | None, async_path: bool) -> _Prepared | ToolResult:
        """One named call, parsed and prepared (or its error result, logged)."""
        call = ToolCall(name, None, call_id, arguments)
        if self._closed or self._registry._closed:
            return self._closed_result(call_id, name)
        try:
            call.arguments = parse_arguments(arguments, call)
        except CallParseError as exc:
            result = error_result(call_id, name, exc.kind, str(exc))
            _log_result(result)
            return result
        prep = self._prepare_one(call, context, timeout, async_path)
        if isinstance(prep, ToolResult):
            _log_result(prep)
        return prep

    def invoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
               context: Mapping[str, Any] | None, timeout: float | None,
               call_id: str | None) -> ToolResult:
        prep = self._prepare_invoke(name, arguments, context, timeout, call_id, False)
        return prep if isinstance(prep, ToolResult) else self._run_sync(prep)

    def execute(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None,
                timeout: float | None) -> list[ToolResult]:
        items = self._prepare_batch(calls, context, timeout)
        results: list[ToolResult | None] = [x if isinstance(x, ToolResult) else None
                                            for x in items]
        for segment in _segments(items):
            if len(segment) == 1:
                i, prep = segment[0]
                results[i] = self._run_sync(prep)
                continue
            if getattr(_local, "in_pool", False) or (
                    self._loop is not None and threading.get_ident() == self._loop.ident):
                handles = [(i, prep, self._start(prep)) for i, prep in segment]
            else:
                handles = self._start_segment(segment)
            # Earliest deadline first, so each overrunning call is stopped at its own deadline.
            handles.sort(key=_deadline_key)
            for i, prep, handle in handles:
                results[i] = self._collect(prep, handle)
        return [r for r in results if r is not None]

    def _start_segment(self, segment: list[tuple[int, _Prepared]]
                       ) -> list[tuple[int, _Prepared, Any]]:
        """Start a concurrent segment: sync calls to the pool in one hand-off, async calls
        to the private loop as one task (fewer cross-thread wake-ups than one per call)."""
        handles: list[tuple[int, _Prepared, Any]] = []
        works: list[_Work] = []
        group: list[tuple[int, Callable[..., Any], Any, dict[str, Any], _Prepared, float]] = []
        for i, prep in segment:
            started = time.perf_counter()
            try:
                fn, args, kwargs = self._call_fn(prep)
            except Exception as exc:
                handles.append((i, prep, (started, "done", None, exc)))
                continue
            if prep.plan.is_async:
                group.append((i, fn, args, kwargs, prep, started))
                continue
            work = _Work(fn, args, kwargs)
            if prep.ctx is not None:
                work.cancel_event = prep.ctx.cancel_event
            works.append(work)
            handles.append((i, prep, (started, "work", work, None)))
        try:
            self.pool.submit_many(works)
        except RuntimeError as exc:  # closed meanwhile
            return [(i, prep, (h[0], "done", None, ToolCallError(str(exc))))
                    for i, prep, h in handles]
        if group:
            out: dict[int, tuple[Any, BaseException | None]] = {}
            future = self.loop_thread.submit(self._async_group(group, out))
            for i, _, _, _, prep, started in group:
                handles.append((i, prep, (started, "group", (future, out, i), None)))
        return handles

    async def _async_group(self, group: list[tuple[int, Callable[..., Any], Any, dict[str, Any],
                                                   _Prepared, float]],
                           out: dict[int, tuple[Any, BaseException | None]]) -> None:
        async def one(i: int, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                      prep: _Prepared, started: float) -> None:
            try:
                if prep.plan.safe:
                    value = await self._async_body(fn, args, kwargs, prep)
                else:
                    value = await self._async_alone(fn, args, kwargs, prep, started)
            except (Exception, ToolCancelled) as exc:
                out[i] = (None, exc)
            else:
                out[i] = (value, None)

        await asyncio.gather(*(one(*entry) for entry in group))

    def _prepare_batch(self, calls: Iterable[Any], context: Mapping[str, Any] | None,
                       timeout: float | None, async_path: bool = False
                       ) -> list[_Prepared | ToolResult]:
        raw_calls = _as_list(calls)
        items: list[_Prepared | ToolResult] = []
        closed = self._closed or self._registry._closed
        for index, raw in enumerate(raw_calls):
            parsed = self._parse(raw, index)
            if isinstance(parsed, ToolResult):
                item: _Prepared | ToolResult = parsed
            elif closed:
                item = self._closed_result(parsed.id, parsed.name)
            else:
                item = self._prepare_one(parsed, context, timeout, async_path)
            if isinstance(item, ToolResult):
                _log_result(item)
            items.append(item)
        return items

    def _call_fn(self, prep: _Prepared) -> tuple[Callable[..., Any], Any, dict[str, Any]]:
        """The function to run for ``prep`` with its arguments, wrapped for exclusivity and
        retries when the tool asks for them."""
        plan = prep.plan
        fn = plan.fn
        if fn is None:
            raise ToolCallError(f"tool {plan.tool.name!r} has no callable", kind="execution")
        retry = self._registry.retry
        if retry is not None and plan.tool.metadata.is_idempotent:
            fn = _retrying(fn, retry, plan.tool.name, prep.timeout, plan.is_async)
        if not plan.safe and not plan.is_async:
            # Async tools take the lock in Executor._async_alone.
            fn = _exclusive(fn, self._exclusive_lock(plan.tool.name), prep.timeout)
        return fn, prep.args, prep.kwargs

    def _run_sync(self, prep: _Prepared) -> ToolResult:
        plan = prep.plan
        if not plan.is_async and (prep.timeout is None or (
                _watchdog.inline_available(ToolCancelled)
                and not getattr(_local, "in_pool", False))):
            return self._run_inline(prep)
        return self._collect(prep, self._start(prep))

    def _run_inline(self, prep: _Prepared) -> ToolResult:
        """Run a sync call on this thread: without a deadline there is nothing to wait for;
        with one, the watchdog interrupts the call on time (see ``_watchdog``)."""
        started = time.perf_counter()
        try:
            fn, args, kwargs = self._call_fn(prep)
        except Exception as exc:
            return self._finish(prep, None, exc, time.perf_counter() - started)
        entry = None
        if prep.timeout is not None:
            entry = _watchdog.arm(time.monotonic() + prep.timeout,
                                  prep.ctx.cancel_event if prep.ctx is not None else None)
        value: Any = None
        error: BaseException | None = None
        try:
            try:
                value = fn(*args, **kwargs)
            except (Exception, ToolCancelled) as exc:
                error = exc
            finally:
                if entry is not None:
                    # A signal may land between the call's end and here, or during disarm:
                    # disarm keeps trying and hands back what landed.
                    landed = _watchdog.disarm(entry)
                    if landed is not None:
                        error = landed
        except ToolCancelled as exc:  # landed inside the except clause above (raised once)
            error = exc
        if entry is not None and entry.fired:
            error, value = _deadline_error(), None
        elif isinstance(error, ToolCancelled) and _watchdog.outer_fired():
            raise error  # an enclosing call's deadline: let it reach that call
        return self._finish(prep, value, error, time.perf_counter() - started)

    def _start(self, prep: _Prepared) -> Any:
        """Start a call; returns a handle for :meth:`_collect`."""
        started = time.perf_counter()
        try:
            fn, args, kwargs = self._call_fn(prep)
        except Exception as exc:
            return (started, "done", None, exc)
        if prep.plan.is_async:
            coro = (self._async_body(fn, args, kwargs, prep) if prep.plan.safe
                    else self._async_alone(fn, args, kwargs, prep, started))
            loop = self.loop_thread
            if threading.get_ident() == loop.ident:
                # A tool on the private loop calling the sync API: a loop cannot wait on itself.
                work = _Work(asyncio.run, (coro,), {})
                self.pool.submit(work)
                return (started, "work", work, None)
            return (started, "future", loop.submit(coro), None)
        work = _Work(fn, args, kwargs)
        if prep.ctx is not None:
            work.cancel_event = prep.ctx.cancel_event
        try:
            # A tool calling the registry from a worker while every worker is busy runs its
            # call here rather than wait for a worker that may be waiting for it.
            queued = self.pool.submit(work, saturated_ok=not getattr(_local, "in_pool", False))
        except RuntimeError as exc:  # closed meanwhile
            return (started, "done", None, ToolCallError(str(exc)))
        if not queued:
            try:
                return (started, "done", fn(*args, **kwargs), None)
            except (Exception, ToolCancelled) as exc:
                return (started, "done", None, exc)
        return (started, "work", work, None)

    def _collect(self, prep: _Prepared, handle: Any) -> ToolResult:
        started, kind, obj, error = handle
        if kind == "done":
            return self._finish(prep, obj, error, time.perf_counter() - started)
        remaining = None
        if prep.timeout is not None:
            remaining = max(0.0, prep.timeout - (time.perf_counter() - started))
        if kind == "work":
            work: _Work = obj
            pool = self.pool
            acquired = False
            if pool.has_backlog:
                first = SPREAD_AFTER if remaining is None else min(remaining, SPREAD_AFTER)
                acquired = work.done.acquire(True, first)
                if not acquired:
                    pool.spread()  # calls still wait after a while: run them alongside
                    if remaining is not None:
                        remaining = max(0.0, prep.timeout - (time.perf_counter() - started))
            if not acquired:
                if remaining is None:
                    work.done.acquire()
                elif not work.done.acquire(True, remaining) and pool.interrupt(work):
                    return self._finish(prep, None, _deadline_error(),
                                        time.perf_counter() - started)
            if prep.timeout is not None and work.overran(started + prep.timeout):
                return self._finish(prep, None, _deadline_error(),
                                    time.perf_counter() - started)
            return self._finish(prep, work.result, work.error, time.perf_counter() - started)
        if kind == "group":
            group_future, out, key = obj
            if key not in out:
                try:
                    # The group enforces each deadline itself; the margin only guards against a
                    # loop blocked by a misbehaving tool.
                    group_future.result(None if remaining is None else remaining + 0.05)
                except cf.TimeoutError:
                    pass
                except BaseException:  # cancelled or broken: what is in ``out`` stands
                    pass
            outcome = out.get(key)
            if outcome is None:
                if prep.ctx is not None:
                    prep.ctx.cancel_event.set()
                return self._finish(prep, None, _deadline_error(),
                                    time.perf_counter() - started)
            return self._finish(prep, outcome[0], outcome[1], time.perf_counter() - started)
        future: cf.Future[Any] = obj
        try:
            value = future.result(remaining)
        except cf.TimeoutError:
            future.cancel()
            if prep.ctx is not None:
                prep.ctx.cancel_event.set()
            return self._finish(prep, None, _deadline_error(), time.perf_counter() - started)
        except BaseException as exc:
            return self._finish(prep, None, exc, time.perf_counter() - started)
        return self._finish(prep, value, None, time.perf_counter() - started)

    async def _async_body(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                          prep: _Prepared) -> Any:
        """Run an async tool with its deadline; returns on time even when the tool ignores
        cancellation (it is then left to finish in the background)."""
        if prep.timeout is None:
            return await fn(*args, **kwargs)
        task = asyncio.ensure_future(fn(*args, **kwargs))
        try:
            done, _ = await asyncio.wait((task,), timeout=prep.timeout)
        except asyncio.CancelledError:
            self._abandon(task, prep)
            raise
        if not done:
            self._abandon(task, prep)
            raise _deadline_error()
        return task.result()

    def _abandon(self, task: asyncio.Task[Any], prep: _Prepared) -> None:
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

    # -- async API ------------------------------------------------------------------------
    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
                      context: Mapping[str, Any] | None, timeout: float | None,
                      call_id: str | None) -> ToolResult:
        prep = self._prepare_invoke(name, arguments, context, timeout, call_id, True)
        return prep if isinstance(prep, ToolResult) else await self._run_async(prep)

    async def aexecute(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None,
                       timeout: float | None) -> list[ToolResult]:
        items = self._prepare_batch(calls, context, timeout, async_path=True)
        results: list[ToolResult | None] = [x if isinstance(x, ToolResult) else None
                                            for x in items]
        for segment in _segments(items):
            if len(segment) == 1:
                i, prep = segment[0]
                results[i] = await self._run_async(prep)
                continue
            done = await self._run_segment(segment)
            for (i, _), result in zip(segment, done):
                results[i] = result
        return [r for r in results if r is not None]

    async def _run_async(self, prep: _Prepared) -> ToolResult:
        started = time.perf_counter()
        try:
            fn, args, kwargs = self._call_fn(prep)
            if prep.plan.is_async:
                if not prep.plan.safe:
                    value = await self._async_alone(fn, args, kwargs, prep, started)
                else:
                    value = await self._async_body(fn, args, kwargs, prep)
            else:
                value = await self._sync_on_pool(fn, args, kwargs, prep)
        except asyncio.CancelledError:
            raise
        except (Exception, ToolCancelled) as exc:
            return self._finish(prep, None, exc, time.perf_counter() - started)
        return self._finish(prep, value, None, time.perf_counter() - started)

    async def _async_alone(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                           prep: _Prepared, started: float) -> Any:
        # The per-tool lock is a thread lock (shared with the sync API): poll for it rather
        # than block the loop, and never leave it taken when cancelled.
        lock = self._exclusive_lock(prep.plan.tool.name)
        while not lock.acquire(False):
            if prep.timeout is not None and time.perf_counter() - started > prep.timeout:
                raise _deadline_error()
            await asyncio.sleep(0.002)
        try:
            return await self._async_body(fn, args, kwargs, prep)
        finally:
            lock.release()

    def _pool_work(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                   prep: _Prepared, loop: asyncio.AbstractEventLoop
                   ) -> tuple[_Work, asyncio.Future[Any]]:
        """A pool call whose outcome lands in a future of ``loop``."""
        fut: asyncio.Future[Any] = loop.create_future()
        work = _Work(fn, args, kwargs)
        if prep.ctx is not None:
            work.cancel_event = prep.ctx.cancel_event

        def settle(w: _Work) -> None:
            loop.call_soon_threadsafe(_settle, fut, w)

        work.callback = settle
        return work, fut

    async def _await_work(self, work: _Work, fut: asyncio.Future[Any], prep: _Prepared,
                          started: float) -> Any:
        deadline = None if prep.timeout is None else started + prep.timeout
        expiry = None
        if deadline is not None:
            expiry = asyncio.get_running_loop().call_later(
                max(0.0, deadline - time.perf_counter()), _expire, fut)
        try:
            value = await fut
        except asyncio.CancelledError:
            self.pool.interrupt(work)
            raise
        except BaseException as exc:
            if getattr(exc, "_toolregistry_deadline", False):
                if self.pool.interrupt(work):
                    raise
                work.done.acquire()  # it finished right at the deadline
                if work.overran(deadline):
                    raise
                if work.error is not None:
                    raise work.error from None
                return work.result
            if work.overran(deadline):
                raise _deadline_error() from None
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
        if work.overran(deadline):  # the loop was too busy to look in time
            raise _deadline_error()
        return value

    async def _sync_on_pool(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                            prep: _Prepared) -> Any:
        work, fut = self._pool_work(fn, args, kwargs, prep, asyncio.get_running_loop())
        started = time.perf_counter()
        self.pool.submit(work)
        return await self._await_work(work, fut, prep, started)

    async def _collect_work(self, prep: _Prepared, work: _Work, fut: asyncio.Future[Any],
                            started: float) -> ToolResult:
        try:
            value = await self._await_work(work, fut, prep, started)
        except (Exception, ToolCancelled) as exc:
            return self._finish(prep, None, exc, time.perf_counter() - started)
        return self._finish(prep, value, None, time.perf_counter() - started)

    async def _finished(self, prep: _Prepared, error: BaseException, started: float
                        ) -> ToolResult:
        return self._finish(prep, None, error, time.perf_counter() - started)

    async def _run_segment(self, segment: list[tuple[int, _Prepared]]) -> list[ToolResult]:
        """A concurrent segment on the async API: sync calls go to the pool in one hand-off."""
        if getattr(_local, "in_pool", False):
            return list(await asyncio.gather(*(self._run_async(p) for _, p in segment)))
        loop = asyncio.get_running_loop()
        coros: list[Any] = []
        works: list[tuple[_Work, asyncio.Future[Any]]] = []
        for _, prep in segment:
            if prep.plan.is_async:
                coros.append(self._run_async(prep))
                continue
            started = time.perf_counter()
            try:
                fn, args, kwargs = self._call_fn(prep)
            except Exception as exc:
                coros.append(self._finished(prep, exc, started))
                continue
            work, fut = self._pool_work(fn, args, kwargs, prep, loop)
            works.append((work, fut))
            coros.append(self._collect_work(prep, work, fut, started))
        try:
            self.pool.submit_many([w for w, _ in works])
        except RuntimeError as exc:  # closed meanwhile
            for _, fut in works:
                fut.set_exception(ToolCallError(str(exc)))
        if len(works) > 1:
            loop.call_later(SPREAD_AFTER, self._spread_waiting)
        return list(await asyncio.gather(*coros))

    def _spread_waiting(self) -> None:
        pool = self._pool
        if pool is not None and pool.has_backlog:
            try:
                pool.spread()
            except Exception as exc:  # no thread to be had: the busy ones drain the backlog
                log.debug("pool.spread_failed", error=str(exc))


# --- helpers ---------------------------------------------------------------------------------

_executors: weakref.WeakSet[Executor] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A forked child has none of the parent's threads: start its pool and loop afresh.
    for executor in list(_executors):
        executor._pool = None
        executor._loop = None
        executor._lock = threading.Lock()
        executor._exclusive = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _alias(name: str) -> str | None:
    """Another spelling of a tool name a model may use: ``functions.x``, unnormalised."""
    if not isinstance(name, str) or not name:
        return None
    base = name.removeprefix("functions.")
    try:
        alias = normalize_name(base)
    except Exception:
        return None
    return alias if alias != name else None


def _as_list(calls: Iterable[Any]) -> list[Any]:
    if isinstance(calls, (str, bytes, bytearray)):
        raise TypeError("execute_tool_calls needs a list of tool calls, got a "
                        f"{type(calls).__name__}: parse the model's response first")
    if isinstance(calls, (Mapping, ToolCall)) or (
            not isinstance(calls, (list, tuple)) and hasattr(calls, "model_dump")):
        return [calls]  # one call on its own (pydantic SDK objects iterate over their fields)
    try:
        return list(calls)
    except TypeError:
        return [calls]  # a single call object


def _deadline_key(item: tuple[int, _Prepared, Any]) -> float:
    timeout = item[1].timeout
    return float(item[2][0]) + (timeout if timeout is not None else 1e12)


def _settle(fut: asyncio.Future[Any], work: _Work) -> None:
    if fut.done():
        return
    if work.error is not None:
        fut.set_exception(work.error)
    else:
        fut.set_result(work.result)


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(_deadline_error())


def _deadline_error() -> TimeoutError:
    exc = TimeoutError()
    exc._toolregistry_deadline = True  # type: ignore[attr-defined]
    return exc


def _run_awaitable(value: Any) -> tuple[Any, BaseException | None]:
    """A sync callable that returned an awaitable: run it to completion on a fresh loop (in a
    helper thread when this thread already runs one)."""
    out: list[Any] = [None, None]

    async def wait() -> Any:
        return await value

    def run() -> None:
        try:
            out[0] = asyncio.run(wait())
        except (Exception, ToolCancelled) as exc:
            out[1] = exc

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        run()
    else:
        helper = threading.Thread(target=run, name="toolregistry-await", daemon=True)
        helper.start()
        helper.join()
    return out[0], out[1]


def _retrying(fn: Callable[..., Any], retry: RetryPolicy, name: str, timeout: float | None,
              is_async: bool) -> Callable[..., Any]:
    deadline = None if timeout is None else time.monotonic() + timeout

    def next_delay(exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or ``None``: give up (re-raise)."""
        delay = retry.delay(attempt)
        if not retry.should_retry(exc, attempt) or (
            deadline is not None and time.monotonic() + delay >= deadline
        ):
            return None
        log.info("call.retried", tool=name, attempt=attempt,
                 error=f"{type(exc).__name__}: {exc}")
        return delay

    if is_async:
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            attempt = 1
            while True:
                try:
                    return await fn(*args, **kwargs)
                except Exception as exc:
                    delay = next_delay(exc, attempt)
                    if delay is None:
                        raise
                await asyncio.sleep(delay)
                attempt += 1

        return run_async

    def run(*args: Any, **kwargs: Any) -> Any:
        attempt = 1
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                delay = next_delay(exc, attempt)
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1

    return run


def _exclusive(fn: Callable[..., Any], lock: threading.Lock, timeout: float | None
               ) -> Callable[..., Any]:
    def run_alone(*args: Any, **kwargs: Any) -> Any:
        if not lock.acquire(True, -1 if timeout is None else timeout):
            raise _deadline_error()
        try:
            return fn(*args, **kwargs)
        finally:
            lock.release()

    return run_alone


def _segments(items: list[_Prepared | ToolResult]) -> list[list[tuple[int, _Prepared]]]:
    """Consecutive concurrency-safe calls form one concurrent segment; an unsafe call runs
    alone, in order."""
    segments: list[list[tuple[int, _Prepared]]] = []
    current: list[tuple[int, _Prepared]] = []
    for i, item in enumerate(items):
        if isinstance(item, ToolResult):
            continue
        if item.plan.safe:
            current.append((i, item))
            continue
        if current:
            segments.append(current)
            current = []
        segments.append([(i, item)])
    if current:
        segments.append(current)
    return segments


# --- validation errors and safe coercion ------------------------------------------------------

_CONTAINER_ERRORS = frozenset({
    "dict_type", "model_type", "model_attributes_type", "dataclass_type",
    "dataclass_exact_type", "list_type", "tuple_type", "set_type", "frozen_set_type",
    "typed_dict_type", "iterable_type", "mapping_type",
})


def _coerce(tool: Tool, arguments: Mapping[str, Any], exc: Exception) -> dict[str, Any] | None:
    """Arguments with safe coercions applied after a validation failure, or ``None`` when
    none applies (see docs/execution.md, "Coercion")."""
    changed = False
    out = dict(arguments)
    errors = getattr(exc, "errors", None)
    if callable(errors) and tool.signature is not None:  # pydantic: a Python tool
        try:
            items = errors(include_url=False)
        except Exception:
            return None
        for err in items:
            loc = err.get("loc", ())
            if len(loc) != 1 or err.get("type") not in _CONTAINER_ERRORS:
                continue
            key = loc[0]
            value = out.get(key)
            decoded = _json_container(value)
            if decoded is not None:
                out[key] = decoded
                changed = True
        return out if changed else None
    props = tool.parameters.get("properties")
    if not isinstance(props, dict):
        return None
    for key, value in arguments.items():
        if not isinstance(value, str):
            continue
        schema = props.get(key)
        if not isinstance(schema, dict):
            continue
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or "string" in kinds:
            continue
        new = _from_string(value, kinds)
        if new is not _NO:
            out[key] = new
            changed = True
    return out if changed else None


_NO = object()


def _json_container(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, (dict, list)) else None


def _from_string(value: str, kinds: list[Any]) -> Any:
    text = value.strip()
    if "integer" in kinds:
        body = text[1:] if text[:1] in "+-" else text
        if body.isdigit() and body.isascii():
            return int(text)
    if "number" in kinds:
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            return int(number) if number.is_integer() and "." not in text and "e" not in \
                text.lower() else number
    if "boolean" in kinds and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "object" in kinds or "array" in kinds:
        decoded = _json_container(text)
        if isinstance(decoded, dict) and "object" in kinds:
            return decoded
        if isinstance(decoded, list) and "array" in kinds:
            return decoded
    if "null" in kinds and text == "null":
        return None
    return _NO


def _validation_message(name: str, exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic
        parts = []
        try:
            items = errors(include_url=False)
        except TypeError:
            items = errors()
        for err in items[:10]:
            loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
            msg = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden":
                msg = "unexpected argument (not in the tool's schema)"
            elif err.get("type") == "missing":
                msg = "required argument missing"
            got = err.get("input")
            shown = "" if err.get("type") == "missing" else f" (got {short_repr(got)})"
            parts.append(f"{loc}: {msg}{shown}")
        if len(items) > 10:
            parts.append(f"... and {len(items) - 10} more")
        detail = "; ".join(parts)
    else:
        detail = str(exc)
    return (f"invalid arguments for tool {name!r}: {detail}. Fix these arguments to match the "
            "tool's parameters and call it again.")

