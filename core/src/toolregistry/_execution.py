"""Running tool calls: parse, hooks, validate, execute (concurrently where safe), encode.

Sync tools run on a thread pool, async tools on an event loop (the caller's for the async
API, a private background loop for the sync API), so both APIs work from plain code and from
inside a running loop. Every call has a deadline; a sync tool that overruns it gets a
``ToolCancelled`` exception raised inside its thread (best effort: it lands at the next Python
instruction, so a blocking C call finishes first) and its ``ToolContext.cancel_event`` set.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures as cf
import ctypes
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from ._calls import CallParseError, parse_call
from ._log import log
from ._results import error_result, make_result
from .errors import ToolCallError
from .types import ToolCall, ToolContext, ToolResult

if TYPE_CHECKING:
    from ._registry import ToolRegistry
    from .tool import Tool

__all__ = ["Executor", "RetryPolicy", "ToolCancelled"]


class ToolCancelled(BaseException):  # noqa: N818 - a BaseException like KeyboardInterrupt
    """Raised inside a sync tool's thread when its call timed out or was cancelled.

    A ``BaseException`` so that ``except Exception`` in tool code does not swallow it.
    """


@frozen
class RetryPolicy:
    """Retries for transient failures of idempotent tools (never applied by default).

    ``attempts`` counts the first try. Only exceptions of ``retry_on`` types are retried,
    with exponential backoff and jitter, within the call's deadline.
    """

    attempts: int = 3
    backoff: float = 0.2
    max_backoff: float = 5.0
    retry_on: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError)

    def delay(self, attempt: int) -> float:
        base: float = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        return attempt < self.attempts and isinstance(exc, self.retry_on)


_local = threading.local()


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                               ctypes.py_object(exc) if exc else None)


class _Running:
    """Tracks one sync tool run so a timeout can interrupt exactly that run."""

    __slots__ = ("cancel_event", "done", "ident", "interrupted", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ident: int | None = None
        self.done = False
        self.interrupted = False
        self.cancel_event = threading.Event()

    def run(self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        with self.lock:
            if self.interrupted:
                raise ToolCancelled("cancelled before it started")
            self.ident = threading.get_ident()
        try:
            return fn(*args, **kwargs)
        finally:
            with self.lock:
                self.done = True
                if self.interrupted and self.ident is not None:
                    _set_async_exc(self.ident, None)  # drop one still pending

    def interrupt(self) -> None:
        self.cancel_event.set()
        with self.lock:
            if self.interrupted or self.done:
                return
            self.interrupted = True
            if self.ident is not None:
                _set_async_exc(self.ident, ToolCancelled)


class _Work:
    """One unit of work for :class:`_WorkerPool`: a raw lock released when it is done."""

    __slots__ = ("_callback", "_done", "args", "cancelled", "error", "fn", "result", "started")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.result: Any = None
        self.error: BaseException | None = None
        self.cancelled = False
        self.started = False
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._callback: Callable[[_Work], None] | None = None

    def wait(self, timeout: float | None) -> bool:
        """True when the work finished within ``timeout`` seconds."""
        if self._done.acquire(True, -1 if timeout is None else timeout):
            self._done.release()
            return True
        return False

    def cancel(self) -> bool:
        """Prevent the work from starting; False when it already started."""
        self.cancelled = True
        return not self.started

    def on_done(self, callback: Callable[[_Work], None]) -> None:
        self._callback = callback
        if not self._done.locked():
            callback(self)

    def run(self) -> None:
        if self.cancelled:
            self.error = ToolCancelled("cancelled before it started")
        else:
            self.started = True
            try:
                self.result = self.fn(*self.args)
            except BaseException as exc:
                self.error = exc
        self._done.release()
        callback = self._callback
        if callback is not None:
            callback(self)


class _WorkerPool:
    """A small thread pool with a cheap hand-off (a queue and a raw lock per call).

    ``concurrent.futures.ThreadPoolExecutor`` costs about twice as much per call, which is
    most of the overhead of invoking a trivial tool. Threads are started on demand up to
    ``max_workers`` and leave after ``idle_timeout`` seconds without work.
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0) -> None:
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._max = max_workers
        self._idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> _Work:
        if self._shutdown:
            raise RuntimeError("the registry is closed")
        work = _Work(fn, args)
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                t = threading.Thread(target=self._worker, name="toolregistry-worker",
                                     daemon=True)
                self._threads.add(t)
                t.start()
            else:
                self._idle -= 1  # this item will take an idle worker
        self._queue.put(work)
        return work

    def _worker(self) -> None:
        me = threading.current_thread()
        _local.in_pool = True
        try:
            while True:
                try:
                    work = self._queue.get(timeout=self._idle_timeout)
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:
                            self._idle -= 1
                            return
                    continue
                if work is None:
                    return
                work.run()
                with self._lock:
                    self._idle += 1
        finally:
            with self._lock:
                self._threads.discard(me)

    @property
    def thread_count(self) -> int:
        return len(self._threads)

    def shutdown(self) -> None:
        self._shutdown = True
        with self._lock:
            count = len(self._threads)
        for _ in range(count):
            self._queue.put(None)


class _LoopThread:
    """A private event loop on a daemon thread, for async tools called from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="toolregistry-loop", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any) -> cf.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


class _Prepared:
    """A call that passed parsing, hooks and validation, ready to run."""

    __slots__ = ("args", "call", "kwargs", "timeout", "tool")

    def __init__(self, tool: Tool, call: ToolCall, args: list[Any], kwargs: dict[str, Any],
                 timeout: float | None) -> None:
        self.tool = tool
        self.call = call
        self.args = args
        self.kwargs = kwargs
        self.timeout = timeout


class Executor:
    """Executes calls for one registry (see the module docstring)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._hooks = registry._hooks
        self._lock = threading.Lock()
        self._pool: _WorkerPool | None = None
        self._loop: _LoopThread | None = None
        self._exclusive: dict[str, threading.Lock] = {}
        self._closed = False

    # -- resources ------------------------------------------------------------------------
    @property
    def pool(self) -> _WorkerPool:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    workers = self._registry.max_workers or max(32, (os.cpu_count() or 1) + 4)
                    self._pool = _WorkerPool(workers)
        return self._pool

    @property
    def loop_thread(self) -> _LoopThread:
        if self._loop is None:
            with self._lock:
                if self._loop is None:
                    self._loop = _LoopThread()
        return self._loop

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
    def _timeout_for(self, tool: Tool, override: float | None) -> float | None:
        if override is not None:
            return override if override > 0 else None
        if tool.metadata.timeout is not None:
            return tool.metadata.timeout
        return self._registry.default_timeout

    def _prepare(self, call: ToolCall, context: Mapping[str, Any] | None,
                 timeout: float | None) -> _Prepared | ToolResult:
        registry = self._registry
        name = call.name
        tool = registry.get_tool(name)
        if tool is None:
            close = registry.suggest_names(name, 3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return error_result(call.id, name, "unknown_tool",
                                f"there is no tool named {name!r}.{hint}")
        if not registry.is_enabled(name):
            why = registry.disabled_reason(name)
            return error_result(call.id, name, "disabled",
                                f"tool {name!r} is disabled" + (f": {why}" if why else ""))
        try:
            self._hooks.pre_invoke(registry, tool, call)
        except Exception as exc:
            log.warning("hook.failed", hook="pre_invoke", tool=name, error=str(exc))
            return error_result(call.id, name, "hook", f"{type(exc).__name__}: {exc}",
                                reason=call.reason)
        arguments = call.arguments if call.arguments is not None else {}
        validator = tool.validator
        try:
            values = validator.validate(arguments)
        except Exception as exc:
            return error_result(call.id, name, "invalid_arguments",
                                _validation_message(name, exc), reason=call.reason)
        injected: dict[str, Any] = {}
        needs = validator.injected_params()
        if needs:
            ctx = ToolContext(registry=registry, call=call, values=context or {})
            for pname, key, has_default in needs:
                if key is None:
                    injected[pname] = ctx
                elif context is not None and key in context:
                    injected[pname] = context[key]
                elif not has_default:
                    return error_result(
                        call.id, name, "execution",
                        f"tool {name!r} needs the application context value {key!r}, which "
                        "was not passed (context={...} on invoke / execute_tool_calls)",
                        reason=call.reason)
        args, kwargs = validator.bind(values, injected)
        return _Prepared(tool, call, args, kwargs, self._timeout_for(tool, timeout))

    def _parse(self, raw: Any, index: int) -> ToolCall | ToolResult:
        try:
            call = parse_call(raw, index)
        except CallParseError as exc:
            return error_result(exc.call.id, exc.call.name, exc.kind, str(exc))
        if call.id is None and call.format in ("registry", "gemini"):
            call.extra.setdefault("generated_id", True)
        return call

    # -- finishing ------------------------------------------------------------------------
    def _finish(self, prep: _Prepared, outcome: Any, error: BaseException | None,
                started: float) -> ToolResult:
        call, tool = prep.call, prep.tool
        duration = time.perf_counter() - started
        if error is None:
            try:
                result = make_result(call.id, tool.name, outcome, reason=call.reason,
                                     duration=duration)
            except Exception as exc:
                result = error_result(call.id, tool.name, "execution",
                                      f"the result of {tool.name!r} could not be encoded: {exc}",
                                      reason=call.reason, duration=duration)
        else:
            result = self._error_for(prep, error, duration)
        try:
            result = self._hooks.post_invoke(self._registry, tool, call, result)
        except Exception as exc:
            log.warning("hook.failed", hook="post_invoke", tool=tool.name, error=str(exc))
            result = error_result(call.id, tool.name, "hook", f"{type(exc).__name__}: {exc}",
                                  reason=call.reason, duration=duration)
        if result.is_error:
            log.info("call.failed", tool=tool.name, call_id=call.id, kind=result.error_kind,
                     duration=round(duration, 6), error=result.text[:500])
        elif log.is_debug():
            log.debug("call.finished", tool=tool.name, call_id=call.id,
                      duration=round(duration, 6), arguments=call.arguments)
        return result

    def _error_for(self, prep: _Prepared, exc: BaseException, duration: float) -> ToolResult:
        call, name = prep.call, prep.tool.name
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ToolCancelled)) and (
            isinstance(exc, ToolCancelled) or getattr(exc, "_toolregistry_deadline", False)
        ):
            return error_result(call.id, name, "timeout",
                                f"tool {name!r} did not finish within {prep.timeout:g} s "
                                "and was cancelled", reason=call.reason, duration=duration)
        if isinstance(exc, asyncio.CancelledError):
            return error_result(call.id, name, "cancelled", f"tool {name!r} was cancelled",
                                reason=call.reason, duration=duration)
        if isinstance(exc, ToolCallError):
            return error_result(call.id, name, exc.kind, str(exc), reason=call.reason,
                                duration=duration)
        return error_result(call.id, name, "execution", f"{type(exc).__name__}: {exc}",
                            reason=call.reason, duration=duration)

    # -- sync API -------------------------------------------------------------------------
    def invoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
               context: Mapping[str, Any] | None, timeout: float | None,
               call_id: str | None) -> ToolResult:
        call = self._parse(ToolCall(name=name, id=call_id, raw_arguments=arguments), 0)
        if isinstance(call, ToolResult):
            return call
        prep = self._prepare(call, context, timeout)
        if isinstance(prep, ToolResult):
            return prep
        return self._run_sync(prep)

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
            started = time.perf_counter()
            pending = [(i, prep, self._start_sync(prep, started)) for i, prep in segment]
            for i, prep, handle in pending:
                results[i] = self._collect_sync(prep, handle, started)
        return [r for r in results if r is not None]

    def _prepare_batch(self, calls: Iterable[Any], context: Mapping[str, Any] | None,
                       timeout: float | None) -> list[_Prepared | ToolResult]:
        try:
            raw_calls = list(calls)
        except TypeError as exc:
            raise TypeError(f"execute_tool_calls needs an iterable of tool calls: {exc}"
                            ) from None
        items: list[_Prepared | ToolResult] = []
        for index, raw in enumerate(raw_calls):
            parsed = self._parse(raw, index)
            if isinstance(parsed, ToolResult):
                items.append(parsed)
                continue
            try:
                items.append(self._prepare(parsed, context, timeout))
            except Exception as exc:  # defensive: bad input never escapes the batch API
                items.append(error_result(parsed.id, parsed.name, "execution",
                                          f"{type(exc).__name__}: {exc}"))
        return items

    def _run_sync(self, prep: _Prepared) -> ToolResult:
        started = time.perf_counter()
        return self._collect_sync(prep, self._start_sync(prep, started), started)

    def _start_sync(self, prep: _Prepared, started: float) -> Any:
        """Start a call; returns a handle for :meth:`_collect_sync`."""
        tool = prep.tool
        fn = tool.callable
        if fn is None:
            return ToolCallError(f"tool {tool.name!r} has no callable", kind="execution")
        if not tool.metadata.is_concurrency_safe:
            fn = _exclusive(fn, self._exclusive_lock(tool.name), bool(tool.is_async))
        retry = self._registry.retry if tool.metadata.is_idempotent else None
        if tool.is_async:
            deadline = prep.timeout
            coro = self._run_async_tool(fn, prep, retry, deadline)
            return ("async", self.loop_thread.submit(coro))
        running = _Running()
        if getattr(_local, "in_pool", False):
            # A tool calling the registry from a worker thread: run inline, no pool hop.
            try:
                return ("done", self._call_with_retry(fn, prep, retry, running), None)
            except BaseException as exc:
                return ("done", None, exc)
        future = self.pool.submit(self._call_with_retry, fn, prep, retry, running)
        return ("sync", future, running)

    def _call_with_retry(self, fn: Callable[..., Any], prep: _Prepared,
                         retry: RetryPolicy | None, running: _Running) -> Any:
        attempt = 1
        while True:
            try:
                return running.run(fn, prep.args, prep.kwargs)
            except Exception as exc:
                if retry is None or not retry.should_retry(exc, attempt):
                    raise
                log.info("call.retried", tool=prep.tool.name, attempt=attempt, error=str(exc))
                time.sleep(retry.delay(attempt))
                attempt += 1
                running = _Running()

    async def _run_async_tool(self, fn: Callable[..., Any], prep: _Prepared,
                              retry: RetryPolicy | None, deadline: float | None) -> Any:
        async def attempt_loop() -> Any:
            attempt = 1
            while True:
                try:
                    return await fn(*prep.args, **prep.kwargs)
                except Exception as exc:
                    if retry is None or not retry.should_retry(exc, attempt):
                        raise
                    log.info("call.retried", tool=prep.tool.name, attempt=attempt,
                             error=str(exc))
                    await asyncio.sleep(retry.delay(attempt))
                    attempt += 1

        if deadline is None:
            return await attempt_loop()
        try:
            return await asyncio.wait_for(attempt_loop(), deadline)
        except TimeoutError as exc:
            exc._toolregistry_deadline = True  # type: ignore[attr-defined]
            raise

    def _collect_sync(self, prep: _Prepared, handle: Any, started: float) -> ToolResult:
        if isinstance(handle, BaseException):
            return self._finish(prep, None, handle, started)
        kind = handle[0]
        if kind == "done":
            return self._finish(prep, handle[1], handle[2], started)
        remaining = None
        if prep.timeout is not None:
            remaining = max(0.0, prep.timeout - (time.perf_counter() - started))
        if kind == "sync":
            work: _Work = handle[1]
            if not work.wait(remaining):
                work.cancel()
                handle[2].interrupt()
                return self._finish(prep, None, _deadline_error(), started)
            if work.error is not None:
                return self._finish(prep, None, work.error, started)
            return self._finish(prep, work.result, None, started)
        future: cf.Future[Any] = handle[1]
        try:
            value = future.result(remaining)
        except cf.TimeoutError:
            future.cancel()
            return self._finish(prep, None, _deadline_error(), started)
        except cf.CancelledError as exc:
            return self._finish(prep, None, asyncio.CancelledError(str(exc)), started)
        except BaseException as exc:
            return self._finish(prep, None, exc, started)
        return self._finish(prep, value, None, started)

    # -- async API ------------------------------------------------------------------------
    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | str | None, *,
                      context: Mapping[str, Any] | None, timeout: float | None,
                      call_id: str | None) -> ToolResult:
        call = self._parse(ToolCall(name=name, id=call_id, raw_arguments=arguments), 0)
        if isinstance(call, ToolResult):
            return call
        prep = self._prepare(call, context, timeout)
        if isinstance(prep, ToolResult):
            return prep
        return await self._run_async(prep)

    async def aexecute(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None,
                       timeout: float | None) -> list[ToolResult]:
        items = self._prepare_batch(calls, context, timeout)
        results: list[ToolResult | None] = [x if isinstance(x, ToolResult) else None
                                            for x in items]
        for segment in _segments(items):
            done = await asyncio.gather(*(self._run_async(prep) for _, prep in segment))
            for (i, _), result in zip(segment, done):
                results[i] = result
        return [r for r in results if r is not None]

    async def _run_async(self, prep: _Prepared) -> ToolResult:
        started = time.perf_counter()
        tool = prep.tool
        fn = tool.callable
        if fn is None:
            return self._finish(prep, None, ToolCallError(f"tool {tool.name!r} has no callable"),
                                started)
        retry = self._registry.retry if tool.metadata.is_idempotent else None
        unsafe = not tool.metadata.is_concurrency_safe
        try:
            if tool.is_async:
                if unsafe:
                    lock = self._exclusive_lock(tool.name)
                    await asyncio.to_thread(lock.acquire)
                    try:
                        value = await self._run_async_tool(fn, prep, retry, prep.timeout)
                    finally:
                        lock.release()
                else:
                    value = await self._run_async_tool(fn, prep, retry, prep.timeout)
            else:
                if unsafe:
                    fn = _exclusive(fn, self._exclusive_lock(tool.name), False)
                running = _Running()
                loop = asyncio.get_running_loop()
                wrapped: asyncio.Future[Any] = loop.create_future()

                def settle(work: _Work) -> None:
                    loop.call_soon_threadsafe(_settle, wrapped, work)

                work = self.pool.submit(self._call_with_retry, fn, prep, retry, running)
                work.on_done(settle)
                try:
                    if prep.timeout is None:
                        value = await wrapped
                    else:
                        value = await asyncio.wait_for(wrapped, prep.timeout)
                except TimeoutError as exc:
                    work.cancel()
                    running.interrupt()
                    exc._toolregistry_deadline = True  # type: ignore[attr-defined]
                    raise
                except asyncio.CancelledError:
                    work.cancel()
                    running.interrupt()
                    raise
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            return self._finish(prep, None, exc, started)
        return self._finish(prep, value, None, started)


def _settle(fut: asyncio.Future[Any], work: _Work) -> None:
    if fut.done():
        return
    if work.error is not None:
        fut.set_exception(work.error)
    else:
        fut.set_result(work.result)


def _deadline_error() -> TimeoutError:
    exc = TimeoutError()
    exc._toolregistry_deadline = True  # type: ignore[attr-defined]
    return exc


def _exclusive(fn: Callable[..., Any], lock: threading.Lock, is_async: bool
               ) -> Callable[..., Any]:
    if is_async:
        async def run_alone_async(*args: Any, **kwargs: Any) -> Any:
            await asyncio.to_thread(lock.acquire)
            try:
                return await fn(*args, **kwargs)
            finally:
                lock.release()

        return run_alone_async

    def run_alone(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return fn(*args, **kwargs)

    return run_alone


def _segments(items: list[_Prepared | ToolResult]) -> list[list[tuple[int, _Prepared]]]:
    """Consecutive concurrency-safe calls form one concurrent segment; an unsafe call runs
    alone, in order."""
    segments: list[list[tuple[int, _Prepared]]] = []
    current: list[tuple[int, _Prepared]] = []
    for i, item in enumerate(items):
        if isinstance(item, ToolResult):
            continue
        if item.tool.metadata.is_concurrency_safe:
            current.append((i, item))
            continue
        if current:
            segments.append(current)
            current = []
        segments.append([(i, item)])
    if current:
        segments.append(current)
    return segments


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
            shown = "" if err.get("type") == "missing" else f" (got {_short(got)})"
            parts.append(f"{loc}: {msg}{shown}")
        return f"invalid arguments for tool {name!r}: " + "; ".join(parts)
    return f"invalid arguments for tool {name!r}: {exc}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

