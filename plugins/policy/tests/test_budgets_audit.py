"""Budgets and rate limits, and the audit trail (structlog events and queries)."""

from __future__ import annotations

import pytest
import structlog

import toolregistry_policy as tp
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError


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
