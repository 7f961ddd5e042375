"""The pydantic-monty worker pool of one registry: started on first use (or by ``start``),
usable from any event loop, closed with the registry."""

from __future__ import annotations

import asyncio
import atexit
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import log

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty

    from ._settings import CodeModeSettings

__all__ = ["MODULES", "Sandbox"]

MODULES = ("asyncio", "json", "re", "math", "datetime", "time", "random", "collections",
           "itertools", "functools", "typing", "dataclasses", "decimal", "bisect", "base64",
           "hashlib", "csv", "copy")
"""Modules a program may import (the interpreter's standard library subset, minus the
file-system ones that have nothing to reach here)."""

_GRACE = 5.0
"""Seconds past a program's wall time after which the pool kills a worker that still runs."""
_SETTLE = 0.5
"""Seconds at most to wait for pydantic-monty's threads to leave Python (see :func:`settle`)."""
_atexit_registered = False


class Sandbox:
    """A lazily started :class:`pydantic_monty.AsyncMonty` pool (see the module docstring)."""

    def __init__(self, settings: CodeModeSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._pool: AsyncMonty | None = None
        self._starting = False
        self._closed = False

    @property
    def started(self) -> bool:
        """True once the pool runs."""
        return self._pool is not None

    async def pool(self) -> AsyncMonty:
        """The running pool (started here on first use; concurrent first uses share it)."""
        pool = self._pool
        if pool is not None:
            return pool
        while True:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the code-mode sandbox was closed with its registry")
                if self._pool is not None:
                    return self._pool
                if not self._starting:
                    self._starting = True
                    break
            # Another caller (maybe on another loop) is starting it.
            await asyncio.sleep(0.002)
        try:
            from pydantic_monty import AsyncMonty

            s = self.settings
            started = AsyncMonty(min_processes=min(s.warm_workers, s.pool_size),
                                 max_processes=s.pool_size,
                                 request_timeout=s.wall_time + _GRACE)
            await started.__aenter__()
        except BaseException:
            with self._lock:
                self._starting = False
            raise
        with self._lock:
            self._pool = started
            self._starting = False
        _settle_at_exit()
        log.info("codemode.pool_started", workers=self.settings.pool_size)
        return started

    async def aclose(self) -> None:
        """Stop every worker (idempotent)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)
            # The thread that answered __aexit__ may still be inside Python (its
            # call_soon_threadsafe waiting to take the interpreter back): let it leave, or an
            # interpreter ending now kills it under Rust frames, and the process aborts.
            deadline = time.monotonic() + _SETTLE
            while _foreign_threads_in_python() and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            log.info("codemode.pool_closed")

    def limits(self) -> dict[str, Any]:
        """The sandbox's resource limits for one program."""
        s = self.settings
        return {
            "max_feed_duration_secs": s.wall_time,
            "max_memory": s.memory_mb * 1024 * 1024,
            "max_recursion_depth": s.max_recursion_depth,
            # Host round trips: tool calls, name lookups, future resolutions. Tool calls are
            # counted (and refused past max_tool_calls) by the bridge; this is the backstop.
            "max_suspensions": 4 * s.max_tool_calls + 1000,
            "max_total_sleep_secs": s.wall_time,
        }


def _foreign_threads_in_python() -> bool:
    """Whether a thread that Python's ``threading`` did not start (pydantic-monty's tokio
    threads) is inside Python code now: running it, or waiting to take the interpreter."""
    ours = {t.ident for t in threading.enumerate()
            if not isinstance(t, threading._DummyThread)}
    return any(ident not in ours for ident in sys._current_frames())


def settle() -> None:
    """Wait (at most :data:`_SETTLE` seconds) until no foreign thread is inside Python.

    pydantic-monty's tokio threads call into Python (``call_soon_threadsafe``) to answer
    the event loop. One that is still waiting for the interpreter when Python finalizes is
    ended with ``pthread_exit`` under Rust frames that cannot unwind, and the process aborts
    (SIGABRT, exit -6) after doing all its work. Sleeping here gives the interpreter away, so
    such a thread finishes its call and leaves first."""
    deadline = time.monotonic() + _SETTLE
    while _foreign_threads_in_python() and time.monotonic() < deadline:
        time.sleep(0.001)


def _settle_at_exit() -> None:
    """Run :func:`settle` at interpreter exit (before finalization), once a pool started:
    for a program's last answer, or a pool never closed."""
    global _atexit_registered
    if not _atexit_registered:
        _atexit_registered = True
        atexit.register(settle)
