"""``[tool.toolregistry.plugins.policy]``: the plugin's options, validated by pydantic (the
rules and budgets tables are checked by the policy itself, so that errors name the rule)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolregistry.plugin import ConfigPath

PLUGIN_NAME = "policy"


class PolicySettings(BaseModel):
    """Options of the policy plugin (TOML keys use dashes: ``handler-timeout``).

    ``default``: the decision when no rule matches (``allow``, ``deny`` or ``ask``).
    ``rules``: the rules, first match wins (see docs/policy.md). ``handler``: who answers
    ``ask`` at once (blocking): ``"terminal"`` or ``"pkg.mod:fn"``; without one, ``ask``
    calls are deferred (a pending result with an approval id). ``handler_timeout``: seconds a
    handler may take before the call is denied. ``store``: a store URL (``sqlite:///...``,
    ``postgresql://...``) or a SQLite file (relative to the configuration file) for the
    approvals, the budgets' counters and the audit trail, shared by processes; default: the
    kernel's ``store``, else in memory.
    ``budgets``: limits and costs. ``audit_size``: records kept in memory.
    ``audit_allowed``: audit calls a rule allows statically too (they then pay for the
    hook). ``deny_message``: the reason given when the default denies. ``hide_denied``: tools
    denied whatever their arguments are disabled, with the reason, so that neither
    ``get_schemas`` nor ``discover_tools`` shows them to the model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    # A misspelt key (``defualt = "deny"``) would leave a permissive default in place: the
    # kernel makes unknown keys of this table errors, not warnings.
    unknown_options: ClassVar[str] = "error"

    default: Literal["allow", "deny", "ask"] = "allow"
    rules: list[dict[str, Any]] = Field(default_factory=list)
    handler: str | None = Field(default=None, pattern=r"^(terminal|[\w.]+:[\w.]+)$")
    handler_timeout: float = Field(default=300.0, gt=0)
    store: ConfigPath | None = None
    budgets: dict[str, Any] = Field(default_factory=dict)
    audit_size: int = Field(default=10_000, ge=1)
    audit_allowed: bool = False
    deny_message: str = "no rule allows it"
    hide_denied: bool = True
