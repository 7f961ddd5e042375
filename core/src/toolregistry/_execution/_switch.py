"""The interpreter's switch interval while a worker pool is crowded.

A thread that wants the interpreter while another runs Python code waits for the switch
interval (``sys.getswitchinterval()``, 5 ms by default) before it asks for it, and it asks
again each time it blocks and wakes: a caller waiting for an answer, the event loop, and the
pool's own threads all pay that per wake-up while a CPU-bound tool runs, and a thread holding a
lock makes every thread waiting for that lock pay it too. A worker pool asks for a shorter
interval here while more calls run than it has CPU slots, or calls of CPU-bound tools run; the
interpreter's own is put back when the last pool is done, unless someone else changed it
meanwhile (theirs then stands, and is the one put back if it had to be lowered again). An
interval already shorter than asked for is left alone. The interval is process-wide, hence one
ledger for every pool.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

__all__ = ["ASKED", "follow", "lower", "release"]

_lock = threading.Lock()
ASKED: dict[int, float] = {}
"""id(owner) -> the interval it asked for (read it without the lock as a hint only)."""
_asked = ASKED
_saved: float | None = None  # the interval before it was lowered
_ours: float | None = None  # the interval set here (as read back)


def lower(owner: object, interval: float) -> None:
    """``owner`` runs CPU-bound calls: the interval is at most ``interval`` until it calls
    :func:`release`."""
    with _lock:
        _asked[id(owner)] = interval
        _apply()


def follow(owner: object, interval: float, busy: Callable[[], bool]) -> None:
    """:func:`lower` while ``busy()``, else :func:`release`; ``busy`` is asked under the
    ledger's lock, so when calls race (one starts a CPU-bound call, one ends another) the last
    one in sees the final state."""
    key = id(owner)
    with _lock:
        while True:
            want = busy()
            if want == (key in _asked):
                return
            if want:
                _asked[key] = interval
            else:
                del _asked[key]
            _apply()
            # Asked again after the change: a caller that changed the state meanwhile and
            # saw the ledger as it was before this change did not come in (see ASKED).


def release(owner: object) -> None:
    """``owner`` runs no CPU-bound call any more (a no-op when it had not asked)."""
    with _lock:
        if _asked.pop(id(owner), None) is not None:
            _apply()


def _apply() -> None:
    """Under the lock: set the interval the ledger asks for, or put back the one before."""
    global _saved, _ours
    current = sys.getswitchinterval()
    if _ours is None or not _same(current, _ours) or _saved is None:
        _saved, _ours = current, None  # not set here (or changed since): the one to put back
    before = _saved
    if not _asked:
        if _ours is not None:
            sys.setswitchinterval(before)
        _saved = _ours = None
        return
    wanted = min(*_asked.values(), before)
    if not _same(wanted, current):
        sys.setswitchinterval(wanted)
        _ours = sys.getswitchinterval()


def _same(a: float, b: float) -> bool:
    """The same interval as the interpreter keeps it (whole microseconds)."""
    return round(a * 1e6) == round(b * 1e6)
