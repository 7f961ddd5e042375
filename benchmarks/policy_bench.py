"""toolregistry-policy: what a policy decision costs.

    python benchmarks/policy_bench.py [--quick]

Targets (issue 20): with 100 rules the decision costs at most 3 µs per call; tools whose
decision is a static allow pay nothing. Measured in one process, interleaved, medians:

* the decision alone (the plugin's ``authorize`` for one call) with 100 rules, of which
  (a) the matching one is all that concerns the tool (rules are compiled per tool), and
  (b) all 100 concern the tool and check its arguments, the last one matching (the worst
  case: every argument check runs);
* ``invoke`` of a tool with the plugin blocked, with the plugin loaded and the tool allowed
  statically (100 rules about other tools), and with 100 rules deciding on its arguments.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from toolregistry import ToolRegistry
from toolregistry.types import ToolCall


def _registry(**options: Any) -> ToolRegistry:
    reg = ToolRegistry(**options)

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


def _decide(reg: ToolRegistry, calls: int) -> list[float]:
    import toolregistry_policy as tp

    policy = tp.get_policy(reg)
    tool = reg.get_tool("fetch")
    assert tool is not None
    call = ToolCall("fetch", {"url": "https://example.com/x", "n": 3}, "c1")
    decide = policy.authorize
    times = []
    gc.collect()
    for _ in range(calls):
        t = time.perf_counter()
        decide(tool, call)
        times.append(time.perf_counter() - t)
    return times


def _invoke(reg: ToolRegistry, calls: int) -> list[float]:
    args = {"url": "https://example.com/x", "n": 3}
    times = []
    gc.collect()
    for _ in range(calls):
        t = time.perf_counter()
        reg.invoke("fetch", args)
        times.append(time.perf_counter() - t)
    return times


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
    plain = _registry(disable_plugins=["policy"])
    static = _registry()
    tp.configure(static, rules=_other_rules(100))
    for reg in (compiled, worst, plain, static):
        assert reg.invoke("fetch", {"url": "https://example.com/x", "n": 3}).ok

    d_compiled: list[float] = []
    d_worst: list[float] = []
    i_plain: list[float] = []
    i_static: list[float] = []
    i_worst: list[float] = []
    for _ in range(rounds):  # interleaved
        d_compiled += _decide(compiled, calls // rounds)
        d_worst += _decide(worst, calls // rounds)
        i_plain += _invoke(plain, calls // rounds)
        i_static += _invoke(static, calls // rounds)
        i_worst += _invoke(worst, calls // rounds)
    med = statistics.median
    hooks = static._get_executor().pipeline._plans["fetch"].hooks
    static_free = hooks.authorize is None and not hooks.observers

    print(f"{'measure':<66}{'value':>10}{'target':>10}")
    print(f"{'decision, 100 rules, 1 concerns the tool (µs)':<66}"
          f"{med(d_compiled) * 1e6:>10.2f}{'<= 3':>10}")
    print(f"{'decision, 100 rules all checking arguments, last matches (µs)':<66}"
          f"{med(d_worst) * 1e6:>10.2f}{'<= 3':>10}")
    print(f"{'invoke, policy plugin blocked (µs)':<66}{med(i_plain) * 1e6:>10.2f}")
    print(f"{'invoke, 100 rules, tool allowed statically (µs)':<66}{med(i_static) * 1e6:>10.2f}")
    print(f"{'  ratio static / blocked':<66}{med(i_static) / med(i_plain):>10.3f}{'~1.00':>10}")
    print(f"{'  static allow: no policy hook in the call plan':<66}{static_free!s:>10}"
          f"{'True':>10}")
    print(f"{'invoke, 100 rules all checking arguments (µs)':<66}{med(i_worst) * 1e6:>10.2f}")
    print(f"{'  added per call (µs)':<66}{(med(i_worst) - med(i_plain)) * 1e6:>10.2f}")
    for reg in (compiled, worst, plain, static):
        reg.close()


if __name__ == "__main__":
    main()
