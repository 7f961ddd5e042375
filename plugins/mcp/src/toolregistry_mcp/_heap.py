"""The served process's heap while it serves: what was built before serving started is kept
out of the cyclic garbage collector's sight -- only in a process the CLI owns
(``toolregistry serve``, ``python -m toolregistry_mcp serve``, and the worker processes of
``--workers N``). ``serve()`` called by an application leaves its collector alone: a library
does not retune its host's interpreter.

A served registry keeps a large, long-lived heap: the imported modules (the SDK, pydantic,
every installed plugin), the registry, its tools and schemas, the server. Under load each full
collection walks all of it again, and the per-request objects of many clients trigger one
every few hundred calls: with many clients over streamable HTTP the full collections take a
large share of the server's CPU. So serving first collects what is
garbage already, then moves everything left to the permanent generation (``gc.freeze``); those
objects still die by reference counting as ever, only the collector no longer walks them. When
the last server of the process stops, they are given back (``gc.unfreeze``), so a process that
goes on afterwards collects them as before.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["frozen_heap", "own_process"]

_lock = threading.Lock()
_serving = 0
_owned = False


def own_process() -> None:
    """Called by the CLI (and a serving worker process) before it serves: this process is
    the server's, so its heap may be frozen while it serves."""
    global _owned
    _owned = True


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Serve inside this: in a process the CLI owns (:func:`own_process`), the heap built so
    far is frozen until the last server of the process stops (servers may run side by side);
    elsewhere nothing happens."""
    global _serving
    if not _owned:
        yield
        return
    with _lock:
        _serving += 1
        if _serving == 1:
            gc.collect()
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _serving -= 1
            if _serving == 0:
                gc.unfreeze()
