"""Calls in flight: what an open inspector shows while they run (elapsed time, the progress
their tools report through the kernel), kept only while a UI watches, and the Cancel of a
call the inspector itself started."""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import listen_to_progress

if TYPE_CHECKING:
    import asyncio

    from toolregistry import ToolCall

__all__ = ["Running", "RunningCalls", "start"]

_keys = itertools.count(1)


def start(call: ToolCall) -> Running:
    """A call in flight, from ``call_started`` (in the call's own context: the progress its
    tool reports comes to it)."""
    running = Running(next(_keys), call, time.time())
    listen_to_progress(running.report)
    return running


class Running:
    """One call in flight: its tool, ids, start time and last reported progress."""

    __slots__ = ("batch", "call_id", "ended", "key", "message", "progress", "started", "tool",
                 "total")

    def __init__(self, key: int, call: ToolCall, started: float) -> None:
        self.key = key
        self.tool = call.name
        self.call_id = call.id
        self.batch = call.batch_id
        self.started = started
        self.progress: float | None = None
        self.total: float | None = None
        self.message: str | None = None
        self.ended = False
        """Set when the call finished (the shared log's writer then removes its row)."""

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress, self.total, self.message = progress, total, message

    def to_dict(self, now: float) -> dict[str, Any]:
        """A JSON-ready view: ``elapsed`` seconds, ``fraction`` done (``None``: unknown)."""
        fraction = None
        if self.progress is not None and self.total:
            fraction = min(max(self.progress / self.total, 0.0), 1.0)
        return {"key": self.key, "tool": self.tool, "call_id": self.call_id,
                "batch": self.batch, "started": self.started,
                "elapsed": max(now - self.started, 0.0), "progress": self.progress,
                "total": self.total, "fraction": fraction, "message": self.message}


class RunningCalls:
    """The calls of a registry in flight, tracked from when an inspector opens
    (:meth:`watch`): before that, and with no inspector, a call pays nothing for it."""

    def __init__(self) -> None:
        self.calls: dict[int, Running] = {}
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        """The calls the inspector started itself, by call id: the ones it can cancel."""

    def add(self, running: Running) -> None:
        """Track a call (from ``call_started``)."""
        self.calls[running.key] = running

    def finish(self, running: Running) -> None:
        self.calls.pop(running.key, None)

    def snapshot(self) -> list[dict[str, Any]]:
        """The calls in flight, oldest first."""
        now = time.time()
        return [r.to_dict(now) for r in sorted(self.calls.copy().values(),
                                                 key=lambda r: r.started)]

    def cancellable(self, call_id: str | None) -> bool:
        task = self.tasks.get(call_id or "")
        return task is not None and not task.done()

    def cancel(self, call_id: str) -> bool:
        """Cancel a call this inspector started (``False``: no such call in flight)."""
        task = self.tasks.get(call_id)
        if task is None or task.done():
            return False
        return task.cancel()
