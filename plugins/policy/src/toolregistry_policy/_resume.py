"""Resuming decided calls: the approvals a ``resume`` claims (each runs once), the calls it
runs through the registry's normal path with the person's approval standing for ``ask``
(:data:`granted`), and the results it answers with, in the order of its items."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from toolregistry.plugin import approval_id_of
from toolregistry.types import ApprovalRequest, ToolCall, ToolResult

from ._approvals import Approval, ApprovalError
from ._blocking import canonical

if TYPE_CHECKING:
    from ._policy import Policy

__all__ = ["GRANT", "Resumption", "claim", "granted", "pending_result"]

GRANT = "policy.grant"

# The approvals a running `resume` grants, by approval id (each call it runs carries its
# approval's id in `call.extra[GRANT]`): authorize lets exactly these calls through an `ask`
# rule (the contextvar is set around the registry call, so it reaches the call's own context
# on every path and nothing else).
granted: contextvars.ContextVar[Mapping[str, Approval] | None] = contextvars.ContextVar(
    "toolregistry_policy_granted", default=None)


def claim(policy: Policy, items: Iterable[Any]) -> Resumption:
    """Claim the decided approvals among ``items`` (an :class:`ApprovalError`, and nothing
    claimed, when one is unknown, given twice or used already)."""
    slots: list[ToolResult | str] = []
    for item in items:
        approval_id = approval_id_of(item)
        slots.append(item if approval_id is None else approval_id)
    ids = [s for s in slots if isinstance(s, str)]
    seen: set[str] = set()
    for approval_id in ids:
        if approval_id in seen:
            raise ApprovalError(f"approval {approval_id!r} is given twice; it runs once")
        seen.add(approval_id)
    approvals = {approval_id: policy.get(approval_id) for approval_id in ids}
    for approval in approvals.values():
        if approval.status in ("running", "done"):
            raise ApprovalError(
                f"approval {approval.id!r} ({approval.tool}) was used already "
                f"({approval.outcome or approval.status}); nothing runs twice")
    claimed: list[tuple[Approval, Approval]] = []
    for approval in approvals.values():
        if approval.status == "pending":
            continue
        new = attrs.evolve(approval, status="running") if approval.status == "approved" \
            else attrs.evolve(approval, status="done", outcome="denied")
        kept = policy.store.transition(approval.id, (approval.status,), new)
        if kept is not new:
            for old, _ in claimed:  # give back what was claimed: nothing runs
                policy.store.transition(old.id, ("running", "done"), old)
            raise ApprovalError(f"approval {approval.id!r} ({approval.tool}) was used by "
                                "another resume meanwhile; nothing runs twice")
        claimed.append((approval, new))
    for _, new in claimed:
        policy._notify(new)
    return Resumption(slots, approvals)


class Resumption:
    """One ``resume``: the slots (results passed through, approval ids), the approvals, and
    the calls to run."""

    def __init__(self, slots: list[ToolResult | str], approvals: dict[str, Approval]) -> None:
        self.slots = slots
        self.approvals = approvals
        # Two approvals may share a model's call id (two turns both used ``call_1``): each
        # call carries its approval's id (GRANT), and results are matched by position.
        self.calls: list[ToolCall] = []
        self.grants: dict[str, Approval] = {}
        for approval in approvals.values():
            if approval.status == "approved":
                self.calls.append(ToolCall(approval.tool, approval.effective_arguments,
                                           approval.request.call_id,
                                           extra={GRANT: approval.id}))
                self.grants[approval.id] = approval

    def finish(self, policy: Policy, results: list[ToolResult]) -> list[ToolResult]:
        ran = dict(zip([c.extra[GRANT] for c in self.calls], results))
        out: list[ToolResult] = []
        for slot in self.slots:
            if isinstance(slot, ToolResult):
                out.append(slot)
                continue
            approval = self.approvals[slot]
            request = approval.request
            if approval.status == "approved":
                result = ran[approval.id]
                result.call_id = request.call_id
                policy._finish(approval, result)
                if approval.edited and not result.is_error:
                    note_edit(result, approval)
                result.metadata["approval"] = {"id": approval.id, "approver": approval.approver,
                                               "edited": approval.edited}
            elif approval.status == "denied":
                why = approval.note or "a person declined it"
                result = ToolResult(request.call_id, request.tool,
                                    f"Error: the call to {request.tool!r} was denied: {why}. It "
                                    "did not run; do not call it again with these arguments.",
                                    is_error=True, error_kind="denied", reason=request.reason)
                policy.audit.record(request.tool, request.call_id, "deny", "approval", why,
                                    approval.approver, approval.id)
            else:
                result = pending_result(request)
            out.append(result)
        return out


def pending_result(request: ApprovalRequest) -> ToolResult:
    """The result of a call still waiting for approval (as the kernel answers it)."""
    why = f" ({request.message})" if request.message else ""
    result = ToolResult(request.call_id, request.tool,
                        f"Error: the call to {request.tool!r} waits for a person's approval"
                        f"{why}; it has not run (approval {request.id}).", is_error=True,
                        error_kind="approval_required", reason=request.reason)
    result.approval = request
    return result


def note_edit(result: ToolResult, approval: Approval) -> None:
    note = (f"(A person approved this call with changed arguments: "
            f"{canonical(approval.effective_arguments)}.)")
    if isinstance(result.content, str):
        result.content = f"{note}\n{result.content}"
    else:
        result.content = [{"type": "text", "text": note}, *result.content]
