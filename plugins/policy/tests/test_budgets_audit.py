"""Budgets and rate limits, and the audit trail (structlog events and queries)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

import toolregistry_policy as tp
from toolregistry import Tool, ToolCall, ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry.plugin import hookimpl
from toolregistry.types import Decision


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for name, namespace in (("search", "web"), ("fetch", "web"), ("add", None),
                            ("send_mail", None)):
        reg.register(lambda: "ok", name=name, namespace=namespace)
    yield reg
    reg.close()


def _run(reg: ToolRegistry, name: str, times: int) -> list[str]:
    return [reg.invoke(name, {}).outcome for _ in range(times)]


def test_max_calls_per_tool_namespace_and_registry(registry: ToolRegistry) -> None:
    tp.configure(registry, budgets={"tools": {"send_*": {"max-calls": 2}},
                                    "namespaces": {"web": {"max-calls": 3}},
                                    "max-calls": 7})
    assert _run(registry, "send_mail", 3) == ["ok", "ok", "denied"]
    text = registry.invoke("send_mail", {}).text
    assert "the call budget of tool 'send_*' is spent (2 calls)" in text
    assert _run(registry, "web-search", 2) + _run(registry, "web-fetch", 2) == [
        "ok", "ok", "ok", "denied"]
    assert _run(registry, "add", 3) == ["ok", "ok", "denied"]  # 2 + 3 + 2 = 7 in all
    assert "the registry" in registry.invoke("add", {}).text
    usage = tp.get_policy(registry).budgets.usage()
    assert usage["calls"]["the registry"] == 7
    tp.get_policy(registry).budgets.reset()
    assert _run(registry, "add", 1) == ["ok"]


def test_rate_limit(registry: ToolRegistry) -> None:
    tp.configure(registry, budgets={"tools": {"fetch": {"per-minute": 2}}})
    # Not "web-fetch": budgets match tool names as registered.
    assert _run(registry, "web-fetch", 3) == ["ok", "ok", "ok"]
    tp.configure(registry, budgets={"tools": {"web-fetch": {"per-minute": 2}}})
    assert _run(registry, "web-fetch", 3) == ["ok", "ok", "denied"]
    text = registry.invoke("web-fetch", {}).text
    assert "at most 2 calls per minute" in text and "try again in" in text


def test_costs(registry: ToolRegistry) -> None:
    tp.configure(registry, budgets={"costs": {"web-*": 1.5, "send_mail": 4}, "max-cost": 7})
    assert _run(registry, "send_mail", 1) + _run(registry, "web-search", 2) == ["ok"] * 3
    assert registry.invoke("web-search", {}).outcome == "denied"  # 4 + 1.5 + 1.5 + 1.5 > 7
    assert registry.invoke("add", {}).outcome == "ok"  # costs nothing
    assert "the cost budget is spent (7 of 7 used" in registry.invoke("send_mail", {}).text


def test_denied_calls_do_not_count(registry: ToolRegistry) -> None:
    tp.configure(registry, rules=[tp.Rule("deny", tools=["add"])],
                 budgets={"max-calls": 1}, hide_denied=False)
    assert _run(registry, "add", 2) == ["denied", "denied"]
    assert _run(registry, "send_mail", 2) == ["ok", "denied"]


@pytest.mark.parametrize(("budgets", "message"), [
    ({"max_calls": -1}, "max-calls must be a whole number >= 0"),
    ({"tools": {"x": {"max-call": 1}}}, "policy budgets.tools.x: unknown key 'max-call'"),
    ({"costs": {"x": "cheap"}}, "policy budgets.costs.x: a cost must be a number"),
    ({"limit": 3}, "policy budgets: unknown key 'limit'"),
])
def test_bad_budgets(registry: ToolRegistry, budgets: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tp.configure(registry, budgets=budgets)


def test_every_decision_is_a_structlog_event_and_queryable(registry: ToolRegistry) -> None:
    tp.configure(registry, default="deny", audit_allowed=True, hide_denied=False, rules=[
        tp.Rule("allow", tools=["add"], name="math"),
        tp.Rule("ask", tools=["send_mail"], name="mail")])
    with structlog.testing.capture_logs() as events:
        registry.execute_tool_calls([{"id": "1", "name": "add", "arguments": {}},
                                     {"id": "2", "name": "web-search", "arguments": {}},
                                     {"id": "3", "name": "send_mail", "arguments": {}}])
        policy = tp.get_policy(registry)
        policy.deny(policy.pending()[0].id, "no", approver="ann")
    decisions = [e for e in events if e["event"] == "policy.decision"]
    assert [(e["tool"], e["call_id"], e["rule"], e["decision"], e["approver"])
            for e in decisions] == [("add", "1", "math", "allow", None),
                                    ("web-search", "2", "default", "deny", None),
                                    ("send_mail", "3", "mail", "ask", None),
                                    ("send_mail", "3", "mail", "reject", "ann")]
    assert decisions[1]["reason"] == "no rule allows it"
    assert [r.tool for r in policy.audit.query(decision="allow")] == ["add"]
    assert [r.decision for r in policy.audit.query(call_id="3")] == ["ask", "reject"]
    assert policy.audit.query(limit=1)[0].to_dict()["approver"] == "ann"
    seen = []
    stop = policy.audit.subscribe(seen.append)
    registry.invoke("add", {})
    stop()
    registry.invoke("add", {})
    assert [r.tool for r in seen] == ["add"]


def test_audit_allowed_audits_static_allows(registry: ToolRegistry) -> None:
    policy = tp.get_policy(registry)
    registry.invoke("add", {})
    assert len(policy.audit) == 0
    tp.configure(registry, audit_allowed=True)
    registry.invoke("add", {})
    assert [(r.tool, r.decision, r.rule) for r in policy.audit.query()] == [
        ("add", "allow", "default")]


class Guard:
    """Another authorizing plugin: denies (or holds) send_mail, at once or after a while."""

    def __init__(self, kind: str = "deny", later: bool = False) -> None:
        self.kind = kind
        self.later = later

    @hookimpl
    def authorize(self, tool: Tool, call: ToolCall) -> Any:
        if tool.name != "send_mail" or self.kind == "none":
            return None
        decision = (Decision.deny("the guard says no", rule="guard") if self.kind == "deny"
                    else Decision.pending("the guard asks", rule="guard"))
        if not self.later:
            return decision

        async def decide() -> Decision:
            await asyncio.sleep(0)
            return decision
        return decide()


@pytest.mark.parametrize(("kind", "later"), [("deny", False), ("deny", True),
                                             ("pending", False)])
def test_a_call_another_plugin_refused_is_not_charged_and_audited_as_refused(
        kind: str, later: bool) -> None:
    guard = Guard(kind, later)
    reg = ToolRegistry(plugins=[guard])
    reg.register(lambda: "ok", name="send_mail")
    policy = tp.configure(reg, budgets={"tools": {"send_mail": {"max-calls": 1}}})
    try:
        outcome = "denied" if kind == "deny" else "approval_required"
        assert reg.invoke("send_mail", {}, call_id="c1").outcome == outcome
        assert asyncio.run(reg.ainvoke("send_mail", {}, call_id="c2")).outcome == outcome
        assert policy.budgets.usage()["calls"] == {"tool 'send_mail'": 0}
        audited = "deny" if kind == "deny" else "ask"
        assert [(r.call_id, r.decision, r.rule) for r in policy.audit.query()] == [
            ("c1", audited, "guard"), ("c2", audited, "guard")]
        guard.kind = "none"
        assert reg.invoke("send_mail", {}, call_id="c3").ok  # the budget was not spent
        assert reg.invoke("send_mail", {}, call_id="c4").outcome == "denied"
        assert [(r.call_id, r.decision, r.rule) for r in policy.audit.query()][2:] == [
            ("c3", "allow", "default"), ("c4", "deny", "budget")]
    finally:
        reg.close()


def test_calls_of_a_tool_the_policy_hid_are_audited(registry: ToolRegistry) -> None:
    policy = tp.configure(registry, rules=[tp.Rule("deny", tools=["send_*"], name="no-mail",
                                                   reason="mail is off")])
    assert not registry.is_enabled("send_mail")
    results = registry.execute_tool_calls([{"id": "1", "name": "send_mail", "arguments": {}},
                                           {"id": "2", "name": "add", "arguments": {}}])
    assert [r.outcome for r in results] == ["disabled", "ok"]
    assert [(r.call_id, r.decision, r.rule, r.reason) for r in policy.audit.query()] == [
        ("1", "deny", "no-mail", "mail is off")]
    registry.disable("add", reason="by the application")
    assert registry.invoke("add", {}).outcome == "disabled"
    assert len(policy.audit) == 1  # not the policy's doing


def test_the_held_resend_of_an_edited_approval_is_audited() -> None:
    reg = ToolRegistry()
    reg.register(lambda to: f"sent to {to}", name="send_mail")
    policy = tp.configure(reg, rules=[tp.Rule("ask", tools=["send_mail"], name="mail")])
    try:
        call = {"id": "c1", "name": "send_mail", "arguments": {"to": "all@example.com"}}
        first = reg.execute_tool_calls([call])[0]
        policy.approve(first.approval.id, arguments={"to": "ceo@example.com"}, approver="ann")
        again = reg.execute_tool_calls([call])[0]  # a stateless loop sends it again
        assert again.pending
        assert [(r.decision, r.rule) for r in policy.audit.query(call_id="c1")] == [
            ("ask", "mail"), ("approve", "mail"), ("ask", "approval")]
        assert "resume it" in (policy.audit.query(call_id="c1")[-1].reason or "")
    finally:
        reg.close()


def test_every_decision_is_audited_once() -> None:
    reg = ToolRegistry(plugins=[Guard("deny", later=True)])
    for name in ("add", "send_mail", "search"):
        reg.register(lambda: "ok", name=name)
    policy = tp.configure(reg, audit_allowed=True, rules=[tp.Rule("ask", tools=["search"])])
    try:
        calls = [{"id": f"c{i}", "name": name, "arguments": {}}
                 for i, name in enumerate(["add", "send_mail", "search", "add"])]
        results = [*reg.execute_tool_calls(calls), *asyncio.run(reg.aexecute_tool_calls(
            [{**c, "id": c["id"] + "a"} for c in calls]))]
        audited = {"ok": "allow", "denied": "deny", "approval_required": "ask"}
        assert sorted((r.call_id, r.decision) for r in policy.audit.query()) == sorted(
            (r.call_id, audited[r.outcome]) for r in results)
    finally:
        reg.close()


def test_configure_changes_the_audit_size(registry: ToolRegistry) -> None:
    policy = tp.configure(registry, audit_allowed=True)
    _run(registry, "add", 3)
    tp.configure(registry, audit_size=2)
    assert len(policy.audit) == 2  # the newest kept
    _run(registry, "add", 5)
    assert len(policy.audit) == 2
