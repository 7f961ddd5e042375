"""The host side of a program's run: its output, the stop switch, and the tool calls it makes
-- each one an ordinary ``registry.ainvoke`` -- with values made plain for the sandbox."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from toolregistry.plugin import start_call
from toolregistry.types import ApprovalRequest, ToolResult

from ._paused import HeldCall, PausedRun
from ._result import CallRecord, CodeError, CodeRun
from ._stubs import ToolFunction

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._codemode import View
    from ._settings import CodeModeSettings

__all__ = ["CURRENT", "Held", "Run", "call_tool", "external", "no_os", "to_json"]

CURRENT: contextvars.ContextVar[Run] = contextvars.ContextVar("toolregistry_codemode_run")
"""The run whose program is calling (host callbacks run in a copy of the feeding context)."""

_MAX_ERROR_CHARS = 2000
_TOOL_ERRORS: dict[str | None, type[Exception]] = {
    "invalid_arguments": TypeError, "malformed_arguments": TypeError,
    "unknown_tool": NameError, "timeout": TimeoutError, "denied": PermissionError,
}


class Held(Exception):
    """A tool call that waits for a person's approval (the program pauses at it)."""

    def __init__(self, seq: int, fn: ToolFunction, arguments: dict[str, Any], call_id: str,
                 result: ToolResult) -> None:
        super().__init__(result.text)
        self.seq = seq
        self.fn = fn
        self.arguments = arguments
        self.call_id = call_id
        self.result = result
        self.sandbox_id: int | None = None
        """The sandbox's id of the call (its future, in the sandbox's state)."""


class Run:
    """One program's state on the host: output, calls, the stop switch."""

    def __init__(self, registry: ToolRegistry, settings: CodeModeSettings, view: View,
                 context: Mapping[str, Any] | None) -> None:
        self.registry = registry
        self.settings = settings
        self.view = view
        self.context = context
        # Unique across processes and time: with a shared approvals store a call id names
        # one call of one program, never another process's call with the same arguments.
        self.id = f"code_{os.urandom(10).hex()}"
        self.result = CodeRun()
        self.count = 0
        self.running: dict[asyncio.Task[Any] | None, str] = {}
        """The calls in flight: their tasks (to cancel when the program ends) and tools."""
        self.starting: dict[int, tuple[Any, ToolFunction, dict[str, Any], str]] = {}
        """Calls started from the sandbox's thread whose task has not run yet, by sequence
        number: the started call (to cancel), the tool, the arguments, the call id."""
        self.records: dict[int, tuple[Any, ...]] = {}
        """The calls made, by sequence number: CallRecord's fields."""
        self.last_tool_error: str | None = None
        self.stopped: CodeError | None = None
        self.closed = False
        self.feed: asyncio.Future[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        """Calls (and sleeps) the sandbox goes on without, by the sandbox's id: their tasks,
        whose results it gets when it waits on them."""
        self.held: dict[int, Held] = {}
        """Calls waiting for a person's approval, by the sandbox's id."""
        self.pausing: bytes | None = None
        """The sandbox's dumped state where it waits only on held calls (the run pauses)."""
        self.paused_on: tuple[int, ...] = ()
        """The held calls the paused state waits on, by the sandbox's id."""
        self.pause_at: int | None = None
        """Where the paused program waits: a byte offset into its source."""
        self.session: Any = None
        """The sandbox session the program runs in."""
        self.eager: Any = None
        """The sandbox's call being answered at once (the program awaits it alone), if any:
        held, the run pauses there (see :meth:`hold`)."""
        self.holding: set[asyncio.Task[Any]] = set()
        """The tasks of held calls awaited alone (cancelled when the run ends)."""
        self.slept = 0.0
        """Seconds the program asked to sleep so far."""
        self.ends = float("inf")
        """When the program's wall time ends (``time.monotonic()``; set as it starts)."""
        self.default_timeout = registry.default_timeout
        self._out: list[str] = []
        self._out_len = 0
        self._out_lock = threading.Lock()

    # -- output -----------------------------------------------------------------------------
    def printed(self, stream: str, text: str) -> None:
        """The sandbox's print callback: keep output within ``max_output_chars``."""
        limit = self.settings.max_output_chars
        with self._out_lock:
            if self._out_len >= limit:
                return
            room = limit - self._out_len
            self._out.append(text[:room])
            self._out_len += min(len(text), room)
            over = len(text) > room
        if over:
            self.stop(CodeError("limit", f"the program printed more than {limit:,} characters",
                                hint="print less: aggregate, filter or slice before printing"))

    def output(self) -> str:
        with self._out_lock:
            return "".join(self._out)

    def stop(self, error: CodeError) -> None:
        """Stop the program now (its worker is replaced) and report ``error``."""
        if self.stopped is not None:
            return
        self.stopped = error
        feed, loop = self.feed, self.loop
        if feed is not None and loop is not None:
            loop.call_soon_threadsafe(feed.cancel)

    def finish(self, value: Any) -> None:
        result = self.result
        result.output = self.output()
        result.value = value
        text = to_json(value)
        limit = self.settings.max_output_chars
        if len(text) + len(result.output) > limit:
            result.error = CodeError(
                "limit", f"the program's value is {len(text):,} characters of JSON, over the "
                f"output limit of {limit:,}", hint="return only what you need")
            return
        result.value_json = text

    async def cancel_calls(self) -> None:
        """Cancel the tool calls still in flight (the program ended or was stopped while they
        ran): the registry then interrupts them as on any cancellation."""
        self.closed = True
        for seq in list(self.starting):
            entry = self.starting.pop(seq, None)  # whoever pops it ends it (see start)
            if entry is not None:
                entry[0].cancel()
                self.records[seq] = (entry[1].tool_name, entry[2], "cancelled", 0.0, entry[3])
        me = asyncio.current_task()
        tasks = [t for t in (*self.running, *self.waiting.values(), *self.holding)
                 if t is not None and not t.done() and t is not me]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        for task in self.waiting.values():  # ended unanswered: their outcome is recorded
            if task.done() and not task.cancelled():
                task.exception()

    def in_flight(self) -> str:
        """The tools the program waited on when it was stopped: in flight, or cancelled with
        it (a call it awaited at once)."""
        names = sorted([*self.running.values(),
                        *(r[0] for r in self.records.values() if r[2] == "cancelled")])
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    # -- tool calls ---------------------------------------------------------------------------
    def start(self, fn: ToolFunction, arguments: dict[str, Any]) -> Coroutine[Any, Any, Any]:
        """A call the program just made (on the sandbox's I/O thread, or the loop's when the
        host steps the program): made now through the registry's own path (``start_call``:
        prepared here, a sync tool already running on the registry's threads), and the
        coroutine that awaits its value for the program (:meth:`call`). One program's calls
        come one after the other (its session's messages), so the count needs no lock."""
        if self.stopped is not None or self.closed or self.count >= self.settings.max_tool_calls:
            try:
                self._refuse()
            except RuntimeError as exc:
                return _answer(False, exc)
        self.count = seq = self.count + 1
        call_id = f"{self.id}.{seq}"
        # The program's wall time bounds each of its calls: a call whose tool's own timeout
        # would end later runs without a deadline of its own (no timer, no task of its own
        # in the registry), the program's limit stops it. A shorter tool timeout holds, and
        # a tool that reads its ToolContext keeps its deadline.
        limit = fn.timeout if fn.timeout is not None else self.default_timeout
        timeout = None
        if not fn.takes_context and (limit is None or time.monotonic() + limit >= self.ends):
            timeout = 0.0
        started = start_call(self.registry, fn.tool_name, arguments, context=self.context,
                             timeout=timeout, call_id=call_id)
        self.starting[seq] = (started, fn, arguments, call_id)
        if self.closed and self.starting.pop(seq, None) is not None:
            started.cancel()  # the program ended meanwhile, and cancel_calls missed it
            self.records[seq] = (fn.tool_name, arguments, "cancelled", 0.0, call_id)
        return self.call(fn, arguments, seq, call_id, self.eager)

    async def call(self, fn: ToolFunction, arguments: dict[str, Any], seq: int,
                   call_id: str, eager: Any = None) -> Any:
        """The started call ``seq`` awaited on the loop: its value for the program, or the
        exception the program sees (:class:`Held` when a person must approve it first; the
        run pauses at once at a held call the program awaits alone, its ``eager``
        snapshot). (The per-call path: records stay tuples until the end.)"""
        entry = self.starting.pop(seq, None)
        if entry is None:  # ended with the program before its task ran
            self._refuse()
        started = entry[0]
        task = asyncio.current_task()
        self.running[task] = fn.tool_name
        begun = time.perf_counter()
        try:
            result = await started
        except asyncio.CancelledError:
            self.records[seq] = (fn.tool_name, arguments, "cancelled",
                                 time.perf_counter() - begun, call_id)
            raise
        finally:
            del self.running[task]
        if not result.is_error:
            self.records[seq] = (fn.tool_name, arguments, "ok", result.duration, call_id)
            value = result.value
            if type(value) in _SCALARS and not fn.parse_json:
                return value
            return _to_sandbox(result, fn)
        if eager is None:
            return self.failed(seq, fn, arguments, call_id, result)
        try:
            return self.failed(seq, fn, arguments, call_id, result)
        except Held as held:
            await self.hold(held, eager)

    def failed(self, seq: int, fn: ToolFunction, arguments: dict[str, Any], call_id: str,
               result: ToolResult) -> Any:
        """Record a call that did not succeed and raise what the program sees (or
        :class:`Held`); a resumed call's success is its value."""
        outcome = (result.error_kind or "error") if result.is_error else "ok"
        self.records[seq] = (fn.tool_name, arguments, outcome, result.duration, call_id)
        if not result.is_error:
            return _to_sandbox(result, fn)
        if result.pending:
            raise Held(seq, fn, arguments, call_id, result)
        text = result.text.removeprefix("Error: ")
        if len(text) > _MAX_ERROR_CHARS:
            text = text[:_MAX_ERROR_CHARS] + "…"
        message = f"{fn.py}() failed ({outcome}): {text}"
        self.last_tool_error = message
        raise _TOOL_ERRORS.get(result.error_kind, RuntimeError)(message)

    # -- pausing for approval ---------------------------------------------------------------
    async def hold(self, held: Held, snap: Any) -> NoReturn:
        """Pause at ``snap``, a call the program awaits alone, which ``held`` keeps: the
        sandbox waits on nothing else, so its state now is that call, unanswered."""
        held.sandbox_id = snap.call_id
        self.held[snap.call_id] = held
        task = asyncio.current_task()
        if task is not None:
            self.holding.add(task)
        self.pausing = await self.session.dump()
        self.paused_on = (snap.call_id,)
        self.pause_at = snap.position.start
        if self.feed is not None:
            self.feed.cancel()
        await asyncio.get_running_loop().create_future()  # cancelled with the program
        raise AssertionError("unreachable")

    def pause_here(self, snap: Any, held: tuple[int, ...]) -> None:
        """Pause at ``snap``, where the program waits only on the ``held`` calls (sandbox
        ids): its state is dumped now, so it waits on exactly those when loaded again."""
        self.pausing = snap.dump()
        self.paused_on = held
        self.pause_at = snap.position.start

    def pause(self, state: bytes, code: str, call_id: str | None) -> PausedRun:
        """The run as a :class:`PausedRun` at its held calls, from the sandbox's ``state``."""
        from pydantic_monty import __version__

        waits_on = sorted((self.held[i] for i in self.paused_on), key=lambda h: h.seq)
        held = tuple(HeldCall(h.seq, h.fn.tool_name, h.arguments, h.call_id,
                              h.result.approval or ApprovalRequest(
                                  ApprovalRequest.stable_id(h.fn.tool_name, h.call_id,
                                                            h.arguments),
                                  h.fn.tool_name, h.arguments, h.call_id), h.sandbox_id)
                     for h in waits_on)
        line = None
        if self.pause_at is not None:
            line = code.encode("utf-8")[:self.pause_at].count(b"\n") + 1
        return PausedRun(state, code, self.id, self.count,
                         tuple((seq, *self.records[seq]) for seq in sorted(self.records)),
                         self.output(), held, __version__, call_id, line)

    def restore(self, paused: PausedRun) -> None:
        """Continue ``paused``'s run: its call ids, calls and output so far."""
        self.id = paused.run_id
        self.count = paused.count
        self.records = {int(c[0]): tuple(c[1:]) for c in paused.calls}
        self._out = [paused.output]
        self._out_len = len(paused.output)

    def resumed(self, held: HeldCall, result: ToolResult) -> Any:
        """What became of ``held`` (``result``), as the program sees it (or :class:`Held`)."""
        fn = self.view.by_name.get(held.tool)
        if fn is None:
            self.records[held.seq] = (held.tool, dict(held.arguments), "unknown_tool",
                                      result.duration, held.call_id)
            raise NameError(f"the tool {held.tool!r} is no longer available to programs")
        return self.failed(held.seq, fn, dict(held.arguments), held.call_id, result)

    def _refuse(self) -> NoReturn:
        if self.stopped is not None:
            raise RuntimeError(self.stopped.message)
        if self.closed:  # a call the sandbox started just before the program was stopped
            raise RuntimeError("the program was stopped")
        limit = self.settings.max_tool_calls
        error = CodeError("limit", f"the program made more than {limit} tool calls",
                          hint="batch the work differently, or do it in several programs")
        self.stop(error)
        raise RuntimeError(error.message)

    def call_records(self) -> list[CallRecord]:
        """The calls made, in the order the program made them (they finish in any order)."""
        return [CallRecord(*self.records[seq]) for seq in sorted(self.records)]


def external(fn: ToolFunction) -> Callable[..., Any]:
    """The host function behind ``fn`` in programs. A plain function returning the call's
    coroutine (the sandbox awaits it): one coroutine per call instead of two."""

    def call(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        return CURRENT.get().start(fn, fn.bind(args, kwargs))

    call.__name__ = fn.py
    return call


async def _answer(ok: bool, value: Any) -> Any:
    if ok:
        return value
    raise value


def call_tool(name: str, arguments: Mapping[str, Any] | None = None
              ) -> Coroutine[Any, Any, Any]:
    run = CURRENT.get()
    if not isinstance(name, str):
        return _answer(False, TypeError(
            f"call_tool() needs a tool name (str), got {type(name).__name__}"))
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return _answer(False, TypeError(f"call_tool({name!r}, ...) needs the arguments as a "
                                        f"dict, got {type(arguments).__name__}"))
    fn = run.view.by_name.get(name)
    if fn is None:
        fn = next((f for f in run.view.by_name.values() if f.py == name), None)
    if fn is None:
        close = [n for n in run.registry.suggest_names(name, 3) if n in run.view.by_name]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return _answer(False, NameError(f"there is no tool {name!r} available to programs"
                                        f"{hint}"))
    return run.start(fn, dict(arguments))


def no_os(*, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], is_async: bool,
           **_: Any) -> Any:
    what = f"{name}({', '.join(repr(a) for a in args)[:200]})"
    raise PermissionError(f"{what}: programs have no files, environment or network; get data "
                          "through the tools")


# -- values across the boundary -----------------------------------------------------------------
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _plain(value: Any, limit: int = 50) -> bool:
    """Whether ``value`` is plain data the sandbox takes as it is: JSON's types (tuples too),
    nested at most ``limit`` deep. A loop over a stack with exact type checks: cheaper on a
    tool's parsed JSON than recursion with isinstance."""
    leaf = _SCALARS
    if type(value) in leaf:
        return True
    todo = [(value, 0)]
    pop, push = todo.pop, todo.append
    while todo:
        item, depth = pop()
        if depth > limit:
            return False
        kind = type(item)
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return False
                if type(inner) not in leaf:
                    push((inner, depth + 1))
        elif kind is list or kind is tuple:
            for inner in item:
                if type(inner) not in leaf:
                    push((inner, depth + 1))
        elif kind not in leaf:
            return False
    return True


def _to_sandbox(result: ToolResult, fn: ToolFunction) -> Any:
    """What the program gets for a successful call: the tool's value as plain data."""
    value = result.value
    if value is None and result.text not in ("", "null"):
        value = result.text
    if fn.parse_json and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if _plain(value):
        return value
    import pydantic_core

    try:
        return pydantic_core.to_jsonable_python(value, fallback=str)
    except Exception:
        return result.text


def to_json(value: Any) -> str:
    import pydantic_core

    return pydantic_core.to_json(value, fallback=repr, serialize_unknown=True).decode("utf-8")
