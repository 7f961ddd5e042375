"""One background event loop, on its own daemon thread, that owns every MCP session.

anyio requires a session's transport and task group to be entered and left by the same task,
so a session cannot live in whichever event loop happened to call first: it lives here, and
callers from any thread or loop (or none) reach it through :func:`run` / :func:`arun`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_shutdown_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []


def get_loop() -> asyncio.AbstractEventLoop:
    """The background loop, started on first use."""
    global _loop, _thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            new = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(new)
                new.call_soon(ready.set)
                new.run_forever()

            thread = threading.Thread(target=main, name="toolregistry-mcp", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = new, thread
        return _loop


def in_loop_thread() -> bool:
    """True when running on the background loop's own thread."""
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the background loop; cancelling the future cancels the task."""
    return asyncio.run_coroutine_threadsafe(coro, get_loop())


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and block until it is done (any thread but the
    loop's own; a running event loop in the caller's thread is fine, it just waits)."""
    if in_loop_thread():
        coro.close()
        raise RuntimeError(
            "a blocking MCP call was made from the MCP background loop itself; use the async API"
        )
    future = submit(coro)
    try:
        done, _ = concurrent.futures.wait([future], timeout)
        if not done:
            future.cancel()
            raise TimeoutError(f"MCP operation did not finish within {timeout}s")
        return future.result()
    except BaseException:
        future.cancel()  # KeyboardInterrupt while waiting: stop the work on the loop too
        raise


async def arun(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` running on the background loop from any event loop; cancelling the
    awaiting task cancels it there too (so the SDK sends MCP cancellation)."""
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if current is not None and current is _loop:
        return await coro
    return await asyncio.wrap_future(submit(coro))


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
    loop.call_soon_threadsafe(loop.stop)


atexit.register(_atexit)
