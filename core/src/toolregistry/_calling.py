"""Which event loop the thread that made a call runs, for the tool running it elsewhere.

Through the sync API a sync tool with a deadline runs on a worker thread while its caller
waits. When the caller's thread runs an event loop, that loop is blocked meanwhile: a tool
that would hand work to it and wait would wait for itself (the MCP plugin's sessions on the
application's loop refuse such calls at once). :func:`calling_loop` tells the tool.
"""

from __future__ import annotations

import contextvars
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["calling_loop", "note_calling_loop"]

_CALLING_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = \
    contextvars.ContextVar("toolregistry_calling_loop", default=None)


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """Inside a sync tool called through the sync API (``invoke``, ``execute_tool_calls``):
    the event loop running on the thread that made the call, which waits for it; ``None``
    when that thread ran none (or through the async API, where the caller's loop is free)."""
    return _CALLING_LOOP.get()


def note_calling_loop(context: contextvars.Context) -> None:
    """The kernel, on the caller's thread, before handing a sync call to another thread that
    runs it in ``context``."""
    aio = sys.modules.get("asyncio")  # not imported: no loop runs (and plugins load light)
    loop = aio.events._get_running_loop() if aio is not None else None
    if loop is not None:
        context.run(_CALLING_LOOP.set, loop)
