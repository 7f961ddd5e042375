"""Authorization decisions still to come: the awaitables ``authorize`` implementations
returned for one call, awaited in pluggy's order (for the hook façade, :mod:`._hooks`)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._log import log
from .types import Decision

if TYPE_CHECKING:
    from ._hooks import Hooks
    from .tool import Tool
    from .types import ToolCall, ToolResult

__all__ = ["Deciding", "close_pending", "failed_authorize"]


class Deciding:
    """The decisions of ``authorize`` implementations about one call when some are still to
    come (they returned awaitables, e.g. waiting for a person). :meth:`result` awaits them in
    pluggy's order and answers as :meth:`Hooks.authorize` does: the async API awaits it on
    the caller's loop before the call runs (the loop stays free meanwhile), the sync API runs
    it to completion in the calling thread (a helper thread when a loop runs there).

    Error policy: an awaitable that raises denies the call, naming the error (logged as
    ``hook.failed``); once a decision denies, the awaitables left are closed unawaited.
    """

    __slots__ = ("call", "decisions", "hooks", "tool")

    def __init__(self, hooks: Hooks, tool: Tool, call: ToolCall, decisions: list[Any]) -> None:
        self.hooks = hooks
        self.tool = tool
        self.call = call
        self.decisions = decisions

    async def result(self) -> ToolResult | None:
        """The call's refusal (a denied or pending result), or ``None``: it runs."""
        got: list[Any] = []
        left = list(self.decisions)
        try:
            while left:
                decision = left.pop(0)
                if not isinstance(decision, Decision) and inspect.isawaitable(decision):
                    try:
                        decision = await decision
                    except Exception as exc:
                        close_pending(left)
                        return self.hooks._refusal(self.tool, self.call,
                                                  failed_authorize(self.tool, exc))
                    if decision is None:
                        continue
                got.append(decision)
                if isinstance(decision, Decision) and decision.kind == "deny":
                    close_pending(left)
                    break
        finally:
            close_pending(left)  # cancelled meanwhile: what was not awaited is closed
        return self.hooks._refusal(self.tool, self.call, self.hooks._combined(self.tool, got))

    def close(self) -> None:
        """Close the coroutines among the decisions that were never awaited (the call will
        not run: its batch was cancelled, say)."""
        close_pending(self.decisions)


def failed_authorize(tool: Tool, exc: Exception) -> Decision:
    """The denial of a call whose authorization failed with ``exc`` (logged)."""
    log.warning("hook.failed", hook="authorize", tool=tool.name,
                error=f"{type(exc).__name__}: {exc}")
    return Decision.deny(f"authorization failed ({type(exc).__name__}: {exc})")


def close_pending(decisions: Sequence[Any]) -> None:
    """Close the coroutines among ``decisions`` that will not be awaited."""
    for decision in decisions:
        close = getattr(decision, "close", None)
        if inspect.iscoroutine(decision) and close is not None:
            close()
