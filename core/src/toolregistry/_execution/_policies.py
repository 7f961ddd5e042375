"""Per-tool execution policies: retries of idempotent tools, tools that must run alone, and
the order of calls within a concurrency group.

Retries and exclusivity wrap the callable a call runs (sync or async) and know nothing about
where it runs; the deadline they respect is the call's: a retry never starts when its backoff
would end past it, and waiting for an exclusive tool's lock counts against it. Concurrency
groups order the calls of one batch (:func:`group_order`); the schedulers honour the order.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry._log import log
from toolregistry.errors import ToolTimeoutError

if TYPE_CHECKING:
    from ._pipeline import Prepared

__all__ = ["ExclusiveLocks", "RetryPolicy", "exclusive", "group_order", "retrying"]


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


def retrying(fn: Callable[..., Any], retry: RetryPolicy, name: str, timeout: float | None,
             is_async: bool) -> Callable[..., Any]:
    """``fn`` tried again under ``retry`` while the deadline ``timeout`` seconds from now
    leaves room for the next try."""
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


class ExclusiveLocks:
    """One lock per tool that must run alone (``is_concurrency_safe=False``), shared by every
    batch and both APIs of one registry."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __call__(self, name: str) -> threading.Lock:
        """The lock of tool ``name``."""
        lock = self._locks.get(name)
        if lock is None:
            with self._guard:
                lock = self._locks.setdefault(name, threading.Lock())
        return lock

    async def acquire_async(self, name: str, timeout: float | None, started: float) -> threading.Lock:
        """Take tool ``name``'s lock from a coroutine without blocking the loop (it is a thread
        lock, shared with the sync API: poll for it); a :class:`ToolTimeoutError` when the
        deadline ``timeout`` seconds after ``started`` (``perf_counter``) passes first."""
        lock = self(name)
        while not lock.acquire(False):
            if timeout is not None and time.perf_counter() - started > timeout:
                raise ToolTimeoutError()
            await asyncio.sleep(0.002)
        return lock


def exclusive(fn: Callable[..., Any], lock: threading.Lock, timeout: float | None
              ) -> Callable[..., Any]:
    """Sync ``fn`` run while holding ``lock`` (waiting for it at most ``timeout`` seconds)."""
    def run_alone(*args: Any, **kwargs: Any) -> Any:
        if not lock.acquire(True, -1 if timeout is None else timeout):
            raise ToolTimeoutError()
        try:
            return fn(*args, **kwargs)
        finally:
            lock.release()

    return run_alone


def group_order(segment: Sequence[tuple[int, Prepared]]) -> dict[int, list[int]]:
    """Which calls of a concurrent segment must wait for which (``{index: [indexes]}``,
    empty when none must), by their tools' ``concurrency_group``.

    Within a group, in call order: a call to a tool that is not read-only waits for every
    earlier call of the group (the last such call and the read-only calls since), and later
    calls of the group wait for it; read-only calls wait only for the last call that was not
    read-only, so they run together. Calls outside any group wait for nothing.
    """
    after: dict[int, list[int]] = {}
    state: dict[str, tuple[int | None, list[int]]] = {}
    for index, prep in segment:
        group = prep.plan.group
        if group is None:
            continue
        writer, readers = state.get(group, (None, []))
        if prep.plan.read_only:
            if writer is not None:
                after[index] = [writer]
            state[group] = (writer, [*readers, index])
        else:
            waits = readers if writer is None else [writer, *readers]
            if waits:
                after[index] = waits
            state[group] = (index, [])
    return after
