"""How long an MCP call may take: a timeout that starts again on each progress notification of
the call, under an absolute cap.

A long tool that keeps reporting progress is alive and may go on; one that falls silent for
``timeout`` seconds is given up, and so is any call past ``cap`` seconds in all, however
busy. Giving up cancels the awaiting task: the SDK then sends ``notifications/cancelled`` for
the request, so the server stops too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from toolregistry.errors import ConfigError

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT as Progress

__all__ = ["CallExpired", "bounded", "total_limit"]

T = TypeVar("T")

CAP_FACTOR = 10
"""Without an explicit ``max_timeout``, the cap is this many times the timeout."""


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


async def bounded(call: Callable[[Progress], Awaitable[T]], on_progress: Progress | None,
                  timeout: float | None, cap: float | None) -> T:
    """``await call(progress)``, given up (:class:`CallExpired`) after ``timeout`` seconds
    without an answer or a progress notification, or after ``cap`` seconds in all."""
    import anyio

    start = anyio.current_time()
    last = [start]

    async def reported(progress: float, total: float | None, message: str | None) -> None:
        last[0] = anyio.current_time()
        if on_progress is not None:
            await on_progress(progress, total, message)

    if timeout is None and cap is None:
        return await call(reported)
    why: list[str] = []
    result: list[T] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                while True:
                    now = anyio.current_time()
                    idle_end = last[0] + timeout if timeout is not None else float("inf")
                    cap_end = start + cap if cap is not None else float("inf")
                    if now >= cap_end:
                        why.append(f"did not finish within its {cap:g}s cap (max_timeout), "
                                   "though it was still reporting progress"
                                   if last[0] > start else
                                   f"did not answer within {cap:g}s")
                        scope.cancel()
                        return
                    if now >= idle_end:
                        why.append(f"did not answer within {timeout:g}s"
                                   if last[0] == start else
                                   f"reported no progress for {timeout:g}s")
                        scope.cancel()
                        return
                    await anyio.sleep(min(idle_end, cap_end) - now)

            tasks.start_soon(watch)
            result.append(await call(reported))
            tasks.cancel_scope.cancel()
    if why and not result:
        raise CallExpired(why[0])
    return result[0]
