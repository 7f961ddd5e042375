"""Driving a program in the sandbox one suspension at a time. The host answers each tool call
the program makes -- at once when the program awaits it alone, else as a future the sandbox
resolves when the call ends -- and each sleep, so at every suspension it knows what the
program waits on: when that is only calls held for a person's approval, the run pauses at
that very suspension (its dump). A paused run is loaded back and checked against its held
calls before they are decided, then answered, and the program runs on the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._bridge import Held
from ._result import CodeError

if TYPE_CHECKING:
    from toolregistry.types import ToolResult

    from ._bridge import Run
    from ._paused import PausedRun

__all__ = ["PausedAgain", "continue_paused", "drive"]

_SLEEPS = {"time.sleep": False, "system.sleep": False,
           "asyncio.sleep": True, "system.async_sleep": True}
"""The sandbox's sleeps, and whether each is awaited (gathered ones overlap)."""


class PausedAgain(Exception):
    """The program waits only on calls held for approval: the run pauses (``run.pausing``)."""


async def drive(run: Run, snap: Any) -> Any:
    """Answer ``snap`` and every suspension after it until the program ends; its value."""
    from pydantic_monty import AsyncFunctionSnapshot, AsyncFutureSnapshot, MontyComplete

    while type(snap) is not MontyComplete:
        kind = type(snap)
        if kind is AsyncFunctionSnapshot:
            snap = await _call(run, snap)
        elif kind is AsyncFutureSnapshot:
            snap = await _settle(run, snap)
        else:  # a name: the tools and call_tool are the externals
            snap = await snap.resume_auto()
    return snap.output


async def _call(run: Run, snap: Any) -> Any:
    """A call the program makes: a tool (made now through the registry), a sleep, or
    something programs may not do (refused by the sandbox's ``os`` handler)."""
    name = snap.function_name
    if snap.is_os_function:
        if name in _SLEEPS:
            return await _sleep(run, snap, _SLEEPS[name])
        return await snap.resume_auto()
    host = run.view.externals.get(name)
    if host is None:
        return await snap.resume_auto()
    if snap.allow_eager_await:
        # Awaited alone: the sandbox makes the call through its host function and awaits it
        # in place (one round trip); held, the call pauses the run here (Run.hold).
        run.eager = snap
        try:
            return await snap.resume_auto()
        finally:
            run.eager = None
    try:
        pending = host(*snap.args, **snap.kwargs)
    except Exception as exc:
        return await snap.resume({"exception": exc})
    # Gathered, or kept to await later: the sandbox goes on, and waits on it when it must.
    run.waiting[snap.call_id] = asyncio.ensure_future(pending)
    return await snap.resume({"future": ...})


async def _settle(run: Run, snap: Any) -> Any:
    """Every task of the program waits on calls: deliver those that ended (waiting for one
    when none has), or pause when each call waited on is held."""
    ids = snap.pending_call_ids
    while True:
        settled: dict[int, Any] = {}
        live: list[asyncio.Future[Any]] = []
        for sandbox_id in ids:
            if sandbox_id in run.held:
                continue
            task = run.waiting.get(sandbox_id)
            if task is None:
                raise RuntimeError(f"the program waits on call {sandbox_id}, which the host "
                                   "never started")
            if not task.done():
                live.append(task)
                continue
            del run.waiting[sandbox_id]
            exc = task.exception()
            if exc is None:
                settled[sandbox_id] = {"return_value": task.result()}
            elif isinstance(exc, Held):
                exc.sandbox_id = sandbox_id
                run.held[sandbox_id] = exc
            else:
                settled[sandbox_id] = {"exception": exc}
        if settled:
            return await snap.resume(settled)
        if not live:
            run.pause_here(snap, tuple(ids))
            raise PausedAgain
        await asyncio.wait(live, return_when=asyncio.FIRST_COMPLETED)


async def _sleep(run: Run, snap: Any, awaited: bool) -> Any:
    """A sleep, within the program's sleep budget (its wall time, all sleeps together); past
    it the program is stopped, even if it catches the ``TimeoutError``."""
    delay = max(float(snap.args[0]) if snap.args else 0.0, 0.0)
    run.slept += delay
    limit = run.settings.wall_time
    if run.slept > limit:
        message = f"sleep limit exceeded: {delay:g}s > {limit:g}s"
        run.stopped = run.stopped or CodeError(
            "limit", message, hint=f"programs may sleep {limit:g} s in all")
        return await snap.resume({"exception": TimeoutError(message)})
    if awaited:
        run.waiting[snap.call_id] = asyncio.ensure_future(asyncio.sleep(delay))
        return await snap.resume({"future": ...})
    await asyncio.sleep(delay)
    return await snap.resume({"return_value": None})


async def continue_paused(run: Run, snapshot: Any, paused: PausedRun,
                          decide: Callable[[], Awaitable[Mapping[str, ToolResult]]]) -> Any:
    """Check that the restored ``snapshot`` waits on exactly ``paused``'s held calls, then
    ``decide`` them (their results, by approval id), answer them, and run the program to its
    end; its value. A mismatch raises before anything is decided or run."""
    from pydantic_monty import AsyncFunctionSnapshot, AsyncFutureSnapshot

    if type(snapshot) is AsyncFunctionSnapshot:
        ids = [snapshot.call_id]
    elif type(snapshot) is AsyncFutureSnapshot:
        ids = sorted(snapshot.pending_call_ids)
    else:
        raise RuntimeError(f"a paused program restored as {type(snapshot).__name__}")
    held_ids = [h.sandbox_id for h in paused.held]
    if None in held_ids and len(ids) == len(held_ids):  # paused before calls had sandbox ids
        held_ids = list(ids)
    if sorted(held_ids, key=lambda i: i or 0) != ids:
        raise RuntimeError(f"the paused program waits on {len(ids)} calls, but "
                           f"{len(paused.held)} were held; nothing was resumed")
    decided = await decide()
    for sandbox_id, held in zip(held_ids, paused.held):
        assert sandbox_id is not None
        try:
            value = run.resumed(held, decided[held.approval.id])
        except Held as again:
            again.sandbox_id = sandbox_id
            run.held[sandbox_id] = again
            continue
        except Exception as exc:
            run.waiting[sandbox_id] = _done(False, exc)
            continue
        run.waiting[sandbox_id] = _done(True, value)
    if type(snapshot) is AsyncFunctionSnapshot:
        if snapshot.call_id in run.held:  # undecided still
            run.pause_here(snapshot, (snapshot.call_id,))
            raise PausedAgain
        # Answered through the sandbox's future for the call, like a gathered one.
        snap = await snapshot.resume({"future": ...})
    else:
        snap = snapshot
    return await drive(run, snap)


def _done(ok: bool, value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
    return future
