"""The cyclic garbage collector paused around work on many tools (a large emission, a bulk
registration), and around each ``register()`` call within a bound.

Such work allocates a few acyclic dicts and lists per tool, which would trigger collections
that traverse the whole heap -- every registered tool -- again and again: most of the cost of a
cold emission of 10,000 tools, growing with the registry's size. Paused, what was allocated
meanwhile is looked at by the first collection after the collector is back on.

A loop of ``register()`` calls does that work one tool at a time. The collector makes a young
pass every 700 objects allocated, every 10th of those passes generation 1 as well, and every
10th of those -- once the heap grew by a quarter -- a full collection of everything: in a loop
of 100,000 registrations about eight collections of every tool registered so far, 40% of the
loop's time. Each call pauses the collector while it runs (it is on again when the call
returns or raises); its allocations still count, so the pass they make due is made by the
first allocation the collector sees outside a call -- in a loop that allocates nothing else,
the next call that no longer pauses. A call pauses only while fewer than :data:`DEFER_MAX`
objects wait for a young pass: so in such a loop young passes come every ``DEFER_MAX``
objects (garbage cycles made meanwhile among them), and full collections 30 times less often.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["DEFER_MAX", "PAUSE_MIN", "pause_one", "paused"]

PAUSE_MIN = 256  # tools: below this the work triggers no collection worth avoiding
DEFER_MAX = 20_000  # objects waiting for a young pass: register() calls stop pausing


def pause_one() -> bool:
    """Pause the collector for one registration when it is on and fewer than
    :data:`DEFER_MAX` objects wait for a young pass (``True``: the caller turns it on)."""
    if not gc.isenabled():
        return False
    gc.disable()  # before get_count: its tuple is an allocation that may start a pass
    if gc.get_count()[0] < DEFER_MAX:
        return True
    gc.enable()
    return False


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
