"""Where MCP sessions live, and how callers reach them.

anyio requires a session's transport and task group to be entered and left by the same task,
so a session lives in one event loop for its whole life. By default that is one background
loop on its own daemon thread, owned by the plugin; a client made with
``session_loop="running"`` keeps its session on the application's own loop instead. Callers
from any thread or loop (or none) reach a session's loop through :func:`run` / :func:`arun`.

The background loop runs only while it has users: open clients (:func:`hold` /
:func:`release`) and work submitted to it. When the last one is done the loop is stopped and
its thread ends; the next use starts a new one.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from toolregistry.plugin import calling_loop

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_users = 0  # open clients + work in flight on the background loop
_on_loop_thread = threading.local()
_shutdown_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []

THREAD_NAME = "toolregistry-mcp"


def get_loop() -> asyncio.AbstractEventLoop:
    """The background loop, started on first use (and again after it stopped for want of
    users)."""
    global _loop, _thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            new = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(target=_main, args=(new, ready), name=THREAD_NAME,
                                      daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = new, thread
        return _loop


def _main(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    _on_loop_thread.flag = True
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    try:
        loop.run_forever()
        # Stopped with no users left: finish what the last iteration scheduled (the done
        # callbacks that hand results to waiting threads), then close.
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def hold() -> None:
    """One more user of the background loop (an open client, or work submitted to it)."""
    global _users
    with _lock:
        _users += 1


def release(*_: Any) -> None:
    """One user fewer; the last one stops the background loop (its thread then ends)."""
    global _users, _loop, _thread
    with _lock:
        _users -= 1
        if _users > 0 or _loop is None:
            return
        loop, _loop, _thread = _loop, None, None
    if not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)


def in_loop_thread() -> bool:
    """True when running on a background loop's own thread."""
    return getattr(_on_loop_thread, "flag", False)


def submit(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop | None = None
           ) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on ``loop`` (default: the background loop, kept running until it is
    done); cancelling the future cancels the task."""
    if loop is not None:
        return asyncio.run_coroutine_threadsafe(coro, loop)
    hold()
    try:
        future = asyncio.run_coroutine_threadsafe(coro, get_loop())
    except BaseException:
        release()
        raise
    future.add_done_callback(release)
    return future


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopUnavailable(RuntimeError):
    """The event loop that holds a session cannot take this call (see the message)."""


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None,
        loop: asyncio.AbstractEventLoop | None = None, *, start_within: float | None = None
        ) -> T:
    """Run ``coro`` on ``loop`` (default: the background loop) and block until it is done.

    Any thread may call this except the target loop's own (a loop cannot wait for itself); a
    running event loop in the caller's thread is fine, it just waits. ``start_within`` bounds
    how long the target loop may take to *start* the work: a loop whose thread is blocked
    never does, and the caller gets :class:`LoopUnavailable` instead of waiting forever.
    """
    if loop is None:
        if in_loop_thread():
            coro.close()
            raise LoopUnavailable(
                "a blocking MCP call was made from the MCP background loop itself; use the "
                "async API")
        target = None  # submit() keeps the background loop running for this work
    else:
        target = loop
        problem = None
        if running_loop() is target or calling_loop() is target:
            problem = ("a blocking MCP call was made on the thread of the event loop that holds "
                       "the session (session_loop='running'); it would wait for itself: await "
                       "the async API (ainvoke, aexecute_tool_calls) there instead")
        elif target.is_closed() or not target.is_running():
            problem = ("the event loop that holds the MCP session (session_loop='running') is "
                       "not running")
        if problem is not None:
            coro.close()
            raise LoopUnavailable(problem)
    if start_within is None or (timeout is not None and start_within >= timeout):
        start_within = None
        future = submit(coro, target)
    else:
        started = threading.Event()

        async def tracked() -> T:
            started.set()
            return await coro

        future = submit(tracked(), target)
    try:
        if start_within is not None:
            # Most calls finish within this first wait: no extra wake-up to see the start.
            try:
                return future.result(start_within)
            except TimeoutError:
                if future.done():  # the work itself raised TimeoutError
                    raise
            if not started.is_set():
                future.cancel()
                raise LoopUnavailable(
                    f"the event loop that holds the MCP session did not take the call within "
                    f"{start_within:g}s (is its thread blocked?)")
        remaining = None if timeout is None else timeout - (start_within or 0.0)
        try:
            return future.result(remaining)
        except TimeoutError:
            if future.done():
                raise
            future.cancel()
            raise TimeoutError(f"MCP operation did not finish within {timeout}s") from None
    except BaseException:
        future.cancel()  # KeyboardInterrupt while waiting: stop the work on the loop too
        raise


async def arun(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop | None = None
               ) -> T:
    """Await ``coro`` running on ``loop`` (default: the background loop) from any event loop:
    directly when that is the caller's own loop, else handed over. Cancelling the awaiting
    task cancels it there too (so the SDK sends MCP cancellation)."""
    target = loop if loop is not None else _loop
    if target is not None and running_loop() is target:
        return await coro
    if loop is not None and (loop.is_closed() or not loop.is_running()):
        coro.close()
        raise LoopUnavailable("the event loop that holds the MCP session "
                              "(session_loop='running') is not running")
    return await asyncio.wrap_future(submit(coro, loop))


def on_shutdown(hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Register a coroutine function run on the loop at interpreter exit (before it stops)."""
    _shutdown_hooks.append(hook)


def _atexit() -> None:
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def drain() -> None:
        for hook in list(_shutdown_hooks):
            try:
                await hook()
            except Exception:  # best effort: keep ending the other children
                pass

    future = asyncio.run_coroutine_threadsafe(drain(), loop)
    try:
        future.result(timeout=15)
    except Exception:
        future.cancel()
    if not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)


atexit.register(_atexit)


def start(make: Callable[[], Coroutine[Any, Any, T]], future: concurrent.futures.Future[T],
          context: contextvars.Context) -> None:
    """Run ``make()`` as a task of the background loop inside ``context``, without waiting:
    its outcome lands in ``future``, and cancelling ``future`` cancels the task (the loop is
    kept running until the task ends). Unlike :func:`submit`, the coroutine is made on the loop
    (none is left unawaited when the call is given up before it starts) and runs in the
    caller's chosen context."""
    hold()
    try:
        get_loop().call_soon_threadsafe(_begin, make, future, context)
    except BaseException:
        release()
        raise


def _begin(make: Callable[[], Coroutine[Any, Any, T]], future: concurrent.futures.Future[T],
           context: contextvars.Context) -> None:
    if future.cancelled():  # given up before it started
        release()
        return
    try:
        task = asyncio.get_running_loop().create_task(make(), context=context)
    except BaseException as exc:
        release()
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            future.set_exception(exc)
        return
    task.add_done_callback(functools.partial(_settle, future))
    future.add_done_callback(functools.partial(_cancel_task, task))


def _settle(future: concurrent.futures.Future[T], task: asyncio.Task[T]) -> None:
    release()
    if future.cancelled():
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" warning
        return
    with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
        if task.cancelled():
            future.cancel()
        elif (exc := task.exception()) is not None:
            future.set_exception(exc)
        else:
            future.set_result(task.result())


def _cancel_task(task: asyncio.Task[Any], future: concurrent.futures.Future[Any]) -> None:
    if future.cancelled() and not task.done():
        task.get_loop().call_soon_threadsafe(task.cancel)
