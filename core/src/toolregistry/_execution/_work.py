"""What the worker pool hands around: :class:`Work`, one sync call and its state, and
:class:`_Worker`, one worker thread and the pipe it waits on.

A call's ``state`` is one of ``_PENDING``, ``_RUNNING``, ``_INTERRUPTED``, ``_DONE`` and
``_CANCELLED``; the pool (``_threads``) moves it under its lock, and its CPU slots
(``_cpuslots``) read it. Neither class does anything by itself: they are the records the pool
and its watch share.
"""

from __future__ import annotations

import _thread
import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Work"]

_PENDING, _RUNNING, _INTERRUPTED, _DONE, _CANCELLED = range(5)


class Work:
    """One sync call handed to a worker thread; ``done`` (a raw lock) is released when it ends.

    ``state`` moves PENDING -> RUNNING -> DONE, or to CANCELLED (timed out before it started)
    or INTERRUPTED (timed out while running); transitions happen under the pool's lock so an
    interrupt can never land in the worker's next call.
    """

    __slots__ = ("abandoned", "args", "callback", "cancel_event", "context", "deadline", "done", "error",
                 "finished", "fn", "heavy", "ident", "key", "kwargs", "pinned", "result", "state")

    def __init__(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any],
                 context: contextvars.Context | None = None) -> None:
        self.fn = fn
        # The call runs inside ``context`` (else a copy of the submitting thread's): the
        # caller's contextvars go with it into the worker thread (request ids, tracing, the
        # MCP server's per-call log routing).
        self.context = contextvars.copy_context() if context is None else context
        self.args = args
        self.kwargs = kwargs
        self.result: Any = None
        self.error: BaseException | None = None
        self.state = _PENDING
        self.ident = 0
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.callback: Callable[[Work], None] | None = None
        self.cancel_event: threading.Event | None = None
        self.finished = 0.0
        # Set when the call was cancelled for its caller (``WorkerPool.abandon``): what it
        # ended with; ``done`` was released then, not when the worker finishes it.
        self.abandoned: BaseException | None = None
        # When its time is up (``perf_counter``; ``None``: never): a worker that reaches the
        # call later does not start it (it ends as cancelled before it started).
        self.deadline: float | None = None
        # What the pool learns CPU use by (the tool's name; ``None``: never held back), and
        # whether the call holds one of the pool's CPU slots.
        self.key: str | None = None
        self.heavy = False
        self.pinned = False

    def overran(self, deadline: float | None) -> bool:
        """True when it finished after ``deadline`` (a ``perf_counter`` time): the caller looked
        late (a busy thread, a long batch), but the call still ran past its time."""
        return deadline is not None and self.finished > deadline


class _Worker:
    """One worker thread and the pipe it waits on for work (``work``: its call now;
    ``restore``: the CPU mask to put back when it wakes, when its caller pinned it)."""

    __slots__ = ("clock", "idle_since", "native", "restore", "rfd", "thread", "waited", "wfd",
                 "work")

    def __init__(self, work: Work | None) -> None:
        self.rfd, self.wfd = os.pipe()
        self.work = work
        self.idle_since = 0.0
        self.thread: threading.Thread | None = None
        self.clock: int | None = None  # the thread's CPU-time clock, where there is one
        self.native = 0  # its thread id in the OS
        self.restore: frozenset[int] | None = None
        # Seconds it had waited for a CPU when last asked, and when (-1: not asked yet).
        self.waited = (-1.0, 0.0)
