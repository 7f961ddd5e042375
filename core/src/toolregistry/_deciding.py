"""Authorization decisions still to come: the awaitables ``authorize`` implementations
returned for one call, awaited in pluggy's order (for the hook façade, :mod:`._hooks`)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._log import log
from .types import Decision

if TYPE_CHECKING:
    from ._authorizing import Authorizing
    from ._hookcalls import HookCall
    from ._registry import ToolRegistry
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
    ``hook.failed``); once a decision denies, the awaitables left are closed unawaited. The
    ``authorized`` implementations (``authorized``) are told the decision that stands, once:
    when it came, or as a ``cancelled`` deny when the call was dropped before.
    """

    __slots__ = ("authorized", "call", "decisions", "hooks", "registry", "tool")

    def __init__(self, hooks: Authorizing, tool: Tool, call: ToolCall, decisions: list[Any],
                 registry: ToolRegistry, authorized: HookCall | None) -> None:
        self.hooks = hooks
        self.tool = tool
        self.call = call
        self.decisions = decisions
        self.registry = registry
        self.authorized = authorized

    def _settle(self, decision: Decision | None) -> ToolResult | None:
        authorized, self.authorized = self.authorized, None  # told once
        return self.hooks.settle(authorized, self.registry, self.tool, self.call, decision)

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
                        return self._settle(failed_authorize(self.tool, exc))
                    if decision is None:
                        continue
                got.append(decision)
                if isinstance(decision, Decision) and decision.kind == "deny":
                    close_pending(left)
                    break
        finally:
            close_pending(left)  # cancelled meanwhile: what was not awaited is closed
        return self._settle(self.hooks._combined(self.tool, got))

    def close(self) -> None:
        """Close the coroutines among the decisions that were never awaited (the call will
        not run: its batch was cancelled, say)."""
        close_pending(self.decisions)
        if self.authorized is not None:
            self._settle(Decision.deny("the call was cancelled before it was decided",
                                       rule="cancelled"))


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
