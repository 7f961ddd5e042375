"""The compiled decision of a tool agrees exactly with the rules read one by one, first match
wins: property tests against a straightforward reference evaluation."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolregistry_policy as tp
from toolregistry import Tool, ToolMetadata, ToolRegistry
from toolregistry.tool import Provenance
from toolregistry_policy._decider import compile_decider
from toolregistry_policy._rules import Compiled, Rule, compile_rules, tool_facts


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 7


NUMBERS = st.one_of(st.integers(-6, 6), st.sampled_from([2**70, -(2**70), 10**400]),
                    st.floats(-6, 6), st.sampled_from([float("inf"), float("-inf"), -0.0, 0.5]))
VALUES = st.one_of(
    st.none(), st.booleans(), NUMBERS, st.just(float("nan")), st.sampled_from(list(Level)),
    st.sampled_from(["a", "b", "", "/tmp/x", "/tmp/../etc/passwd", "/etc", "https://a.io/p",
                     "http://x.a.io", "http://127.0.0.1/", "http://127.000.000.001/",
                     "http://[::1]/", "not a url", "http://[bad"]),
    st.lists(st.integers(0, 2), max_size=2), st.just({"k": 1}), st.just((1, [2])))
BOUNDS = st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.sampled_from(
    [float("inf"), float("-inf"), 2**70]))
LISTED = st.one_of(st.sampled_from(["a", 1, 2.0, None, True, 0, 10**400]),
                   st.lists(st.integers(0, 2), max_size=2), st.just({"k": 1}))
CHECKS = st.fixed_dictionaries({}, optional={
    "min": BOUNDS, "max": BOUNDS, "one-of": st.lists(LISTED, max_size=4),
    "hosts": st.lists(st.sampled_from(["a.io", "*.a.io", "127.0.0.1", "::1"]), min_size=1,
                      max_size=2),
    "inside": st.just(["/tmp"])}).filter(bool)
NAMES = st.sampled_from(["x", "y", "z"])
ARGS = st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), VALUES, max_size=4)


@st.composite
def rule_lists(draw: st.DrawFn, max_size: int = 12) -> list[dict[str, Any]]:
    rules = []
    for _ in range(draw(st.integers(0, max_size))):
        rule: dict[str, Any] = {"decision": draw(st.sampled_from(["allow", "deny", "ask"])),
                                "arguments": draw(st.dictionaries(NAMES, CHECKS, max_size=3))}
        if draw(st.integers(0, 4)) == 0:  # a code predicate (it is called when reached)
            rule["when"] = draw(st.sampled_from(["has-x", "never", "always"]))
        rules.append(rule)
    return rules


class Calls:
    """The ``when`` predicates of one run, recording each call in order."""

    def __init__(self) -> None:
        self.log: list[tuple[int, str]] = []

    def predicate(self, index: int, kind: str) -> Callable[[Mapping[str, Any]], bool]:
        def when(arguments: Mapping[str, Any]) -> bool:
            self.log.append((index, kind))
            return {"has-x": "x" in arguments, "never": False, "always": True}[kind]
        return when


def _compile(rules: list[dict[str, Any]], calls: Calls) -> tuple[Compiled, ...]:
    made = []
    for index, table in enumerate(rules):
        table = dict(table)
        kind = table.pop("when", None)
        made.append(Rule(table["decision"], arguments=table["arguments"],
                         when=calls.predicate(index, kind) if kind else None))
    return compile_rules(made)


def _reference(rules: tuple[Compiled, ...], arguments: Mapping[str, Any]) -> int:
    """First match wins, each rule's checks read one by one."""
    for index, rule in enumerate(rules):
        if rule.matches_arguments(arguments):
            return index
    return -1


@settings(max_examples=600, deadline=None)
@given(rule_lists(), ARGS)
def test_compiled_decision_agrees(rules: list[dict[str, Any]], arguments: dict[str, Any]
                                  ) -> None:
    seen, expected = Calls(), Calls()
    decide = compile_decider(_compile(rules, seen))
    reference = _compile(rules, expected)
    assert decide(arguments) == _reference(reference, arguments)
    # The code predicates are called exactly as the reference calls them, in order.
    assert seen.log == expected.log


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(BOUNDS, BOUNDS), min_size=1, max_size=100), NUMBERS)
def test_many_bounds_on_one_argument(bounds: list[tuple[Any, Any]], value: Any) -> None:
    rules = compile_rules([{"decision": "deny", "arguments": {"n": {"min": lo, "max": hi}}}
                           for lo, hi in bounds])
    for arguments in ({"n": value}, {"n": str(value)}, {}):
        assert compile_decider(rules)(arguments) == _reference(rules, arguments)


def _echo(**kwargs: object) -> str:
    return "ran"


SCHEMA = {"type": "object", "properties": {"x": {}, "y": {}, "z": {}, "w": {}}}
TOOLS = [
    Tool(name="fs-write", parameters=SCHEMA, callable=_echo, namespace="fs",
         metadata=ToolMetadata(destructive_hint=True, tags={"file_system"}),
         provenance=Provenance("mcp", "files")),
    Tool(name="fetch", parameters=SCHEMA, callable=_echo,
         metadata=ToolMetadata(custom_tags={"web"}), provenance=Provenance("function")),
]
TOOL_LEVEL = st.fixed_dictionaries({}, optional={
    "tools": st.sampled_from([["fetch"], ["fs-*"], ["*"], ["other"]]),
    "namespaces": st.just(["fs"]), "tags": st.sampled_from([["web"], ["file_system"]]),
    "sources": st.sampled_from([["python"], ["mcp"]]),
    "annotations": st.just({"destructiveHint": True})})


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register_tools(TOOLS)
    yield reg
    reg.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TOOL_LEVEL, st.sampled_from(["allow", "deny", "ask"]),
                          st.dictionaries(NAMES, CHECKS, max_size=2)), max_size=10),
       st.sampled_from(["allow", "deny", "ask"]), st.sampled_from(["fetch", "fs-write"]), ARGS)
def test_policy_check_agrees(registry: ToolRegistry, rules: list[Any], default: str,
                             name: str, arguments: dict[str, Any]) -> None:
    """Through the policy of a registry: the rules that concern the tool, the default."""
    tables = [{"name": f"r{i}", "decision": decision, "arguments": checks, **level}
              for i, (level, decision, checks) in enumerate(rules)]
    policy = tp.configure(registry, rules=tables, default=default, hide_denied=False)
    facts = tool_facts(registry.get_tool(name))
    expected: tuple[str, str] = (default, "default")
    for rule in compile_rules(tables):
        if rule.matches_tool(facts) and rule.matches_arguments(arguments):
            expected = (rule.rule.decision, rule.label)
            break
    kind, label, _ = policy.check(name, arguments)
    assert (kind, label) == expected


def test_worst_case_rules_compile_to_a_match() -> None:
    """The benchmark's worst case: 99 rules on one argument, the last one on another."""
    tables: list[dict[str, Any]] = [
        {"decision": "deny", "arguments": {"n": {"min": 1000 + i, "max": 1000 + i}}}
        for i in range(99)]
    tables.append({"decision": "allow", "arguments": {"url": {"hosts": ["example.com"]}}})
    rules = compile_rules(tables)
    decide = compile_decider(rules)
    assert decide({"url": "https://example.com/x", "n": 3}) == 99
    assert decide({"url": "https://example.com/x", "n": 1042}) == 42
    assert decide({"url": "https://example.org/x", "n": 3}) == -1
    assert decide({"n": 1098.0}) == 98
