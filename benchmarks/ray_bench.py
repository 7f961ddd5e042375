"""Tool calls on Ray (toolregistry-ray, issue 24) against the registry's own threads.

    python benchmarks/ray_bench.py            # 5 interleaved rounds
    python benchmarks/ray_bench.py --quick    # 1 short round: a smoke run

Needs ``core`` and ``plugins/ray`` installed (``nox -s bench`` has them). One local Ray is
started for the whole run (``num_cpus`` = the machine's CPUs, a small object store, no
dashboard) and stopped at the end; the same registry serves both sides: ``noop`` / ``crunch``
run on the registry's worker threads, ``ray_noop`` / ``ray_crunch`` (the same functions) as
Ray tasks. Rounds alternate which side goes first; medians.

* **per call**: ``registry.invoke`` of a no-op tool, one call after another (wall time per call;
  the Ray side includes submitting the task, running it in a warm worker and fetching the
  result).
* **1,000 small calls**: one ``execute_tool_calls`` batch of 1,000 no-op calls (calls/s).
* **20 CPU-bound calls**: one batch of 20 calls of a pure-Python loop (~0.2 s each on its own):
  local threads share one GIL, Ray runs them in as many worker processes as there are CPUs.

Ray's workers run at the driver's priority here (``RAY_worker_niceness=0``; Ray's default is
nice 15, which on a busy machine measures priorities rather than Ray).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c


def noop() -> int:
    """Return at once."""
    return 1


def crunch(n: int) -> int:
    """A CPU-bound loop: the sum of the squares below n."""
    return sum(i * i for i in range(n))


def _calibrate() -> int:
    """The n for which crunch(n) takes about 0.2 s here (the median of three timings after a
    warm-up; the machine's load still moves it)."""
    n = 200_000
    crunch(n)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        crunch(n)
        times.append(time.perf_counter() - start)
    return max(10_000, int(n * 0.2 / max(c.median(times), 1e-3)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round, fewer calls")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 5)
    sequential = 50 if args.quick else 200
    many = 200 if args.quick else 1000

    try:
        import toolregistry_ray
        from toolregistry import ToolMetadata, ToolRegistry
    except ImportError as exc:
        print(f"needs core and plugins/ray installed: {exc}", file=sys.stderr)
        return 2

    # Ray lowers its workers' priority (nice 15) by default; the local side's threads run at
    # the caller's, so on a busy machine the comparison would be of priorities, not of Ray.
    os.environ.setdefault("RAY_worker_niceness", "0")
    registry = ToolRegistry(default_timeout=600)
    toolregistry_ray.enable_ray(registry, init_options={
        "num_cpus": os.cpu_count() or 2, "object_store_memory": 200 * 2**20,
        "log_to_driver": False})
    on_ray = ToolMetadata(extra={"ray": True})
    registry.register(noop)
    registry.register(crunch)
    registry.register(noop, name="ray_noop", metadata=on_ray)
    registry.register(crunch, name="ray_crunch", metadata=on_ray)
    n = _calibrate()
    c.log(f"crunch n={n} (~0.2 s per call); starting Ray and warming its workers")
    try:
        warm = registry.execute_tool_calls(
            [{"id": str(i), "name": "ray_noop", "arguments": {}} for i in range(8)])
        assert all(r.ok for r in warm), [r.text for r in warm if not r.ok]
        samples: dict[str, dict[str, list[float]]] = {
            "per call": {"local": [], "ray": []},
            "1,000 small calls": {"local": [], "ray": []},
            "20 CPU-bound calls": {"local": [], "ray": []},
        }

        def side(name: str, prefix: str) -> None:
            start = time.perf_counter()
            for _ in range(sequential):
                result = registry.invoke(f"{prefix}noop", {})
                assert result.ok, result.text
            samples["per call"][name].append((time.perf_counter() - start) / sequential)
            calls = [{"id": str(i), "name": f"{prefix}noop", "arguments": {}}
                     for i in range(many)]
            start = time.perf_counter()
            results = registry.execute_tool_calls(calls)
            elapsed = time.perf_counter() - start
            assert all(r.ok for r in results)
            samples["1,000 small calls"][name].append(elapsed * 1000 / many)
            calls = [{"id": str(i), "name": f"{prefix}crunch", "arguments": {"n": n}}
                     for i in range(20)]
            start = time.perf_counter()
            results = registry.execute_tool_calls(calls)
            samples["20 CPU-bound calls"][name].append(time.perf_counter() - start)
            assert all(r.ok for r in results), [r.text for r in results if not r.ok]

        c.interleave(["local", "ray"], rounds,
                     lambda s, _: side(s, "" if s == "local" else "ray_"))
    finally:
        registry.close()

    def row(metric: str, unit: str = "s", note: str = "") -> c.Row:
        return c.Row(metric, samples[metric], unit=unit, note=note)

    rows = [
        row("per call", note=f"invoke of a no-op, {sequential} in a row, time per call"),
        row("1,000 small calls", note=f"one batch of {many} no-op calls, time for 1,000 "
            "(calls/s = 1,000 / this)"),
        row("20 CPU-bound calls", note="one batch, wall time"),
    ]
    header = ["metric", "local", "ray", "ray/local"]
    body = []
    for r in rows:
        ratio = r.medians["ray"] / r.medians["local"] if r.medians.get("local") else float("nan")
        body.append([r.metric, r.fmt("local"), r.fmt("ray"), f"{ratio:.2f}"])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    print()
    print(f"Tool calls on Ray vs the registry's threads ({c.machine_line()}; {rounds} rounds, "
          f"medians; {c.source_state()})")
    print("  ".join("-" * w for w in widths))
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print("  ".join(str(x).ljust(w) for x, w in zip(b, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(f"  {r.metric}: {r.note}")
    payload: dict[str, Any] = {"machine": c.machine_line(), "rounds": rounds, "crunch_n": n}
    c.dump_json(args.json, payload, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
