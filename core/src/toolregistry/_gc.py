"""The cyclic garbage collector paused around work on many tools (a large emission, a bulk
registration).

Such work allocates a few acyclic dicts and lists per tool, which would trigger collections
that traverse the whole heap -- every registered tool -- again and again: most of the cost of a
cold emission of 10,000 tools, growing with the registry's size. Paused, what was allocated
meanwhile is looked at by the first collection after the collector is back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PAUSE_MIN", "paused"]

PAUSE_MIN = 256  # tools: below this the work triggers no collection worth avoiding


@contextmanager
def paused(tools: int) -> Iterator[None]:
    """The collector paused while working on ``tools`` tools (when it was on and they are at
    least :data:`PAUSE_MIN`). Only what this call turned off is turned back on, also when
    the work raises."""
    if tools < PAUSE_MIN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
