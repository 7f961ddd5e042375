"""A call held for approval as a LangGraph ``interrupt()``, and its resumption.

A pending result (``result.pending``: the kernel's ``approval_required`` kind, whichever plugin
held the call) pauses the graph with an interrupt whose value is a JSON record of the
:class:`~toolregistry.types.ApprovalRequest` (``type`` = :data:`APPROVAL_INTERRUPT`). The
application resumes the graph with ``Command(resume=answer)``; LangGraph runs the interrupted
node again, so the call is sent again as it was, still pending, and this time ``interrupt()``
returns ``answer``. Then:

* with a ``decide(approval, answer)`` callable, the application applies the answer through the
  plugin that holds the call and returns the call's final result (or ``None`` to send the call
  again);
* without one (the decision was made elsewhere, e.g. in the inspector, before resuming), the
  call is sent again: the holding plugin lets a call it approved run and answers a denied one
  with its reason; a call nobody decided yet pauses the graph again.

langgraph is imported only when a pending call has to wait.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from toolregistry.types import ApprovalRequest, ToolResult

APPROVAL_INTERRUPT = "toolregistry.approval"
"""The ``type`` of the value of an interrupt raised for a pending approval."""

Decide = Callable[[ApprovalRequest, Any], "ToolResult | Awaitable[ToolResult | None] | None"]
"""``decide(approval, answer)``: apply the resume value ``answer`` to the held call; its final
result, or ``None`` to send the call again."""


def approval_interrupt_value(result: ToolResult) -> dict[str, Any]:
    """The interrupt value for a pending ``result``: ``type``, ``approval`` (the
    :class:`~toolregistry.types.ApprovalRequest` as a dict), ``tool_call_id``, ``tool`` and
    ``message`` (what the model would read)."""
    assert result.approval is not None
    return {"type": APPROVAL_INTERRUPT, "approval": result.approval.to_dict(),
            "tool_call_id": result.call_id, "tool": result.name, "message": result.text}


def _interrupt(result: ToolResult) -> Any:
    try:
        from langgraph.types import interrupt
    except ImportError as exc:
        raise ImportError(
            f"the call to {result.name!r} waits for approval, and approvals='interrupt' needs "
            "LangGraph: pip install langgraph (or export with approvals='message')") from exc
    return interrupt(approval_interrupt_value(result))


def _held(result: ToolResult) -> ApprovalRequest | None:
    return result.approval if result.pending else None


def wait_approved(result: ToolResult, again: Callable[[], ToolResult],
                  decide: Decide | None = None) -> ToolResult:
    """``result``, or, while it is pending, what the call gives once the graph is resumed
    (``decide``'s result, else ``again()``: the call sent again)."""
    while (approval := _held(result)) is not None:
        answer = _interrupt(result)
        decided = decide(approval, answer) if decide is not None else None
        if inspect.isawaitable(decided):
            raise TypeError("decide returned an awaitable on the sync path; use the async API "
                            "(ainvoke) or a plain function")
        if decided is not None:
            return decided
        result = again()
    return result


async def await_approved(result: ToolResult, again: Callable[[], Awaitable[ToolResult]],
                         decide: Decide | None = None) -> ToolResult:
    """Async twin of :func:`wait_approved` (``decide`` may be a coroutine function)."""
    while (approval := _held(result)) is not None:
        answer = _interrupt(result)
        decided = decide(approval, answer) if decide is not None else None
        if inspect.isawaitable(decided):
            decided = await decided
        if decided is not None:
            return decided
        result = await again()
    return result


def _again(approval: ApprovalRequest, context: Mapping[str, Any] | None,
           timeout: float | None) -> dict[str, Any]:
    return {"name": approval.tool, "arguments": dict(approval.arguments), "context": context,
            "timeout": timeout, "call_id": approval.call_id}


def interrupt_for_approval(registry: Any, result: ToolResult, *, decide: Decide | None = None,
                           context: Mapping[str, Any] | None = None,
                           timeout: float | None = None) -> ToolResult:
    """For a LangGraph node of one's own: ``result`` as it is unless it is pending; a pending
    one pauses the graph (``interrupt()``) until it is resumed, then gives ``decide``'s
    result, or the call sent again through ``registry`` with the arguments it was held with.
    Returns the final result."""
    approval = _held(result)
    if approval is None:
        return result
    return wait_approved(
        result, lambda: registry.invoke(**_again(approval, context, timeout)), decide)


async def ainterrupt_for_approval(registry: Any, result: ToolResult, *,
                                  decide: Decide | None = None,
                                  context: Mapping[str, Any] | None = None,
                                  timeout: float | None = None) -> ToolResult:
    """Async twin of :func:`interrupt_for_approval` (the call is sent again with
    ``registry.ainvoke``; ``decide`` may be a coroutine function)."""
    approval = _held(result)
    if approval is None:
        return result
    return await await_approved(
        result, lambda: registry.ainvoke(**_again(approval, context, timeout)), decide)
