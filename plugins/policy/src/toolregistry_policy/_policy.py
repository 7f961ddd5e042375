"""The policy of one registry (:class:`Policy`): its configuration, the compiled plan of each
tool, the ``authorize`` decision (rules, budgets, audit; held calls go to a blocking handler,
``_blocking``, or to the approvals store), the approvals queue a person decides through, and
resuming decided calls (``_resume``)."""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from toolregistry.errors import ConfigError
from toolregistry.plugin import log
from toolregistry.types import ApprovalRequest, Decision, ToolResult, current_caller

from ._approvals import (
    Approval,
    ApprovalError,
    ApprovalStore,
    MemoryStore,
    ServerStore,
    SQLiteStore,
    find,
)
from ._audit import AuditLog, StoreTrail
from ._blocking import EditGrants, Verdict, ask_handler, load_handler
from ._budgets import Budgets, ToolBudget
from ._counts import StoreCounts
from ._decider import ToolPolicy
from ._resume import GRANT, claim, granted, pending_result
from ._rules import Compiled, Rule, compile_rules, tool_facts
from ._settings import PolicySettings

if TYPE_CHECKING:
    from toolregistry import Tool, ToolCall, ToolRegistry
    from toolregistry.plugin import Store

__all__ = ["Policy", "Verdict", "pending_result"]

Kind = Literal["allow", "deny", "ask"]
_KEEP: Any = object()
_ALLOW: dict[str, Decision] = {}  # Decisions are immutable: one per rule name
_DECIDING_HOOKS = ("authorize", "authorized")
_ASKING_HOOKS = ("authorize", "authorized", "call_observer")
# call.extra key: what the policy decided about a call, until the decision that stands is known
# (the authorized hook): (its Decision, approver, approval id, (budget, time) charged or None)
_DECIDED = "policy.decided"
_AUDITED = {"allow": "allow", "deny": "deny", "pending": "ask"}
Listener = Callable[[Approval], Any]


class Policy:
    """Everything the plugin keeps for one registry (``get_policy(registry)``)."""

    def __init__(self, registry: ToolRegistry, settings: PolicySettings) -> None:
        self._registry = registry
        self._lock = threading.RLock()
        self._plans: dict[str, ToolPolicy] = {}
        self._listeners: list[Listener] = []
        self.edit_grants = EditGrants()
        self.audit = AuditLog(settings.audit_size)
        self.store: ApprovalStore = MemoryStore()
        self._code_rules: list[Rule | Mapping[str, Any]] | None = None
        self._shared_counts: StoreCounts | None = None
        self._databases: dict[str, Store] = {}
        self._hidden: set[str] = set()  # tools this policy disabled (hide_denied)
        self._hiding = threading.local()
        self.settings = settings
        self._apply(settings, init=True)

    # -- configuration ----------------------------------------------------------------------
    def _base(self) -> Path | None:
        path = self._registry.config.path
        return path.parent if path is not None else None

    def _apply(self, settings: PolicySettings, *, init: bool = False,
               handler: Callable[[ApprovalRequest], Any] | None = None,
               store: ApprovalStore | None = None) -> None:
        rules = self._code_rules if self._code_rules is not None else settings.rules
        compiled = compile_rules(rules, self._base())
        budgets = Budgets(settings.budgets)
        if not budgets.empty:
            budgets.shared = self._counts(settings)
        if handler is None and settings.handler is not None:
            handler = load_handler(settings.handler)
        if store is None and (init or settings.store != self.settings.store):
            store = self._approvals(settings)
        self.audit.resize(settings.audit_size)
        database = self._database(settings)
        if database is None:
            self.audit.shared = None
        elif self.audit.shared is None or self.audit.shared.store is not database:
            self.audit.shared = StoreTrail(database)
        with self._lock:
            self.settings = settings
            self.rules = compiled
            self.budgets = budgets
            self.handler: Callable[[ApprovalRequest], Any] | None = handler
            if store is not None:
                self.store = store
            self._plans = {}
        self._may_hide = settings.hide_denied and (settings.default == "deny" or any(
            r.static and r.rule.decision == "deny" for r in compiled))
        if not init:
            # The tools' call plans depend on the rules (call_hooks): compile them again.
            version = int(self._registry.get_setting("policy", 0)) + 1
            self._registry.set_setting("policy", version)
            self.hide_denied()

    def _database(self, settings: PolicySettings) -> Store | None:
        """The store the approvals and the budgets share (the policy's ``store``, else the
        registry's), opened once per URL; ``None``: state kept in this process."""
        url = self._registry.store_url(settings.store)
        if url is None:
            return None
        opened = self._databases.get(url.url)
        if opened is None:
            from toolregistry.plugin import open_store

            opened = self._databases[url.url] = open_store(url)
            self._registry.add_closer(opened.close)
        return opened

    def _counts(self, settings: PolicySettings) -> StoreCounts | None:
        """The budgets' counters on the store; ``None``: counted in this process."""
        database = self._database(settings)
        if database is None:
            return None
        if self._shared_counts is None or self._shared_counts.store is not database:
            self._shared_counts = StoreCounts(database)
        return self._shared_counts

    def _approvals(self, settings: PolicySettings) -> ApprovalStore | None:
        """The approvals store on the configured store (``None``: none configured): a SQLite
        file as before, a server's table for every worker and host."""
        url = self._registry.store_url(settings.store)
        if url is None:
            return None
        if url.kind == "sqlite":
            sqlite = SQLiteStore(url.path)
            self._registry.add_closer(sqlite.close)
            return sqlite
        database = self._database(settings)
        assert database is not None
        return ServerStore(database)

    def configure(self, *, rules: Iterable[Rule | Mapping[str, Any]] | None = None,
                  handler: Callable[[ApprovalRequest], Any] | str | object | None = _KEEP,
                  store: ApprovalStore | str | Path | None = None,
                  **options: Any) -> Policy:
        """Change the policy in code: ``rules`` (:class:`Rule` objects or tables) replace the
        configured ones, ``handler`` (a callable, ``"terminal"`` or ``"pkg.mod:fn"``; ``None``
        for none) answers ``ask`` at once, ``store`` (an :class:`ApprovalStore`, or a SQLite
        file path) keeps the approvals; other options as in the configuration table
        (``default``, ``budgets``, ``handler_timeout``, ...). Budgets start afresh. Returns
        the policy."""
        from pydantic import ValidationError

        merged = {**self.settings.model_dump(),
                  **{k.replace("-", "_"): v for k, v in options.items()}}
        keep = self.handler
        if handler is not _KEEP:
            keep = None
            if isinstance(handler, str):
                merged["handler"] = handler
            elif handler is None or callable(handler):
                merged["handler"] = None
                keep = handler
            else:
                raise ConfigError(f"toolregistry_policy.configure(): handler must be a "
                                  f"callable, 'terminal' or 'pkg.mod:fn', got {handler!r}")
        elif merged.get("handler") != self.settings.handler:
            keep = None
        if isinstance(store, (str, Path)):
            merged["store"] = str(store)
            store = None
        try:
            settings = PolicySettings.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError.from_validation("toolregistry_policy.configure()", exc, values=False) from None
        previous = self._code_rules
        if rules is not None:
            self._code_rules = list(rules)
        try:
            self._apply(settings, handler=keep, store=store)
        except BaseException:
            self._code_rules = previous
            raise
        return self

    # -- per tool ---------------------------------------------------------------------------
    def plan(self, tool: Tool) -> ToolPolicy:
        """The compiled policy of ``tool`` (cached until the tool or the rules change)."""
        plan = self._plans.get(tool.name)
        if plan is None or plan.tool is not tool:
            facts = tool_facts(tool)
            plan = ToolPolicy(tool, tuple(r for r in self.rules if r.matches_tool(facts)),
                              self.settings.default, self.budgets.for_tool(facts))
            self._plans[tool.name] = plan
        return plan

    def hooks_for(self, tool: Tool) -> tuple[str, ...]:
        """The plugin's per-tool hooks that concern ``tool``: none when its calls are
        allowed statically and count against no budget (they pay nothing)."""
        plan = self.plan(tool)
        if plan.static == "allow" and plan.budget is None and not self.settings.audit_allowed:
            return ()
        return _ASKING_HOOKS if plan.asks else _DECIDING_HOOKS

    def check(self, name: str, arguments: Mapping[str, Any] | None = None
              ) -> tuple[Kind, str, str | None]:
        """What the rules decide for a call of ``name`` with ``arguments``, without side
        effects (no budget counted, nothing recorded): ``(decision, rule, reason)``."""
        tool = self._registry.get_tool(name)
        if tool is None:
            raise KeyError(f"no tool named {name!r} in registry {self._registry.name!r}")
        values: Mapping[str, Any] = arguments or {}
        # decided, as a call is, on the values the tool would receive (invalid ones as given:
        # such a call would not run, but the rules still say what they decide)
        with contextlib.suppress(Exception):
            values = tool.validator.validate(values)
        rule, kind = self.plan(tool).decide(values)
        return kind, rule.label if rule is not None else "default", self._reason(rule, kind)

    def denied_outright(self, tool: Tool) -> bool:
        """True when every call of ``tool`` is denied whatever its arguments."""
        return self.plan(tool).static == "deny"

    def hide_denied(self, names: Iterable[str] | None = None) -> None:
        """Disable the tools (``names``, default all) that are denied whatever their
        arguments, with the reason, so that the model is not shown them (``hide_denied``);
        enable again the ones it disabled that are no longer denied."""
        # the thread-local flag last: a miss on a threading.local costs more than the rest of
        # this check, and this runs on every registration
        if not (self._may_hide or self._hidden) or getattr(self._hiding, "busy", False):
            return
        registry = self._registry
        self._hiding.busy = True
        try:
            if names is None:
                tools = registry.get_tools(include_disabled=True)
            else:
                tools = [t for t in map(registry.get_tool, names) if t is not None]
            for tool in tools:
                name = tool.name
                plan = self.plan(tool)
                if self._may_hide and plan.static == "deny":
                    if name not in self._hidden and registry.is_enabled(name):
                        rule = plan.rules[0] if plan.rules else None
                        why = self._reason(rule, "deny")
                        registry.disable(name, reason=f"denied by policy: {why}")
                        self._hidden.add(name)
                elif name in self._hidden:
                    self._hidden.discard(name)
                    registry.enable(name)
        finally:
            self._hiding.busy = False

    def enabled_by_hand(self, names: Iterable[str]) -> None:
        """Tools the application enabled itself: the policy no longer hides them."""
        if not getattr(self._hiding, "busy", False):
            self._hidden.difference_update(names)

    def _reason(self, rule: Compiled | None, kind: Kind) -> str | None:
        if rule is not None and rule.rule.reason:
            return rule.rule.reason
        if kind == "deny":
            return self.settings.deny_message if rule is None else "a policy rule denies it"
        return None

    # -- authorize ------------------------------------------------------------------------
    def authorize(self, tool: Tool, call: ToolCall, arguments: Mapping[str, Any] | None = None
                  ) -> Decision | Awaitable[Decision]:
        """The decision for one call (the ``authorize`` hook) on ``arguments``, the values
        its tool will receive (``call.arguments`` when not given); a person's decision
        through a blocking handler comes as an awaitable (the kernel awaits it)."""
        plan = self._plans.get(tool.name)
        if plan is None or plan.tool is not tool:
            plan = self.plan(tool)
        index = plan.decide_index(call.arguments or {} if arguments is None else arguments)
        if index < 0:
            rule, kind, label = None, plan.default, "default"
        else:
            rule = plan.rules[index]
            kind, label = rule.rule.decision, rule.label
        grants = granted.get()
        if grants is not None and kind == "ask":
            grant = grants.get(call.extra.get(GRANT, ""))
            if grant is not None and grant.tool == tool.name:
                return self._allow(plan, call, "approval", grant.approver, grant.id)
        if kind == "deny":
            return self.decided(call, Decision.deny(self._reason(rule, kind) or "not allowed",
                                                    rule=label))
        if kind == "ask":
            return self._ask(plan, call, label, self._reason(rule, kind))
        return self._allow(plan, call, label)

    def _allow(self, plan: ToolPolicy, call: ToolCall, label: str,
               approver: str | None = None, approval_id: str | None = None) -> Decision:
        """Allow the call, unless its budget is spent (counted now, given back when another
        plugin's decision stands instead: :meth:`authorized`)."""
        charged = None
        if plan.budget is not None:
            now = time.monotonic()
            why = plan.budget.charge(now)
            if why is not None:
                return self.decided(call, Decision.deny(why, rule="budget"), approver,
                                    approval_id)
            charged = (plan.budget, now)
        decision = _ALLOW.get(label)
        if decision is None:
            decision = _ALLOW[label] = Decision.allow(rule=label)
        return self.decided(call, decision, approver, approval_id, charged)

    @staticmethod
    def decided(call: ToolCall, decision: Decision, approver: str | None = None,
                approval_id: str | None = None,
                charged: tuple[ToolBudget, float] | None = None) -> Decision:
        """``decision``, kept on the call until the kernel says which decision stands
        (:meth:`authorized`) with who decided, the approval and the budget it counted."""
        call.extra[_DECIDED] = (decision, approver, approval_id, charged)
        return decision

    def authorized(self, tool: Tool, call: ToolCall, decision: Decision) -> None:
        """The decision that stands for a call (the ``authorized`` hook): audited once, with
        its outcome; a budget this policy counted is given back when the call does not run
        after all (another plugin denied or held it)."""
        mine = call.extra.pop(_DECIDED, None)
        if mine is not None and decision is mine[0]:
            self.audit.record(tool.name, call.id, _AUDITED[decision.kind], decision.rule,
                              decision.reason, mine[1], decision.approval_id or mine[2])
            return
        if mine is not None and mine[3] is not None:
            budget, when = mine[3]
            budget.refund(when)
        if mine is None and decision.rule == "disabled":
            if tool.name not in self._hidden:
                return  # disabled by the application: not this policy's decision
            plan = self.plan(tool)
            rule = plan.rules[0] if plan.rules else None
            self.audit.record(tool.name, call.id, "deny", rule.label if rule else "default",
                              self._reason(rule, "deny"))
            return
        self.audit.record(tool.name, call.id, _AUDITED[decision.kind], decision.rule,
                          decision.reason, None, decision.approval_id)

    def _ask(self, plan: ToolPolicy, call: ToolCall, label: str, reason: str | None
             ) -> Decision | Awaitable[Decision]:
        name = plan.tool.name
        arguments = dict(call.arguments or {})
        if self.edit_grants and self.edit_grants.take(name, arguments):
            return self._allow(plan, call, "approval", None, None)
        caller = current_caller()
        # The same call sent again (a stateless loop, a served client retrying) finds its
        # approval by key; without a call id or a caller nothing says it is the same call.
        key = None if call.id is None and caller is None else \
            ApprovalRequest.stable_id(name, call.id, arguments, caller)
        opened = find(self.store, key) if key is not None else []
        if opened:
            # a decided one first: that is the one the re-sent call is for
            existing = next((a for a in opened if a.status != "pending"), opened[0])
            if existing.status != "pending":
                settled = self._settled(plan, call, existing)
                if settled is not None:
                    return settled
            elif self.handler is None:  # asked already: not asked twice
                call.extra["policy.pending"] = existing.id
                return self.decided(call, Decision.pending(
                    reason, approval_id=existing.id, rule=label), None, existing.id)
        approval_id = "apr_" + secrets.token_hex(12)
        request = ApprovalRequest(approval_id, name, arguments, call.id, call.reason, reason,
                                  label, caller)
        if self.handler is not None:  # awaited by the kernel: the caller's loop goes on
            return ask_handler(self, plan, call, request)
        fresh = self.store.add(Approval(request, key=key))
        self._notify(fresh)
        call.extra["policy.pending"] = approval_id
        return self.decided(call, Decision.pending(reason, approval_id=approval_id, rule=label),
                            None, approval_id)

    def _settled(self, plan: ToolPolicy, call: ToolCall, approval: Approval
                 ) -> Decision | None:
        """The same call again (same tool, call id, arguments and caller) after a person
        decided: an approved call runs now, once; a denied one gets the person's reason;
        ``None`` when the approval was used meanwhile (elsewhere): the call is a new
        request."""
        if approval.status == "approved" and not approval.edited:
            claimed = self.store.transition(approval.id, ("approved",),
                                            attrs.evolve(approval, status="running"))
            if claimed is not None and claimed.status == "running" and \
                    claimed.created == approval.created:
                decision = self._allow(plan, call, "approval", approval.approver, approval.id)
                if decision.kind == "allow":
                    call.extra["policy.approval"] = approval.id
                    self._notify(claimed)
                else:
                    self.store.transition(approval.id, ("running",), approval)
                return decision
            approval = claimed or approval
        approver = None
        if approval.status == "approved":  # approved with changed arguments
            decision = Decision.pending("approved with changed arguments: resume it",
                                        approval_id=approval.id, rule="approval")
        elif approval.status == "denied":
            done = attrs.evolve(approval, status="done", outcome="denied")
            if self.store.transition(approval.id, ("denied",), done) is not done:
                return None
            self._notify(done)
            decision = Decision.deny(approval.note or "a person declined it", rule="approval")
            approver = approval.approver
        else:
            return None
        return self.decided(call, decision, approver, approval.id)

    # -- the approvals queue ----------------------------------------------------------------
    def pending(self) -> list[Approval]:
        """Approvals waiting for a person, oldest first."""
        return self.store.list("pending")

    def approvals(self, status: str | None = None) -> list[Approval]:
        """Every approval kept (or those in one ``status``), oldest first."""
        return self.store.list(status)  # type: ignore[arg-type]

    def __contains__(self, approval_id: object) -> bool:
        """Whether this policy keeps an approval with this id (another plugin that holds
        calls for approval issues ids of its own: those are not this policy's to resume)."""
        return isinstance(approval_id, str) and self.store.get(approval_id) is not None

    def get(self, approval_id: str) -> Approval:
        """The approval with this id; an :class:`ApprovalError` when there is none."""
        approval = self.store.get(approval_id)
        if approval is None:
            raise ApprovalError(f"unknown approval id {approval_id!r}: no call waits under it "
                                "(it may belong to another store, or have been removed)")
        return approval

    def approve(self, approval_id: str, *, arguments: Mapping[str, Any] | None = None,
                approver: str | None = None, note: str | None = None) -> Approval:
        """A person approves a pending call, as asked or with ``arguments`` instead (checked
        against the tool's schema now). It runs when the application resumes it."""
        approval = self.get(approval_id)
        if arguments is not None:
            if not isinstance(arguments, Mapping):
                raise TypeError(f"approve(arguments=...) must be an object, got "
                                f"{type(arguments).__name__}")
            self._validate(approval.tool, arguments)
        decided = attrs.evolve(approval, status="approved", decided=time.time(),
                               approver=approver, note=note,
                               arguments=dict(arguments) if arguments is not None else None)
        return self._decide(approval, decided, "approve")

    def deny(self, approval_id: str, reason: str | None = None, *,
             approver: str | None = None) -> Approval:
        """A person refuses a pending call; ``reason`` is what the model reads."""
        approval = self.get(approval_id)
        decided = attrs.evolve(approval, status="denied", decided=time.time(),
                               approver=approver, note=reason)
        return self._decide(approval, decided, "reject")

    def decide(self, approval_id: str, decision: str, *, by: str | None = None,
               note: str | None = None, arguments: Mapping[str, Any] | None = None
               ) -> Approval:
        """:meth:`approve` (``decision="approve"``) or :meth:`deny` (``"deny"``; ``note`` is
        the reason the model reads): the kernel's ``registry.approvals.decide``."""
        if decision == "approve":
            return self.approve(approval_id, arguments=arguments, approver=by, note=note)
        if decision == "deny":
            return self.deny(approval_id, note, approver=by)
        raise ValueError(f"decision must be 'approve' or 'deny', got {decision!r}")

    def _decide(self, approval: Approval, decided: Approval, what: str) -> Approval:
        kept = self.store.transition(approval.id, ("pending",), decided)
        if kept is not decided:
            now = kept or approval
            by = f" by {now.approver}" if now.approver else ""
            raise ApprovalError(f"approval {approval.id!r} ({approval.tool}) is already "
                                f"{now.status}{by}; a decision is taken once")
        self.audit.record(approval.tool, approval.request.call_id, what,
                          approval.request.rule, decided.note, decided.approver, approval.id)
        self._notify(decided)
        return decided

    def _validate(self, name: str, arguments: Mapping[str, Any]) -> None:
        tool = self._registry.get_tool(name)
        if tool is None:
            raise ApprovalError(f"tool {name!r} is no longer in registry "
                                f"{self._registry.name!r}")
        try:
            tool.validator.validate(dict(arguments))
        except Exception as exc:
            raise ValueError(f"the changed arguments for {name!r} are invalid: {exc}") from None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(approval)`` whenever an approval is created, decided, starts or
        ends (from the thread that changed it); returns an unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _notify(self, approval: Approval) -> None:
        for listener in list(self._listeners):
            try:
                listener(approval)
            except Exception as exc:
                log.warning("policy.listener_failed", approval_id=approval.id,
                            error=f"{type(exc).__name__}: {exc}")

    # -- resume -------------------------------------------------------------------------------
    def resume(self, items: Iterable[Any], *, context: Mapping[str, Any] | None = None,
               timeout: float | None = None) -> list[ToolResult]:
        """Run the decided calls among ``items`` through the registry and return one result
        per item, in order.

        ``items`` are a batch's results (pending ones are resumed, the others returned as they
        are), approval ids, :class:`~toolregistry.types.ApprovalRequest` objects or their
        ``to_dict()``. An approved call runs once, through the registry's normal path
        (validation, hooks, observers, budgets; rules again, with the person's approval
        standing for ``ask``); a denied one answers with the person's reason; an undecided one
        stays pending. An unknown id, or one already used, is an :class:`ApprovalError`, and
        then nothing runs.
        """
        plan = claim(self, items)
        if plan.calls:
            token = granted.set(plan.grants)
            try:
                results = self._registry.execute_tool_calls(plan.calls, context=context,
                                                             timeout=timeout)
            finally:
                granted.reset(token)
        else:
            results = []
        return plan.finish(self, results)

    async def aresume(self, items: Iterable[Any], *, context: Mapping[str, Any] | None = None,
                      timeout: float | None = None) -> list[ToolResult]:
        """Async twin of :meth:`resume`."""
        plan = claim(self, items)
        if plan.calls:
            token = granted.set(plan.grants)
            try:
                results = await self._registry.aexecute_tool_calls(
                    plan.calls, context=context, timeout=timeout)
            finally:
                granted.reset(token)
        else:
            results = []
        return plan.finish(self, results)


    def _finish(self, approval: Approval, result: ToolResult) -> None:
        current = self.store.get(approval.id) or approval
        done = attrs.evolve(current, status="done", outcome=result.outcome,
                            result=result.text[:2000])
        if self.store.transition(approval.id, ("running",), done) is done:
            self._notify(done)

    def observed(self, call: ToolCall, result: ToolResult) -> None:
        """A call of a tool that may ask ended: settle what it left in the store."""
        pending = call.extra.get("policy.pending")
        if pending is not None and not result.pending:
            # Another plugin denied it, or it failed before being held: nothing waits.
            approval = self.store.get(pending)
            if approval is not None and approval.status == "pending":
                self.store.remove(pending)
        ran = call.extra.get("policy.approval")
        if ran is not None:
            approval = self.store.get(ran)
            if approval is not None:
                self._finish(approval, result)
