"""toolregistry-policy: what a policy decision costs.

    python benchmarks/policy_bench.py [--quick]

Targets (issue 20): with 100 rules the decision costs at most 3 µs per call; tools whose
decision is a static allow pay nothing. Measured in one process, interleaved, medians:

* the decision alone (the plugin's ``authorize`` for one call, and its ``authorized``, which
  audits the decision that stands) with 100 rules, of which
  (a) the matching one is all that concerns the tool (rules are compiled per tool), and
  (b) all 100 concern the tool and check its arguments, the last one matching (the worst
  case: every argument check runs);
* ``invoke`` of a tool with the plugin blocked, with the plugin loaded and the tool allowed
  statically (100 rules about other tools), and with 100 rules deciding on its arguments.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, cast

from toolregistry import ToolRegistry
from toolregistry.types import Decision, ToolCall

# The other plugins installed beside the policy (all of them in `nox -s bench`) are disabled in
# every registry here: their observers (otel's spans, the inspector's log) would otherwise be
# in every tool's plan and their cost and noise in every ratio.
OTHERS = sorted(ep.name for ep in entry_points(group="toolregistry.plugins")
                if ep.name != "policy")


def _registry(*, policy: bool = True) -> ToolRegistry:
    reg = ToolRegistry(disable_plugins=OTHERS + ([] if policy else ["policy"]))

    @reg.register
    def fetch(url: str, n: int = 1) -> str:
        """Fetch a page."""
        return url

    return reg


def _other_rules(n: int) -> list[dict[str, Any]]:
    """Rules about other tools: dropped when the tool's plan is compiled."""
    return [{"name": f"r{i}", "tools": [f"other_{i}_*"], "decision": "deny"} for i in range(n)]


def _argument_rules(n: int) -> list[dict[str, Any]]:
    """Rules that all concern ``fetch`` and check its arguments; only the last matches."""
    rules: list[dict[str, Any]] = [
        {"name": f"a{i}", "tools": ["fetch"], "decision": "deny",
         "arguments": {"n": {"min": 1000 + i, "max": 1000 + i}}} for i in range(n - 1)]
    rules.append({"name": "last", "tools": ["fetch"], "decision": "allow",
                  "arguments": {"url": {"hosts": ["example.com"]}}})
    return rules


class Measure:
    """Wall-clock times of single calls (for medians) and the thread's CPU time in all."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cpu = 0.0

    def median(self) -> float:
        return statistics.median(self.times) * 1e6

    def cpu_per_call(self) -> float:
        return self.cpu / len(self.times) * 1e6


def _decide(reg: ToolRegistry, calls: int, into: Measure) -> None:
    import toolregistry_policy as tp

    policy = tp.get_policy(reg)
    tool = reg.get_tool("fetch")
    assert tool is not None
    call = ToolCall("fetch", {"url": "https://example.com/x", "n": 3}, "c1")
    values = tool.validator.validate(call.arguments or {})  # what the kernel hands authorize
    decide = cast("Callable[..., Decision]", policy.authorize)  # no handler: no awaitable
    stands = policy.authorized  # the audit record and budget, once the decision stands
    times = into.times
    gc.collect()
    cpu = time.thread_time()
    for _ in range(calls):
        t = time.perf_counter()
        stands(tool, call, decide(tool, call, values))
        times.append(time.perf_counter() - t)
    into.cpu += time.thread_time() - cpu


def _invoke(reg: ToolRegistry, calls: int, into: Measure) -> None:
    args = {"url": "https://example.com/x", "n": 3}
    times = into.times
    gc.collect()
    cpu = time.thread_time()
    for _ in range(calls):
        t = time.perf_counter()
        reg.invoke("fetch", args)
        times.append(time.perf_counter() - t)
    into.cpu += time.thread_time() - cpu


def _policy_hooks(reg: ToolRegistry, name: str) -> list[str]:
    """The policy plugin's hooks in the call plan of tool ``name`` (compiled by a call)."""
    hooks = reg._get_executor().pipeline._plans[name].hooks
    found = [f"observer {type(o).__module__}" for o in hooks.observers
             if type(o).__module__.startswith("toolregistry_policy")]
    if hooks.authorize is not None:  # no other plugin here implements authorize
        found.append("authorize")
    return found


def main() -> None:
    import toolregistry_policy as tp

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls = 2000 if args.quick else 20000
    rounds = 3 if args.quick else 7

    # The audit trail is kept in memory as in production; structlog stays unconfigured (the
    # event costs one level check), as in an application that did not set up logging.
    compiled = _registry()
    tp.configure(compiled, rules=[*_other_rules(99), {"name": "fetch-ok", "tools": ["fetch"],
                                                        "decision": "allow",
                                                        "arguments": {"n": {"max": 10}}}])
    worst = _registry()
    tp.configure(worst, rules=_argument_rules(100))
    plain = _registry(policy=False)
    static = _registry()
    tp.configure(static, rules=_other_rules(100))
    for reg in (compiled, worst, plain, static):
        assert reg.invoke("fetch", {"url": "https://example.com/x", "n": 3}).ok

    d_compiled, d_worst, i_plain, i_static, i_worst = (Measure() for _ in range(5))
    for _ in range(rounds):  # interleaved
        _decide(compiled, calls // rounds, d_compiled)
        _decide(worst, calls // rounds, d_worst)
        _invoke(plain, calls // rounds, i_plain)
        _invoke(static, calls // rounds, i_static)
        _invoke(worst, calls // rounds, i_worst)
    found = _policy_hooks(static, "fetch")

    def row(what: str, m: Measure | None, value: str, target: str = "") -> None:
        cpu = f"{m.cpu_per_call():.2f}" if m is not None else ""
        print(f"{what:<62}{value:>9}{cpu:>9}{target:>9}")

    print(f"other plugins disabled: {', '.join(OTHERS) or 'none installed'}; load average "
          f"{os.getloadavg()[0]:.2f}; medians of {calls} calls in {rounds} interleaved rounds")
    print(f"{'measure (µs per call)':<62}{'median':>9}{'cpu':>9}{'target':>9}")
    row("decision, 100 rules, 1 concerns the tool", d_compiled,
        f"{d_compiled.median():.2f}", "<= 3")
    row("decision, 100 rules all checking arguments, last matches", d_worst,
        f"{d_worst.median():.2f}", "<= 3")
    row("invoke, policy plugin blocked", i_plain, f"{i_plain.median():.2f}")
    row("invoke, 100 rules, tool allowed statically", i_static, f"{i_static.median():.2f}")
    row("  ratio static / blocked", None, f"{i_static.median() / i_plain.median():.3f}",
        "~1.00")
    row("  static allow: no policy hook in the call plan", None, str(not found), "True")
    row("invoke, 100 rules all checking arguments", i_worst, f"{i_worst.median():.2f}")
    row("  added per call", None, f"{i_worst.median() - i_plain.median():.2f}")
    if found:
        print(f"policy hooks in the plan of a statically allowed tool: {', '.join(found)}")
    for reg in (compiled, worst, plain, static):
        reg.close()


if __name__ == "__main__":
    main()
