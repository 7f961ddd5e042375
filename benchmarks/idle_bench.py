"""Idle plugins (issue 37): what each installed plugin adds to a call of a tool it does not
concern, and every plugin installed against the kernel alone.

    python benchmarks/idle_bench.py              # 3 fresh processes x 40 interleaved rounds
    python benchmarks/idle_bench.py --quick      # 1 process, 8 rounds: a smoke run
    python benchmarks/idle_bench.py --profile    # also: where a call's time goes (cProfile)

The tools are trivial (``add(a: int, b: int) -> int`` and its ``async`` twin), so what is
measured is the registry. Every registry is made with ``default_timeout="none"``: without a
deadline a sync call runs on the caller's thread, so no hand-off to a worker hides what the
plugins add. Each worker process makes these registries side by side:

* ``kernel only``: ``ToolRegistry(load_plugins=[])``;
* ``every plugin``: every installed plugin loaded (the default);
* ``kernel + NAME``: ``load_plugins=[NAME]``, one per plugin the default loads;
* ``every plugin, log in use``: every plugin, and the inspector's execution log asked for
  (``execution_log(registry)``), so that it records every call: a plugin at work, not idle,
  shown for comparison (the target is judged on ``every plugin``).

and times, per round, a batch of ``registry.invoke("add", ...)`` on each (the sides
interleaved, the first one rotating per round), then the same with ``await
registry.ainvoke("aadd", ...)`` on one event loop, in CPU time of the process (steadier than
the wall clock on a loaded machine). What a plugin adds is the median of the per-round
differences to ``kernel only`` (paired: both timed in the same round, close together); the
ratio is the median of the per-round ratios. The results of the processes are pooled.

``--profile`` runs ``cProfile.Profile(time.process_time)`` over the sync calls of ``every
plugin`` and of ``kernel only`` and sorts each function's own time by owner: a plugin's
package, the kernel (``toolregistry``) or the rest (pydantic, the standard library). The
profiler inflates every function call alike, so these are shares, not costs; the kernel's
row is what it spends in both registries (the difference: the plumbing for the plugins'
hooks, such as call observers).

Target (issue 37): every plugin installed <= 1.10x the kernel alone per call (aim 1.05x).
Needs every first-party plugin installed (``nox -s bench`` has them).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

SCRIPT = Path(__file__).resolve()
KERNEL = "kernel only"
EVERY = "every plugin"
IN_USE = "every plugin, log in use"
ARGS = {"a": 1, "b": 2}


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


async def aadd(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


# ----------------------------------------------------------------------------- worker side
def _registries() -> dict[str, Any]:
    from toolregistry import ToolRegistry

    def make(**kwargs: Any) -> Any:
        registry = ToolRegistry(default_timeout="none", **kwargs)
        registry.register(add)
        registry.register(aadd)
        assert registry.invoke("add", ARGS).content == "3"
        return registry

    every = make()
    loaded = sorted(r["name"] for r in every.plugins.report() if r["status"] == "loaded")
    sides = {KERNEL: make(load_plugins=[]), EVERY: every}
    for name in loaded:
        sides[f"kernel + {name}"] = make(load_plugins=[name])
    if "inspector" in loaded:  # not idle: what a log in use costs, for comparison
        from toolregistry_inspector import execution_log

        in_use = make()
        execution_log(in_use)
        sides[IN_USE] = in_use
    return sides


def _turns(names: list[str], rounds: int) -> Iterator[str]:
    """Every side once per round, the first one rotating."""
    for r in range(rounds):
        k = r % len(names)
        yield from names[k:] + names[:k]


def _interleaved(sides: dict[str, Callable[[int], Any]], rounds: int, calls: int
                 ) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {n: [] for n in sides}
    for name in _turns(list(sides), rounds):
        t0 = time.process_time()
        sides[name](calls)
        out[name].append((time.process_time() - t0) / calls)
    return out


def _sync_side(registry: Any) -> Callable[[int], None]:
    invoke = registry.invoke

    def side(n: int) -> None:
        for _ in range(n):
            invoke("add", ARGS)

    return side


def _async_times(registries: dict[str, Any], rounds: int, calls: int
                 ) -> dict[str, list[float]]:
    import asyncio

    async def main() -> dict[str, list[float]]:
        def side(registry: Any) -> Callable[[int], Any]:
            ainvoke = registry.ainvoke

            async def run(n: int) -> None:
                for _ in range(n):
                    await ainvoke("aadd", ARGS)

            return run

        sides = {name: side(registry) for name, registry in registries.items()}
        for run in sides.values():
            await run(max(calls // 4, 10))  # warm: plans compiled
        out: dict[str, list[float]] = {n: [] for n in sides}
        for name in _turns(list(sides), rounds):
            t0 = time.process_time()
            await sides[name](calls)
            out[name].append((time.process_time() - t0) / calls)
        return out

    return asyncio.run(main())


def _owner(filename: str) -> str:
    path = filename.replace("\\", "/")
    marker = "/toolregistry_"
    if marker in path:
        return path.split(marker, 1)[1].split("/", 1)[0]
    if "/toolregistry/" in path:
        return "kernel"
    return "rest"


def _profile(registry: Any, calls: int) -> dict[str, float]:
    """Own time per call (seconds, profiled) by owner of the function."""
    import cProfile
    import pstats

    invoke = registry.invoke
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(calls):
        invoke("add", ARGS)
    profiler.disable()
    owners: dict[str, float] = {}
    stats: Any = pstats.Stats(profiler).stats
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.items():
        owner = _owner(filename)
        owners[owner] = owners.get(owner, 0.0) + tottime / calls
    return owners


def _worker(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    registries = _registries()
    rounds, calls = int(params["rounds"]), int(params["calls"])
    sync_sides = {name: _sync_side(registry) for name, registry in registries.items()}
    for side in sync_sides.values():
        side(max(calls // 4, 10))  # warm: plans compiled, imports done
    out: dict[str, Any] = {"sides": list(registries),
                           "sync": _interleaved(sync_sides, rounds, calls),
                           "async": _async_times(registries, rounds, calls)}
    if params.get("profile"):
        out["profile"] = {name: _profile(registries[name], 20 * calls)
                          for name in (KERNEL, EVERY)}
    for registry in registries.values():
        registry.close()
    return out


# ----------------------------------------------------------------------------- orchestrator
def _paired(samples: list[dict[str, Any]], api: str, side: str,
            how: Callable[[float, float], float]) -> float:
    values = [how(a, b) for s in samples
              for a, b in zip(s[api][side], s[api][KERNEL], strict=True)]
    return statistics.median(values)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:+.2f} µs"


def main(argv: list[str]) -> int:
    parser = c.base_parser(__doc__.split("\n")[0])
    parser.add_argument("--profile", action="store_true",
                        help="also profile where a call's time goes, by owner")
    args = parser.parse_args(argv)
    processes = args.repeats or (1 if args.quick else 3)
    params = {"rounds": 8 if args.quick else 40, "calls": 300 if args.quick else 2000,
              "profile": args.profile}
    c.check_ours(args.ours_python)
    samples = []
    for p in range(processes):
        c.log(f"process {p + 1}/{processes}")
        samples.append(c.run_worker(args.ours_python, SCRIPT, "idle", params))
    sides: list[str] = samples[0]["sides"]

    def median_of(api: str, side: str) -> float:
        return statistics.median(x for s in samples for x in s[api][side])

    print(f"\n{c.machine_line()}; {processes} fresh process(es) x {params['rounds']} "
          f"interleaved rounds of {params['calls']} calls per side; CPU time per call; "
          f"{c.source_state()}")
    print('every registry: ToolRegistry(default_timeout="none"); sync: invoke("add"), '
          'async: await ainvoke("aadd")')
    header = ["registry", "sync per call", "adds", "async per call", "adds"]
    body = []
    for side in sides:
        body.append([side, c.fmt_seconds(median_of("sync", side)),
                     "" if side == KERNEL else _us(_paired(samples, "sync", side,
                                                           lambda a, b: a - b)),
                     c.fmt_seconds(median_of("async", side)),
                     "" if side == KERNEL else _us(_paired(samples, "async", side,
                                                           lambda a, b: a - b))])
    print()
    c.print_grid("idle_bench: per plugin, what it adds per call (median of paired differences)",
                 header, body)

    rows = []
    for api in ("sync", "async"):
        ratio = _paired(samples, api, EVERY, lambda a, b: a / b)
        rows.append(c.Row(f"{api}: every plugin / kernel only", {"ratio": [ratio]}, unit="x",
                          target="<= 1.10 (aim 1.05)",
                          check=lambda m: m["ratio"] <= 1.10))
    print("\nratio (median of per-round ratios)")
    for row in rows:
        print(f"  {row.metric:38s} {row.fmt('ratio'):>6s}  target {row.target}  "
              f"{row.verdict()}")

    if args.profile:
        owners = sorted({o for s in samples for side in s["profile"].values() for o in side})
        print("\nwhere a sync call's time goes (cProfile, own time per call, inflated by the "
              "profiler)")
        for owner in owners:
            got = {side: statistics.median(s["profile"][side].get(owner, 0.0)
                                           for s in samples) for side in (KERNEL, EVERY)}
            print(f"  {owner:12s} kernel only {got[KERNEL] * 1e6:6.2f} µs   every plugin "
                  f"{got[EVERY] * 1e6:6.2f} µs")
    c.dump_json(args.json, {"bench": "idle", "raw": samples}, rows)
    return 0


if __name__ == "__main__":
    c.run_script(_worker, main)
