"""Where the calls of an MCP tool run (the ``dispatch`` hook): straight on the loop that holds
its session.

An MCP call is I/O on the session's event loop: the caller only waits. Run as a plain sync
tool, a blocking call with a deadline would first go to one of the registry's worker threads,
which would then hand it to the session's loop and wait there: two thread hand-overs each way
where one does. This runner starts the call as a task of the plugin's background loop from the
caller's own thread; the registry waits on its future under the call's deadline (sync API) or
awaits it (async API, without a task of its own around the call), and cancels it when the
deadline passes or the caller gives up (the SDK then sends ``notifications/cancelled``).
Validation, hooks, observers, deadlines, tools that must run alone and answers stay the
registry's. Retries of idempotent tools (``job.retry``) are made here, as the registry makes
them for its own calls. Sessions on the application's loop (``session_loop="running"``) keep
the registry's own path: their async calls need no hand-over at all.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log

from . import _loop

if TYPE_CHECKING:
    from toolregistry import Tool
    from toolregistry.types import Job

    from ._source import MCPSource

__all__ = ["MARK", "RUNNER", "SessionRunner", "runner_for"]

MARK = "_toolregistry_mcp_call"
"""The attribute on an MCP tool's callables: ``(source, the tool's coroutine function)``."""


def _target(fn: Any) -> tuple[MCPSource, Callable[..., Awaitable[Any]]] | None:
    return getattr(fn, MARK, None)


class SessionRunner:
    """Runs the calls of MCP tools whose session lives on the plugin's background loop."""

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        target = _target(job.fn)
        if target is None:  # the tool's callable was replaced after its plan was compiled
            future.set_exception(ToolCallError(
                f"tool {job.tool.name!r}: the MCP runner got a callable that is not an MCP "
                "tool's", kind="execution"))
            return future
        source, afn = target
        if not job.is_async and _loop.in_loop_thread():
            future.set_exception(ToolCallError(
                f"MCP server {source.client.display}: a blocking MCP call was made from the MCP "
                "background loop itself; use the async API", kind="execution"))
            return future
        _loop.start(lambda: _attempts(afn, job), future, job.context)
        return future

    def cancel(self, job: Job, future: concurrent.futures.Future[Any]) -> None:
        future.cancel()  # its done callback cancels the task on the loop


RUNNER = SessionRunner()


async def _attempts(afn: Callable[..., Awaitable[Any]], job: Job) -> Any:
    """The call, tried again under the registry's retry policy for idempotent tools while
    the deadline leaves room for the next try."""
    attempt = 1
    while True:
        try:
            return await afn(*job.args, **job.kwargs)
        except Exception as exc:
            retry = job.retry
            if retry is None or not retry.should_retry(exc, attempt):
                raise
            delay = retry.delay(attempt)
            remaining = job.remaining()
            if remaining is not None and delay >= remaining:
                raise
            log.info("call.retried", tool=job.tool.name, attempt=attempt,
                     error=f"{type(exc).__name__}: {exc}")
        await asyncio.sleep(delay)
        attempt += 1


def runner_for(tool: Tool) -> SessionRunner | None:
    """The runner of ``tool`` when it is an MCP tool of a background-loop session."""
    target = _target(tool.callable)
    if target is None or _target(tool.acallable) is None:
        return None
    source, _ = target
    return RUNNER if source.client.session_loop == "background" else None
