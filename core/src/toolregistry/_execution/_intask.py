"""Awaiting an async tool in the caller's own task under its deadline, the way
``asyncio.timeout`` does, for a tool whose source declared that it ends promptly once
cancelled (``Tool.ends_on_cancel``).

No task of its own, no future to wake and no extra turn of the loop: a timer at the deadline
(or ``cancel_call``) cancels the caller's task, and that cancellation, taken back with
``uncancel()``, becomes the call's timeout (or cancelled) error. A cancellation of the caller's
own, before or meanwhile, still propagates.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from toolregistry.errors import ToolTimeoutError

if TYPE_CHECKING:
    from ._cancel import InFlight
    from ._pipeline import Prepared

__all__ = ["InCallerTask", "await_in_caller"]


class InCallerTask:
    """A call awaited in ``task``: what its deadline's timer and ``cancel_call`` stop. The
    first ``stop`` while the call runs wins; later ones (and any after it ended) do
    nothing."""

    __slots__ = ("cancelling", "error", "running", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelling = task.cancelling()
        self.error: BaseException | None = None
        self.running = True

    def stop(self, error: BaseException) -> None:
        """End the call with ``error`` (on the task's loop)."""
        if self.running and self.error is None:
            self.error = error
            self.task.cancel()

    def expire(self) -> None:
        """The deadline's timer: end the call with a timeout."""
        self.stop(ToolTimeoutError())

    def stop_threadsafe(self, error: BaseException) -> bool:
        """:meth:`stop` from any thread; False when the call ended already."""
        if not self.running or self.error is not None:
            return False
        try:
            self.task.get_loop().call_soon_threadsafe(self.stop, error)
        except RuntimeError:  # its loop is closed: nobody waits any more
            return False
        return True


async def await_in_caller(fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                          prep: Prepared, task: asyncio.Task[Any], in_flight: InFlight
                          ) -> Any:
    """Await ``fn(*args, **kwargs)`` in ``task`` (the running one), for at most the call's
    timeout; raises :class:`ToolTimeoutError` at the deadline, the ``cancel_call`` error when
    cancelled that way, ``CancelledError`` when the caller's task was cancelled otherwise."""
    timeout = prep.timeout
    assert timeout is not None
    loop = task.get_loop()
    here = InCallerTask(task)
    # The timer runs in an empty context (see _async._empty): a cancelled timer stays in the
    # loop's heap until its time, and must not keep the caller's values alive that long.
    timer = loop.call_at(loop.time() + timeout, here.expire, context=contextvars.Context())
    call_id = prep.call.id
    entry = in_flight.add(call_id, prep.plan.tool.name, here)
    try:
        value = await fn(*args, **kwargs)
    except BaseException as exc:
        if here.error is None:
            raise
        # Stopped by us: take our cancellation back; the caller's own still propagates.
        _stopped(here, prep, exc)
    finally:
        here.running = False
        timer.cancel()
        in_flight.forget(call_id, entry)
    if here.error is not None:  # it returned although cancelled: the deadline still counts
        _stopped(here, prep, None)
    return value


def _stopped(here: InCallerTask, prep: Prepared, exc: BaseException | None) -> NoReturn:
    """Raise what a call stopped by its deadline or ``cancel_call`` ends with: that error,
    unless the caller's task was cancelled as well (its cancellation goes on)."""
    if here.task.uncancel() > here.cancelling:
        if isinstance(exc, asyncio.CancelledError):
            raise exc
        raise asyncio.CancelledError()
    if prep.ctx is not None:  # the tool's ToolContext says so, as after a deadline
        prep.ctx.cancel_event.set()
    assert here.error is not None
    raise here.error from None
