"""The batch and in-flight pages of the web app: a batch's calls as a tree with a waterfall,
the calls running now with their progress, and their Cancel (this process's calls through the
kernel, other processes' through the shared log).
``_web`` mounts their routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import log as events

from ._log import LogEntry, get_log

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from toolregistry import ToolRegistry, ToolResult

    from ._running import RunningCalls

BATCH_CALLS = 1000
"""The most calls a batch page shows."""


def waterfall(entries: list[LogEntry]) -> dict[str, Any]:
    """The calls of a batch as bars on one time axis: per call its offset from the batch's
    first start and its duration (ms), and the bar's position and width in percent."""
    start = min(e.time for e in entries)
    end = max(e.time + e.duration for e in entries)
    span = max(end - start, 1e-6)
    rows = []
    for e in sorted(entries, key=lambda e: (e.time, e.seq)):
        offset = e.time - start
        rows.append({"entry": e, "offset_ms": offset * 1000, "duration_ms": e.duration * 1000,
                     "x": round(offset / span * 100, 3),
                     "width": round(max(e.duration / span * 100, 0.4), 3)})
    traces = sorted({e.trace_id for e in entries if e.trace_id})
    return {"rows": rows, "start": start, "total_ms": span * 1000, "traces": traces}


class LivePages:
    """The routes of the batch and running pages, over the app's own ``render`` / ``read``
    / ``form_of`` (``refused``: the app's error type, ``(status, message)``)."""

    def __init__(self, registry: ToolRegistry, render: Callable[..., Response],
                 read: Callable[..., Awaitable[list[LogEntry]]],
                 form_of: Callable[[Request], Awaitable[dict[str, str]]],
                 refused: Callable[[int, str], Exception]) -> None:
        self.registry = registry
        self.render = render
        self.read = read
        self.form_of = form_of
        self.refused = refused
        log = get_log(registry)
        self.running: RunningCalls | None = None if log is None else log.watch_running()

    async def run_call(self, name: str, arguments: dict[str, Any],
                       call_id: str) -> ToolResult | None:
        """Run a call from the tool page where the running page can cancel it; ``None`` when
        it was cancelled there."""
        task = asyncio.ensure_future(self.registry.ainvoke(name, arguments, call_id=call_id))
        tasks = self.running.tasks if self.running is not None else {}
        tasks[call_id] = task
        try:
            await asyncio.wait({task})
        finally:
            tasks.pop(call_id, None)
        if task.cancelled():
            return None
        return task.result()

    async def batch_page(self, request: Request) -> Response:
        batch = request.path_params["batch"]
        log = get_log(self.registry)
        entries = await self.read(log, batch=batch, limit=BATCH_CALLS) if log else []
        if not entries:
            raise self.refused(404, f"no batch {batch!r} in the execution log (it may be "
                                    "too old, or the log is off)")
        return self.render(request, "batch.html", batch=batch, calls=len(entries),
                           limit=BATCH_CALLS, **waterfall(entries))

    def snapshot(self) -> list[dict[str, Any]]:
        """The calls in flight, this process's and (from the shared log) other processes',
        oldest first (with ``cancellable``: started by this inspector)."""
        if self.running is None:
            return []
        calls = self.running.snapshot()
        for call in calls:  # the kernel cancels a call by its id
            call["cancellable"] = bool(call["call_id"])
        if get_log(self.registry) is not None:
            try:
                others = self._others()
            except Exception as exc:  # the store is away a moment: this process's calls
                others = []
                events.warning("inspector.running_read_failed", error=f"{exc}")
            for call in others:  # asked through the shared log
                call["cancellable"] = bool(call["call_id"])
            calls = sorted(calls + others, key=lambda c: c["started"])
        return calls

    def _others(self) -> list[dict[str, Any]]:
        """Other processes' calls in flight (from the shared log; none without one)."""
        log = get_log(self.registry)
        if log is None or log._writer is None:
            return []
        from ._live import read_running
        from ._reads import _log_store, _target

        return read_running(_target(log._writer.sink.url), _log_store(log),
                            skip_owner=log._writer.live.owner)

    async def running_page(self, request: Request, status: int = 200,
                           error: str | None = None) -> Response:
        from starlette.concurrency import run_in_threadpool

        calls = await run_in_threadpool(self.snapshot)
        return self.render(request, "running.html", status=status, calls=calls,
                           log_on=self.running is not None, error=error)

    async def cancel(self, request: Request) -> Response:
        """Cancel a call in flight: one this inspector started (its task), another of this
        process (through the kernel), or, with the form's ``row`` (its key on the running
        page), another process's, asked through the shared log."""
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import RedirectResponse

        form = await self.form_of(request)
        call_id = request.path_params["call_id"]
        row = form.get("row")
        if self.running is None:
            done = False
        elif row:
            done = await run_in_threadpool(self._ask_other, row, call_id)
        else:
            done = self.running.cancel(call_id) or self.registry.cancel_call(
                call_id, reason="cancelled in the inspector")
        if not done:
            return await self.running_page(
                request, status=404, error=f"{call_id}: no call that can be cancelled is "
                                           "running under that id (it may have ended, or "
                                           "runs without a deadline)")
        root = str(request.scope.get("root_path", ""))
        return RedirectResponse(root + "/running", status_code=303)

    def _ask_other(self, row: str, call_id: str) -> bool:
        """Leave a cancel request for another process's call (row ``row`` of the running
        page); False when no such call is in flight there."""
        import os
        import socket

        from ._live import request_cancel
        from ._reads import _log_store, _target

        log = get_log(self.registry)
        for call in self._others():
            if call["key"] == row and call["call_id"] == call_id:
                assert log is not None and log._writer is not None
                request_cancel(_target(log._writer.sink.url), _log_store(log), call,
                               f"cancelled in the inspector (pid {os.getpid()} on "
                               f"{socket.gethostname()})")
                return True
        return False

    def running_event(self, seen: str) -> tuple[str | None, str]:
        """A ``running`` server-sent event when the calls in flight changed since ``seen``
        (while any runs, every look: their elapsed time changes), and the new state."""
        calls = self.snapshot()
        state = json.dumps([(c["key"], c["progress"], c["cancellable"]) for c in calls])
        if not calls and state == seen:
            return None, state
        return f"event: running\ndata: {json.dumps(calls, default=repr)}\n\n", state

    def routes(self) -> list[Route]:
        from starlette.routing import Route

        return [Route("/batches/{batch}", self.batch_page),
                Route("/running", self.running_page),
                Route("/running/{call_id:path}/cancel", self.cancel, methods=["POST"])]
