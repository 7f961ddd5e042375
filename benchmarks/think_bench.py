"""toolregistry-think: what rationale augmentation costs.

    python benchmarks/think_bench.py [--quick]

Targets (issue 5): get_schemas with think-augment on costs at most 10% more than with it off
(cold, every tool emitted again); stripping `toolcall_reason` adds at most 2 µs per call.
Runs interleaved in one process; medians of many repetitions.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from toolregistry import ToolRegistry


def _tools(n: int) -> list[Any]:
    ns: dict[str, Any] = {}
    src = "\n".join(
        f"def tool_{i}(city: str, days: int = 1, unit: str = 'c') -> str:\n"
        f"    '''Forecast number {i}.\n\n    Args:\n        city: The city.\n"
        f"        days: How many days.\n    '''\n    return city\n" for i in range(n))
    exec(src, ns)
    return [ns[f"tool_{i}"] for i in range(n)]


def cold_schemas(reg: ToolRegistry, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        reg.set_setting("bench", object())  # invalidates every cache: a cold emission
        gc.collect()  # both sides start from the same collector state
        t = time.perf_counter()
        reg.get_schemas()
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 500 if args.quick else 2000
    rounds = 5 if args.quick else 21
    calls = 2000 if args.quick else 20000

    on = ToolRegistry(think_augment=True)
    off = ToolRegistry(think_augment=False)
    for fn in _tools(n):
        on.register(fn)
        off.register(fn)
    t_on: list[float] = []
    t_off: list[float] = []
    for _ in range(rounds):  # interleaved, one round each at a time
        t_off += cold_schemas(off, 1)
        t_on += cold_schemas(on, 1)
    m_on, m_off = statistics.median(t_on), statistics.median(t_off)

    plain = ToolRegistry(disable_plugins=["think"])
    think = ToolRegistry(think_augment=True)
    for reg in (plain, think):
        reg.register(_tools(1)[0])
    with_reason = {"city": "Oslo", "toolcall_reason": "The user asked for Oslo."}
    without = {"city": "Oslo"}
    s_plain: list[float] = []
    s_think: list[float] = []
    for _ in range(5):
        for reg, args_, sink in ((plain, without, s_plain), (think, with_reason, s_think)):
            for _ in range(calls // 5):
                t = time.perf_counter()
                reg.invoke("tool_0", dict(args_))
                sink.append(time.perf_counter() - t)
    m_plain, m_think = statistics.median(s_plain), statistics.median(s_think)

    print(f"{'measure':<52}{'value':>14}{'target':>14}")
    print(f"{'get_schemas cold, ' + str(n) + ' tools, think off (ms)':<52}{m_off * 1e3:>14.2f}")
    print(f"{'get_schemas cold, ' + str(n) + ' tools, think on (ms)':<52}{m_on * 1e3:>14.2f}")
    print(f"{'  ratio on / off':<52}{m_on / m_off:>14.3f}{'<= 1.10':>14}")
    print(f"{'invoke, think plugin blocked, no reason (µs)':<52}{m_plain * 1e6:>14.2f}")
    print(f"{'invoke, think on, reason sent and stripped (µs)':<52}{m_think * 1e6:>14.2f}")
    print(f"{'  stripping cost per call (µs)':<52}{(m_think - m_plain) * 1e6:>14.2f}{'<= 2':>14}")
    for reg in (on, off, plain, think):
        reg.close()


if __name__ == "__main__":
    main()
