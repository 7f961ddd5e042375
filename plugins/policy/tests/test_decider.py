"""The generated decision function agrees with the rules read one check at a time."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry_policy._rules import ArgumentCheck, compile_decider, compile_rules

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                   st.floats(-5, 5), st.just(float("nan")), st.sampled_from(["a", "b", "/tmp/x",
                                                                    "https://a.io/"]))
CHECKS = st.fixed_dictionaries({}, optional={
    "min": st.integers(-3, 3), "max": st.integers(-3, 3),
    "one-of": st.lists(st.sampled_from(["a", 1, 2.0, None]), max_size=3),
    "hosts": st.just(["a.io"]), "inside": st.just(["/tmp"])}).filter(bool)
RULES = st.lists(st.fixed_dictionaries({
    "decision": st.sampled_from(["allow", "deny", "ask"]),
    "arguments": st.dictionaries(st.sampled_from(["x", "y"]), CHECKS, max_size=2)}),
    min_size=0, max_size=6)
ARGS = st.dictionaries(st.sampled_from(["x", "y", "z"]), VALUES, max_size=3)


def _slow(compiled: Any, arguments: dict[str, Any]) -> int:
    for index, rule in enumerate(compiled):
        if all(check(arguments) for check in rule.checks):
            return index
    return -1


@settings(max_examples=300, deadline=None)
@given(RULES, ARGS)
def test_generated_decider_agrees(rules: list[dict[str, Any]], arguments: dict[str, Any]
                                  ) -> None:
    compiled = compile_rules(rules)
    assert all(isinstance(c, ArgumentCheck) for r in compiled for c in r.checks)
    assert compile_decider(compiled)(arguments) == _slow(compiled, arguments)
