"""Ending a call in flight early, from outside its caller (``ToolRegistry.cancel_call``).

For each call whose caller waits under a deadline, the kernel keeps what that caller waits on,
by call id: the worker pool's job (a sync call on a worker), the watchdog's entry (a sync call
run inline), the future an async tool's task is awaited through, or the caller's own task
when the tool is awaited there. Cancelling wakes the
waiting caller at once with an error result of kind ``"cancelled"`` naming the reason, the way
the deadline would have; the tool is stopped as after a deadline (an async tool's task is
cancelled; a sync tool is interrupted where Python can, else left to finish on its worker,
its ``ToolContext.cancel_event`` set).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolregistry import _watchdog
from toolregistry.errors import ToolCallError

from ._intask import InCallerTask

if TYPE_CHECKING:
    from ._executor import Executor

__all__ = ["InFlight", "cancelled_error"]


def cancelled_error(name: str, reason: str) -> ToolCallError:
    """The error a cancelled call ends with (its result's message)."""
    return ToolCallError(f"tool {name!r} was cancelled: {reason}", kind="cancelled")


class InFlight:
    """The calls in flight that can be cancelled, by call id (calls without an id cannot)."""

    __slots__ = ("calls", "executor")

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.calls: dict[str, tuple[str, Any]] = {}

    def add(self, call_id: str | None, name: str, handle: Any) -> tuple[str, Any] | None:
        """Keep ``handle`` (what the caller of call ``call_id`` waits on) until ``forget``."""
        if call_id is None:
            return None
        self.calls[call_id] = entry = (name, handle)
        return entry

    def forget(self, call_id: str | None, entry: tuple[str, Any] | None) -> None:
        """The call ended: drop its entry (not a later call's with the same id)."""
        if call_id is not None and self.calls.get(call_id) is entry:
            del self.calls[call_id]

    def cancel(self, call_id: str, reason: str) -> bool:
        """End call ``call_id`` now for its caller; False when no such call is in flight."""
        entry = self.calls.get(call_id)
        if entry is None:
            return False
        name, handle = entry
        error = cancelled_error(name, reason)
        if isinstance(handle, asyncio.Future):
            return _wake(handle, error)
        if isinstance(handle, InCallerTask):
            return handle.stop_threadsafe(error)
        if isinstance(handle, _watchdog.InlineDeadline):
            return _watchdog.cancel(handle, error)
        pool = self.executor.pool_or_none
        if pool is None:
            return False
        if isinstance(handle, tuple):  # a sync tool on a worker, awaited on a loop
            work, waiter = handle
            if not _wake(waiter, error):
                return False
            pool.interrupt(work)
            return True
        return pool.abandon(handle, error)


def _wake(waiter: asyncio.Future[Any], error: BaseException) -> bool:
    """Have ``waiter``'s loop end it with ``error``; False when it ended already."""
    if waiter.done():
        return False
    try:
        waiter.get_loop().call_soon_threadsafe(_fail, waiter, error)
    except RuntimeError:  # its loop is closed: nobody waits any more
        return False
    return True


def _fail(waiter: asyncio.Future[Any], error: BaseException) -> None:
    if not waiter.done():
        waiter.set_exception(error)
