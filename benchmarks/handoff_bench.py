"""Hand-off benchmark: what a sync ``invoke`` pays for crossing to a worker thread.

    python benchmarks/handoff_bench.py                 # 3 processes x 10 rounds x 500 calls
    python benchmarks/handoff_bench.py --quick         # 1 process x 3 rounds: a smoke run
    python benchmarks/handoff_bench.py --compare OTHER/core/src   # also another kernel's tree
    python benchmarks/handoff_bench.py --primitives    # bare hand-offs, no registry

A trivial tool (``add(a: int, b: int)``), kernel only (``load_plugins=[]``), one registry per
mode in the same process, their rounds interleaved in a shuffled order so that a shared
machine's noise lands on every mode alike: ``inline`` (``default_timeout="none"``: no deadline,
no hand-off), ``unpinned`` (``handoff_pinning=False``), ``pinned`` (``True``) and ``auto`` (the
default). With ``--compare`` each process measures one kernel, the kernels alternating.

Per call: the wall clock, the process's CPU time (the worker's included) and the calling
thread's CPU time, medians over every round. The hop costs the difference to ``inline``. Read
the load line: ``auto`` pins only while a CPU is idle, so on a busy machine it is ``unpinned``.

``--primitives`` measures the ways a thread can hand a call to another and wait for the answer,
without the registry (``_primitives.py``): the caller runs about 3 µs of Python before each
hand-off (what the pipeline does around a call), the "tool" about 1 µs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _primitives import main as primitives

MODES: dict[str, dict[str, Any]] = {
    "inline": {"default_timeout": "none"},
    "unpinned": {"handoff_pinning": False},
    "pinned": {"handoff_pinning": True},
    "auto": {},
}
MARK = "@@HANDOFF "
CORE_SRC = Path(__file__).resolve().parents[1] / "core" / "src"


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def _worker(rounds: int, calls: int, seed: int) -> dict[str, dict[str, list[float]]]:
    from toolregistry import ToolRegistry

    registries = {}
    for mode, kwargs in MODES.items():
        registry = ToolRegistry(load_plugins=[], **kwargs)
        registry.register(add)
        for _ in range(200):  # warm: the worker exists, the call plan and validator are built
            registry.invoke("add", {"a": 1, "b": 2})
        registries[mode] = registry
    out: dict[str, dict[str, list[float]]] = {
        m: {"wall": [], "cpu": [], "caller_cpu": []} for m in MODES}
    order = list(MODES)
    rng = random.Random(seed)
    arguments = {"a": 1, "b": 2}
    for _ in range(rounds):
        rng.shuffle(order)
        for mode in order:
            invoke = registries[mode].invoke
            t0, p0, c0 = time.perf_counter(), time.process_time(), time.thread_time()
            for _ in range(calls):
                invoke("add", arguments)
            out[mode]["wall"].append((time.perf_counter() - t0) / calls)
            out[mode]["cpu"].append((time.process_time() - p0) / calls)
            out[mode]["caller_cpu"].append((time.thread_time() - c0) / calls)
    for registry in registries.values():
        registry.close()
    return out


def _load() -> float:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--repeats", type=int, default=None, help="processes per kernel")
    parser.add_argument("--compare", default=None, help="another kernel's core/src to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--primitives", action="store_true",
                        help="bare hand-off primitives instead of the registry's modes")
    parser.add_argument("--worker", nargs=3, type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.primitives:
        return primitives(quick=args.quick, repeats=args.repeats or (1 if args.quick else 3),
                          load=_load)
    if args.worker is not None:
        print(MARK + json.dumps(_worker(*args.worker)))
        return 0
    processes = args.repeats or (1 if args.quick else 3)
    rounds, calls = (3, 200) if args.quick else (10, 500)
    kernels = [("ours", str(CORE_SRC))]
    if args.compare:
        kernels.append(("compared", str(Path(args.compare).resolve())))
    samples: dict[str, dict[str, dict[str, list[float]]]] = {}
    loads = [_load()]
    for p in range(processes):
        for label, src in (kernels if p % 2 == 0 else kernels[::-1]):
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep)
            print(f"[bench] process {p + 1}/{processes}: {label}", file=sys.stderr, flush=True)
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", str(rounds), str(calls), str(p)],
                capture_output=True, text=True, env=env, check=False)
            lines = [x for x in proc.stdout.splitlines() if x.startswith(MARK)]
            if proc.returncode or not lines:
                print(proc.stderr, file=sys.stderr)
                return 1
            for mode, values in json.loads(lines[0][len(MARK):]).items():
                for key, xs in values.items():
                    samples.setdefault(label, {}).setdefault(mode, {}).setdefault(
                        key, []).extend(xs)
            loads.append(_load())
    print(f"\nhandoff_bench: {processes} process(es) per kernel x {rounds} rounds x {calls} "
          f"invokes; load {min(loads):.2f}-{max(loads):.2f}; medians per call, µs: "
          "wall / process CPU / calling thread's CPU")
    print(f"{'kernel':10s}" + "".join(f"{m:>22s}" for m in MODES))
    for label, _ in kernels:
        row = f"{label:10s}"
        for mode in MODES:
            v = samples[label][mode]
            row += "".join(f"{statistics.median(v[k]) * 1e6:6.1f}" +
                           ("/" if k != "caller_cpu" else "")
                           for k in ("wall", "cpu", "caller_cpu")).rjust(22)
        print(row)
    if args.json is not None:
        args.json.write_text(json.dumps({"bench": "handoff", "loads": loads, "raw": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
