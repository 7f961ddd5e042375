"""Driving a resumed program: the sandbox's state is loaded from a paused run's dump and
re-announces the held calls (one call awaited alone, or the futures of gathered ones); each
is answered with what became of it, then the program runs on through the sandbox's own
snapshots, its tool calls made as usual (and held again, if one needs approval)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._bridge import Held

if TYPE_CHECKING:
    from toolregistry.types import ToolResult

    from ._bridge import Run
    from ._paused import PausedRun

__all__ = ["PausedAgain", "continue_paused"]


async def continue_paused(run: Run, snapshot: Any, paused: PausedRun,
                          decided: Mapping[str, ToolResult]) -> Any:
    """Answer ``paused``'s held calls in the restored ``snapshot`` with ``decided`` (their
    results, by approval id), then run the program to its end and return its value."""
    from pydantic_monty import AsyncFunctionSnapshot, AsyncFutureSnapshot, MontyComplete

    answers: list[tuple[bool, Any] | Held] = []
    for held in paused.held:
        try:
            answers.append((True, run.resumed(held, decided[held.approval.id])))
        except Held as again:
            answers.append(again)
        except Exception as exc:
            answers.append((False, exc))
    # Sandbox ids of calls still held (their futures stay unanswered in the sandbox).
    still: set[int] = set()
    if type(snapshot) is AsyncFunctionSnapshot:  # paused at a call awaited alone
        (answer,) = answers  # decided: an undecided lone call is not loaded at all
        if isinstance(answer, Held):
            raise RuntimeError("a held call that is still pending cannot be answered")
        run.replay = answer  # the host function answers it, so the sandbox awaits it
        snap = await snapshot.resume_auto()
    elif type(snapshot) is AsyncFutureSnapshot:
        ids = sorted(snapshot.pending_call_ids)
        if len(ids) != len(paused.held):
            raise RuntimeError(f"the paused program waits on {len(ids)} calls, but "
                               f"{len(paused.held)} were held")
        settled: dict[int, Any] = {}
        for sandbox_id, answer in zip(ids, answers):
            if isinstance(answer, Held):
                run.held[answer.seq] = answer
                still.add(sandbox_id)
            else:
                ok, value = answer
                settled[sandbox_id] = {"return_value": value} if ok else {"exception": value}
        snap = await snapshot.resume(settled)
    else:
        raise RuntimeError(f"a paused program restored as {type(snapshot).__name__}")
    while type(snap) is not MontyComplete:
        if type(snap) is AsyncFutureSnapshot and still and set(snap.pending_call_ids) <= still:
            # Every task waits on calls held still: pause again, here.
            run.pausing = snap.dump()
            run.pause_at = snap.position.start
            raise PausedAgain
        snap = await snap.resume_auto()
    return snap.output


class PausedAgain(Exception):
    """The resumed program paused again at calls still held."""
