"""How long an MCP call may take: a timeout that starts again on each progress notification of
the call, under an absolute cap.

A long tool that keeps reporting progress is alive and may go on; one that falls silent for
``timeout`` seconds is given up, and so is any call past ``cap`` seconds in all, however
busy. Giving up cancels the awaiting task: the SDK then sends ``notifications/cancelled`` for
the request, so the server stops too.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from toolregistry.errors import ConfigError

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT as Progress

__all__ = ["CallExpired", "bounded", "check_max_timeout", "driven_to_its_end", "now",
           "total_limit", "waiting_on_a_person"]

T = TypeVar("T")

CAP_FACTOR = 10
"""Without an explicit ``max_timeout``, the cap is this many times the timeout."""


def now() -> float:
    """anyio's clock (``anyio.current_time()``): on an asyncio loop, where every MCP session
    of this plugin runs, the loop's own clock, read without anyio's lookup of the backend on
    each call."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:  # no asyncio loop here: whatever anyio's backend says
        import anyio

        return anyio.current_time()


class CallExpired(Exception):
    """The call was given up: silent past its timeout, or past its cap."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def total_limit(timeout: float | None, max_timeout: float | None) -> float | None:
    """The absolute cap of a call: ``max_timeout``, else ``CAP_FACTOR`` times ``timeout``
    (``None``: no timeout at all)."""
    if max_timeout is not None:
        return max(max_timeout, timeout or 0)
    return timeout * CAP_FACTOR if timeout is not None else None


def check_max_timeout(value: Any) -> float | None:
    """``max_timeout`` as given by a user: ``None`` or a positive number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"max_timeout must be a positive number of seconds (the cap on a "
                          f"call that keeps reporting progress), not {value!r}")
    return float(value)


class _Timer:
    """One call's limits, kept as the deadline of the cancel scope around it: moved on by each
    progress notification, lifted while the call waits on a person."""

    def __init__(self, scope: Any, now: float, timeout: float | None, cap: float | None
                 ) -> None:
        self.scope = scope
        self.idle = timeout if timeout is not None else float("inf")
        self.cap_end = now + cap if cap is not None else float("inf")
        self.heard = False
        self.pauses = 0
        self.restart(now)

    def restart(self, now: float) -> None:
        if not self.pauses:
            self.scope.deadline = min(now + self.idle, self.cap_end)


_TIMER: contextvars.ContextVar[_Timer | None] = contextvars.ContextVar(
    "toolregistry_mcp_call_timer", default=None)


@contextlib.contextmanager
def _set_aside(extend_cap: bool) -> Iterator[None]:
    timer = _TIMER.get()
    if timer is None:
        yield
        return
    started = now()
    timer.pauses += 1
    timer.scope.deadline = float("inf")
    try:
        yield
    finally:
        timer.pauses -= 1
        ended = now()
        if extend_cap:
            timer.cap_end += ended - started
        timer.restart(ended)


def waiting_on_a_person() -> contextlib.AbstractContextManager[None]:
    """Stop the limits of the call this code serves while a person acts (signs in); the time
    does not count towards the timeout or the cap. A no-op outside a call."""
    return _set_aside(extend_cap=True)


def driven_to_its_end() -> contextlib.AbstractContextManager[None]:
    """Set the limits of the call this code serves aside while code with a deadline of its
    own finishes it: a task polled until the call's deadline and cancelled on the server with
    ``tasks/cancel`` (the silence between polls is no sign of a dead call). A no-op outside
    a call."""
    return _set_aside(extend_cap=False)


async def bounded(call: Callable[[Progress], Awaitable[T]], on_progress: Progress | None,
                  timeout: float | None, cap: float | None) -> T:
    """``await call(progress)``, given up (:class:`CallExpired`) after ``timeout`` seconds
    without an answer or a progress notification, or after ``cap`` seconds in all."""
    import anyio

    # One cancel scope whose deadline each progress notification moves on: no task of its
    # own per call.
    scope = anyio.CancelScope()
    timer = _Timer(scope, now(), timeout, cap)

    async def reported(progress: float, total: float | None, message: str | None) -> None:
        timer.heard = True
        timer.restart(now())
        if on_progress is not None:
            await on_progress(progress, total, message)

    token = _TIMER.set(timer)
    try:
        with scope:
            return await call(reported)
    finally:
        _TIMER.reset(token)
    # Only reached when the scope's deadline cancelled the call.
    if now() >= timer.cap_end:
        raise CallExpired(f"did not finish within its {cap:g}s cap (max_timeout), though it "
                          "was still reporting progress" if timer.heard else
                          f"did not answer within {cap:g}s")
    raise CallExpired(f"reported no progress for {timeout:g}s" if timer.heard else
                      f"did not answer within {timeout:g}s")
