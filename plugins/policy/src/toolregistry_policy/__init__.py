"""toolregistry-policy: permission rules, human approval (blocking or deferred), budgets and
an audit trail for the tool calls of a registry.

Rules come from ``[tool.toolregistry.plugins.policy]`` or from code
(``configure(registry, rules=[Rule(...)])``); the first that matches a call decides: allow,
deny (with a reason the model reads) or ask a person. ``get_policy(registry)`` is the
registry's :class:`Policy`: its approvals queue (``pending()``, ``approve()``, ``deny()``,
``resume()``), its ``audit`` trail and its budgets. See ``docs/policy.md``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._approvals import (
        Approval,
        ApprovalError,
        ApprovalStore,
        MemoryStore,
        ServerStore,
        SQLiteStore,
    )
    from ._audit import AuditLog, AuditRecord
    from ._blocking import Verdict
    from ._policy import Policy
    from ._resume import pending_result
    from ._rules import ArgumentCheck, Rule
    from ._settings import PolicySettings
    from ._terminal import TerminalApprover

__all__ = [
    "Approval",
    "ApprovalError",
    "ApprovalStore",
    "ArgumentCheck",
    "AuditLog",
    "AuditRecord",
    "MemoryStore",
    "Policy",
    "PolicySettings",
    "Rule",
    "SQLiteStore",
    "ServerStore",
    "TerminalApprover",
    "Verdict",
    "configure",
    "get_policy",
    "pending_result",
]

# Loaded on first use, so that loading the plugin (every registry does) stays cheap.
_LAZY = {
    "Approval": "._approvals",
    "ApprovalError": "._approvals",
    "ApprovalStore": "._approvals",
    "MemoryStore": "._approvals",
    "SQLiteStore": "._approvals",
    "ServerStore": "._approvals",
    "AuditLog": "._audit",
    "AuditRecord": "._audit",
    "Policy": "._policy",
    "Verdict": "._blocking",
    "pending_result": "._resume",
    "ArgumentCheck": "._rules",
    "Rule": "._rules",
    "PolicySettings": "._settings",
    "TerminalApprover": "._terminal",
}
__getattr__ = lazy_exports(__name__, _LAZY)

_create_lock = threading.Lock()


def get_policy(registry: ToolRegistry) -> Policy:
    """The registry's policy, made on first use from its configuration."""
    state = registry.plugin_state("policy")
    policy = state.get("policy")
    if policy is None:
        from ._policy import Policy
        from ._settings import PLUGIN_NAME, PolicySettings

        with _create_lock:
            policy = state.get("policy")
            if policy is None:
                settings = registry.plugin_settings(PLUGIN_NAME, PolicySettings)
                policy = state["policy"] = Policy(registry, settings)
    return policy


def configure(registry: ToolRegistry, **options: Any) -> Policy:
    """Change ``registry``'s policy in code (see :meth:`Policy.configure`):
    ``configure(registry, rules=[Rule("ask", tools=["send_*"])], default="allow")``."""
    return get_policy(registry).configure(**options)
