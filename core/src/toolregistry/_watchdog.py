"""Deadlines for sync tools that run on the main thread itself (the ``inline-calls`` opt-in).

By default a call with a deadline hops to a worker thread, so that the caller can stop waiting
on time whatever the tool does. On the main thread there is a cheaper way, for those who
accept its risk: run the tool right there, and let one watchdog thread send the main thread a
signal when the deadline passes. The signal interrupts blocking system calls (``time.sleep``,
socket reads, lock waits, ``select``) and its handler raises :class:`ToolCancelled` in the
tool, which is what a worker thread gets too.

Used only where that is possible: on Linux-like systems with real-time signals, on the main
thread, when the application has not claimed the signal, and when the registry's
``inline-calls`` setting is on (off by default; ``TOOLREGISTRY_INLINE_CALLS=1`` turns it on;
the executor asks). Everywhere else calls hop to a worker. Two cases it cannot cut, which is
why it is not the default: a tool that swallows the cancellation with a bare
``except:``, and one in a long C call that releases the GIL -- the handler runs only between
bytecodes, and the caller's own thread is the one running the tool.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from typing import Any

__all__ = ["InlineDeadline", "inline_available"]

# How often the watchdog looks at the running calls while calls keep coming; a deadline that
# falls earlier wakes it at once.
_TICK = 0.25
# After this long without calls it sleeps until the next one.
_IDLE = 5.0


class InlineDeadline:
    """One running call's deadline (see :func:`arm`)."""

    __slots__ = ("cancel_event", "cancelled", "deadline", "done", "fired", "raised")

    def __init__(self, deadline: float, cancel_event: Any) -> None:
        self.deadline = deadline
        self.cancel_event = cancel_event
        self.done = False
        self.fired = False
        self.raised = False  # the handler raises at most once per call
        # What the call ends with when it was cancelled before its deadline (``cancel``).
        self.cancelled: BaseException | None = None


class _Watchdog:
    def __init__(self, signum: int, cancelled: type[BaseException]) -> None:
        self.signum = signum
        self.cancelled = cancelled
        self._start()

    def _start(self) -> None:
        # Also after fork(): the child has this object but not the thread.
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.active: list[InlineDeadline] = []  # a stack: calls nest on one thread
        self.wake_at = math.inf
        self.last_call = 0.0
        self.main_ident = threading.main_thread().ident or 0
        self.thread = threading.Thread(target=self._main, name="toolregistry-watchdog",
                                       daemon=True)
        self.thread.start()

    def arm(self, deadline: float, cancel_event: Any) -> InlineDeadline:
        if self.pid != os.getpid():
            self._start()
        entry = InlineDeadline(deadline, cancel_event)
        with self.lock:
            self.active.append(entry)
            self.last_call = time.monotonic()
            if deadline < self.wake_at:
                self.cond.notify()
        return entry

    def cancel(self, entry: InlineDeadline, error: BaseException) -> bool:
        with self.lock:
            if entry.done or entry.fired:
                return False
            entry.cancelled = error
            entry.deadline = -math.inf  # fired at the watchdog's next look, now
            self.cond.notify()
        return True

    def disarm(self, entry: InlineDeadline) -> None:
        with self.lock:
            entry.done = True
            if self.active and self.active[-1] is entry:
                self.active.pop()
            elif entry in self.active:
                self.active.remove(entry)

    def _main(self) -> None:
        with self.lock:
            while True:
                now = time.monotonic()
                fire = False
                for entry in self.active:
                    if not entry.done and not entry.fired and entry.deadline <= now:
                        entry.fired = True
                        if entry.cancel_event is not None:
                            entry.cancel_event.set()
                        fire = True
                if fire:
                    signal.pthread_kill(self.main_ident, self.signum)
                earliest = min((e.deadline for e in self.active if not e.fired),
                               default=math.inf)
                busy = self.active or now - self.last_call < _IDLE
                self.wake_at = min(earliest, now + _TICK) if busy else earliest
                self.cond.wait(None if math.isinf(self.wake_at)
                               else max(0.0, self.wake_at - now))

    def on_signal(self, signum: int, frame: Any) -> None:
        for entry in self.active:
            if entry.fired and not entry.done and not entry.raised:
                entry.raised = True
                raise self.cancelled("the call ran past its deadline")


_dog: _Watchdog | None = None
_state = {"checked": False, "available": False}
_setup_lock = threading.Lock()


def inline_available(cancelled: type[BaseException]) -> bool:
    """True when this thread may run deadline calls inline (see the module docstring)."""
    if threading.get_ident() != threading.main_thread().ident:
        return False
    if _state["checked"]:
        return _state["available"]
    with _setup_lock:
        if not _state["checked"]:
            _state["available"] = _install(cancelled)
            _state["checked"] = True
    return _state["available"]


def _install(cancelled: type[BaseException]) -> bool:
    global _dog
    if not hasattr(signal, "pthread_kill") or not hasattr(signal, "SIGRTMIN"):
        return False
    signum = signal.SIGRTMIN + 7
    if signum > signal.SIGRTMAX:
        return False
    try:
        if signal.getsignal(signum) not in (signal.SIG_DFL, None):
            return False  # the application uses it: leave it alone
        dog = _Watchdog(signum, cancelled)
        signal.signal(signum, dog.on_signal)  # no SA_RESTART: blocking calls are interrupted
    except (ValueError, OSError, RuntimeError):
        return False
    _dog = dog
    return True


def arm(deadline: float, cancel_event: Any) -> InlineDeadline:
    """Watch ``deadline`` (``time.monotonic()`` seconds) for the call about to run here."""
    assert _dog is not None
    return _dog.arm(deadline, cancel_event)


def cancel(entry: InlineDeadline, error: BaseException) -> bool:
    """End the call ``entry`` watches now, as its deadline would (its caller answers
    ``error``); False when it ended or its deadline passed already."""
    assert _dog is not None
    return _dog.cancel(entry, error)


def outer_fired() -> bool:
    """True when a call further out on this thread ran past its deadline (its cancellation
    passes through inner calls)."""
    return _dog is not None and any(e.fired and not e.done for e in _dog.active)


def disarm(entry: InlineDeadline) -> BaseException | None:
    """The call ended: stop watching it (a late signal is then ignored). Returns the
    cancellation that landed while disarming, if one did (it must not be lost)."""
    assert _dog is not None
    landed: BaseException | None = None
    while True:
        try:
            _dog.disarm(entry)
            return landed
        except _dog.cancelled as exc:  # the signal arrived in the middle: disarm again
            landed = exc
