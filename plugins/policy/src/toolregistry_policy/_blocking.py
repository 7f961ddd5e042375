"""Blocking approval: a handler (any callable, sync or async, or the terminal) answers an
``ask`` while the call waits; its answer (:class:`Verdict`), its time limit, and the calls a
person approved with changed arguments (:class:`EditGrants`).

The question is a coroutine (:func:`ask_handler`) that ``authorize`` returns: the kernel awaits
it on the caller's event loop on the async API (an async handler runs there, a sync one on a
helper thread, and the loop goes on meanwhile) and runs it to completion on the sync API."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry.errors import ConfigError
from toolregistry.plugin import import_target, log
from toolregistry.types import ApprovalRequest, Decision

if TYPE_CHECKING:
    from toolregistry import ToolCall

    from ._decider import ToolPolicy
    from ._policy import Policy

__all__ = ["EditGrants", "Verdict", "ask_handler", "canonical", "load_handler"]


@frozen
class Verdict:
    """A person's answer to an approval request, as a handler returns it (a handler may
    also return ``True`` / ``False``). Build with :meth:`approve` and :meth:`deny`."""

    approved: bool
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None
    approver: str | None = None

    @classmethod
    def approve(cls, arguments: Mapping[str, Any] | None = None, *,
                approver: str | None = None) -> Verdict:
        """Let the call run (with ``arguments`` instead of the model's, when given)."""
        return cls(True, None, dict(arguments) if arguments is not None else None, approver)

    @classmethod
    def deny(cls, reason: str | None = None, *, approver: str | None = None) -> Verdict:
        """Refuse the call; ``reason`` is what the model reads."""
        return cls(False, reason, None, approver)


class EditGrants:
    """Calls a person approved with changed arguments, each approved once: the kernel has
    validated the model's arguments already, so the model is told to make the changed call,
    and that call is then allowed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left: dict[tuple[str, str], int] = {}

    def __bool__(self) -> bool:
        return bool(self._left)

    def add(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Approve one call of ``name`` with ``arguments``; returns them as text."""
        edited = canonical(arguments)
        with self._lock:
            key = (name, edited)
            self._left[key] = self._left.get(key, 0) + 1
        return edited

    def take(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether a call of ``name`` with ``arguments`` was approved (used up if so)."""
        key = (name, canonical(arguments))
        with self._lock:
            left = self._left.get(key, 0)
            if not left:
                return False
            if left == 1:
                del self._left[key]
            else:
                self._left[key] = left - 1
        return True


async def ask_handler(policy: Policy, plan: ToolPolicy, call: ToolCall,
                      request: ApprovalRequest) -> Decision:
    """Ask the policy's handler about a held call, on the running loop (the kernel awaits
    this on the caller's loop on the async API, and runs it to completion on the sync API):
    its decision (audited with the outcome that stands, by ``Policy.authorized``; the
    person's answer is audited here)."""
    name = plan.tool.name
    timeout = policy.settings.handler_timeout
    try:
        verdict = as_verdict(await call_handler(policy.handler, request, timeout))
    except TimeoutError:
        why = f"nobody answered the approval request within {timeout:g} s"
        return policy.decided(call, Decision.deny(why, rule=request.rule), None, request.id)
    except Exception as exc:
        why = f"the approval handler failed ({type(exc).__name__}: {exc})"
        log.warning("policy.handler_failed", tool=name, call_id=call.id, error=why)
        return policy.decided(call, Decision.deny(why, rule=request.rule), None, request.id)
    if not verdict.approved:
        why = verdict.reason or "a person declined it"
        policy.audit.record(name, call.id, "reject", request.rule, why, verdict.approver,
                            request.id)
        return policy.decided(call, Decision.deny(why, rule="approval"), verdict.approver,
                              request.id)
    policy.audit.record(name, call.id, "approve", request.rule, None, verdict.approver,
                        request.id)
    if verdict.arguments is not None and dict(verdict.arguments) != dict(request.arguments):
        # The kernel has validated the model's arguments already: the changed call is
        # approved for once, and the model is told to make it.
        edited = policy.edit_grants.add(name, verdict.arguments)
        why = (f"a person approved it with changed arguments: call {name!r} again with "
               f"exactly these arguments, which are approved once: {edited}")
        return policy.decided(call, Decision.deny(why, rule="approval"), verdict.approver,
                              request.id)
    return policy._allow(plan, call, "approval", verdict.approver, request.id)


def _is_async(handler: Any) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        inspect.getattr_static(type(handler), "__call__", None))


async def call_handler(handler: Callable[[ApprovalRequest], Any] | None,
                       request: ApprovalRequest, timeout: float) -> Any:
    """The handler's answer within ``timeout`` seconds, waited for on the running loop
    without holding it: an async handler is awaited there (cancelled at the time limit); a
    sync one runs on a helper thread (left to finish on its own, as a daemon, when it takes
    too long), and an awaitable it returns is awaited on the loop."""
    assert handler is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if _is_async(handler):
        return await asyncio.wait_for(handler(request), timeout)
    answer: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if answer.done():
            return
        if error is None:
            answer.set_result(value)
        else:
            answer.set_exception(error if isinstance(error, Exception) else
                                 RuntimeError(f"{type(error).__name__}"))

    def run() -> None:
        try:
            value, error = handler(request), None
        except BaseException as exc:
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is gone: nobody waits any more
            if inspect.iscoroutine(value):
                value.close()

    helper = threading.Thread(target=contextvars.copy_context().run, args=(run,),
                              name="toolregistry-approval", daemon=True)
    helper.start()
    out = await asyncio.wait_for(answer, timeout)
    if inspect.isawaitable(out):  # a sync callable that returned an awaitable
        out = await asyncio.wait_for(out, max(0.0, deadline - loop.time()))
    return out


def as_verdict(answer: Any) -> Verdict:
    if isinstance(answer, Verdict):
        return answer
    if answer is True:
        return Verdict.approve()
    if answer is False or answer is None:
        return Verdict.deny()
    raise TypeError(f"an approval handler returns True, False or a Verdict, not "
                    f"{type(answer).__name__}")


def canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def load_handler(spec: str) -> Callable[[ApprovalRequest], Any]:
    if spec == "terminal":
        from ._terminal import TerminalApprover

        return TerminalApprover()
    handler = import_target(spec, "[tool.toolregistry.plugins.policy] handler")
    if not callable(handler):
        raise ConfigError(f"[tool.toolregistry.plugins.policy] handler {spec!r} is not "
                          "callable")
    return handler  # type: ignore[no-any-return]

