"""The cyclic garbage collector paused around a bulk index build.

A build allocates a few small tuples per tool (its field texts, the term ids of each new
text) that live as long as the index. Each 700 of them start a young collection, each tenth
of those a collection of generation 1, and when the registry has grown by a quarter since the
last full collection -- as right after registering thousands of tools -- a collection of the
whole heap, every registered tool again: at 10,000 tools most of the build's time. Paused, the
objects allocated meanwhile are looked at by the first collection after the build (the
kernel pauses it the same way around a bulk registration or a cold emission of many tools).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PAUSE_MIN", "paused"]

PAUSE_MIN = 256  # documents: below this a build triggers no collection worth avoiding


@contextmanager
def paused(docs: int) -> Iterator[None]:
    """The collector off while indexing ``docs`` documents (when it was on and they are at
    least :data:`PAUSE_MIN`); back on afterwards, also when the work raises."""
    if docs < PAUSE_MIN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
