"""The ``authorize`` and ``authorized`` hooks' calls: the decisions of the implementations that
concern a tool combined (deny overrides), a refused or held call's result, a decision still to
come held as a :class:`~._deciding.Deciding`, and the decision that stands told to
``authorized``.

:class:`Authorizing` is that part of the hook façade (``_hooks.Hooks``), with the error policy
of every hook call (``_failed``, the ``hook.failed`` event).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._deciding import Deciding, close_pending, failed_authorize
from ._log import log
from ._results import error_result
from .types import ApprovalRequest, Decision, current_caller

if TYPE_CHECKING:
    from ._hookcalls import HookCall
    from ._registry import ToolRegistry
    from .tool import Tool
    from .types import ToolCall, ToolResult

__all__ = ["Authorizing"]

_ALLOWED = Decision.allow()  # what stands when no implementation had an opinion


class Authorizing:
    """Authorization through the hooks (see the module docstring)."""

    @staticmethod
    def _failed(hook: str, exc: BaseException, **ctx: Any) -> None:
        log.warning("hook.failed", hook=hook, error=f"{type(exc).__name__}: {exc}", **ctx)

    def authorize(self, caller: HookCall, registry: ToolRegistry, tool: Tool, call: ToolCall,
                  arguments: Mapping[str, Any], authorized: HookCall | None = None
                  ) -> ToolResult | Deciding | None:
        """Ask the compiled ``authorize`` implementations of ``tool`` about ``call``, whose
        tool will receive ``arguments`` (the validated values), and combine their decisions,
        deny-overrides (:meth:`Decision.combine`): ``None`` lets the call run; a ``denied``
        result, or a pending one (``approval_required``) carrying its
        :class:`ApprovalRequest`, answers it without running it. When an implementation
        answered with an awaitable (a decision still to come, e.g. a person's), and no other
        denied the call already, a :class:`Deciding` holds them all: the async API awaits it
        on the caller's loop, the sync API runs it to completion. The compiled ``authorized``
        implementations, if any, are told the decision that stands (:meth:`authorized`).

        Error policy: an exception, or an answer that is not a ``Decision``, is logged
        (``hook.failed``) and denies the call, naming the error; nothing runs.
        """
        try:
            out = caller(registry=registry, tool=tool, call=call, arguments=arguments)
        except Exception as exc:
            return self.settle(authorized, registry, tool, call, failed_authorize(tool, exc))
        if isinstance(out, Decision):  # one implementation: the usual case
            return self.settle(authorized, registry, tool, call, out)
        decisions = out if isinstance(out, list) else ([] if out is None else [out])
        if any(not isinstance(d, Decision) and inspect.isawaitable(d) for d in decisions):
            if not any(isinstance(d, Decision) and d.kind == "deny" for d in decisions):
                return Deciding(self, tool, call, decisions, registry, authorized)
            close_pending(decisions)  # denied anyway: nobody is asked
            decisions = [d for d in decisions if isinstance(d, Decision)]
        return self.settle(authorized, registry, tool, call, self._combined(tool, decisions))

    def settle(self, authorized: HookCall | None, registry: ToolRegistry, tool: Tool,
               call: ToolCall, decision: Decision | None) -> ToolResult | None:
        """The result of a call that ``decision`` does not let run (``None``: it runs),
        after telling the ``authorized`` implementations (if any) that it stands.

        Error policy: that of :meth:`authorized` (the decision stands whatever they do).
        """
        if authorized is not None:
            self.authorized(authorized, registry, tool, call,
                            _ALLOWED if decision is None else decision)
        if decision is None or decision.kind == "allow":
            return None
        return self._refusal(tool, call, decision)

    def authorized(self, caller: HookCall, registry: ToolRegistry, tool: Tool, call: ToolCall,
                   decision: Decision) -> None:
        """Tell the compiled ``authorized`` implementations of ``tool`` the decision that
        stands for ``call``.

        Error policy: an exception is logged (``hook.failed``) and ignored: the decision
        stands (the call runs or not as decided).
        """
        try:
            caller(registry=registry, tool=tool, call=call, decision=decision)
        except Exception as exc:
            self._failed("authorized", exc, tool=tool.name)

    @staticmethod
    def _combined(tool: Tool, decisions: Sequence[Any]) -> Decision | None:
        try:
            for decision in decisions:
                if not isinstance(decision, Decision):
                    raise TypeError(f"authorize returned {type(decision).__name__}, not a "
                                    "Decision (or None)")
            return Decision.combine(decisions)
        except Exception as exc:
            return failed_authorize(tool, exc)

    @staticmethod
    def _refusal(tool: Tool, call: ToolCall, decision: Decision | None) -> ToolResult | None:
        """The result of a call that ``decision`` does not let run (``None``: it runs)."""
        if decision is None or decision.kind == "allow":
            return None
        name = tool.name
        if decision.kind == "deny":
            why = decision.reason or "not allowed"
            return error_result(call.id, name, "denied",
                                f"the call to {name!r} was denied: {why}. It did not run; do "
                                "not call it again with these arguments.", reason=call.reason)
        arguments = dict(call.arguments or {})
        caller = current_caller()
        request = ApprovalRequest(
            decision.approval_id or ApprovalRequest.stable_id(name, call.id, arguments, caller),
            name, arguments, call.id, call.reason, decision.reason, decision.rule, caller)
        why = f" ({decision.reason})" if decision.reason else ""
        result = error_result(call.id, name, "approval_required",
                              f"the call to {name!r} waits for a person's approval{why}; it "
                              f"has not run (approval {request.id}).", reason=call.reason)
        result.approval = request
        return result
