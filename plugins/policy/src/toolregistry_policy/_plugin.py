"""Hook implementations of the policy plugin.

* ``call_hooks``: ``authorize`` concerns only tools whose calls are not allowed statically
  (a rule or budget applies to them), and ``call_observer`` only those that may ask a person;
  the calls of every other tool pay nothing for this plugin.
* ``authorize``: the rules' decision for the call (allow, deny with a reason, or held for
  approval) and budgets.
* ``authorized``: the decision that stands (another plugin's may win): the audit record, and
  the budget given back when the call does not run after all.
* ``call_observer``: settles the approvals store when a call that may ask ends.
* ``approval_queue``: the approvals queue, listed, decided and resumed through the kernel's
  ``registry.approvals``.
* ``on_change``: tools denied whatever their arguments are disabled as they arrive
  (``hide-denied``), so that the model is not shown them.
* ``settings_model``: ``[tool.toolregistry.plugins.policy]``.

The policy of a registry is made on first use (``get_policy``) and lives in
``registry.plugin_state("policy")``, which only this plugin reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import hookimpl

from . import get_policy  # the package's light __init__, loaded before this module

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolCall, ToolRegistry, ToolResult
    from toolregistry.events import ChangeEvent
    from toolregistry.types import Decision


def _policy(registry: ToolRegistry) -> Any:
    return get_policy(registry)


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.policy]``, validated when the configuration is loaded."""
    from ._settings import PolicySettings

    return PolicySettings


@hookimpl
def call_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str]:
    """The plugin's hooks that concern ``tool`` (none for a static allow)."""
    return _policy(registry).hooks_for(tool)  # type: ignore[no-any-return]


@hookimpl
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Hide the tools that are denied outright as they arrive or change (``hide-denied``)."""
    if event.kind in ("register", "metadata", "rename", "namespace"):
        _policy(registry).hide_denied(event.names)
    elif event.kind == "enable":
        _policy(registry).enabled_by_hand(event.names)


@hookimpl
def authorize(registry: ToolRegistry, tool: Tool, call: ToolCall, arguments: Mapping[str, Any]
              ) -> Decision | Awaitable[Decision]:
    """The policy's decision for one call, on the values its tool will receive (awaitable
    when a blocking handler asks)."""
    return _policy(registry).authorize(tool, call, arguments)  # type: ignore[no-any-return]


@hookimpl
def authorized(registry: ToolRegistry, tool: Tool, call: ToolCall, decision: Decision) -> None:
    """The decision that stands for one call: audited once, budgets kept in step."""
    _policy(registry).authorized(tool, call, decision)


@hookimpl
def approval_queue(registry: ToolRegistry) -> Any:
    """The policy's approvals queue, for ``registry.approvals`` (code mode, the inspector,
    the application): the :class:`~toolregistry_policy.Policy` itself."""
    return _policy(registry)


class _Observer:
    __slots__ = ("policy",)

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def call_started(self, call: ToolCall) -> None:
        return None

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        if call.extra:
            self.policy.observed(call, result)


@hookimpl
def call_observer(registry: ToolRegistry, tool: Tool) -> _Observer | None:
    """Settle the approvals store when a call of a tool that may ask ends."""
    policy = _policy(registry)
    return _Observer(policy) if policy.plan(tool).asks else None
