"""Shared machinery for the side-by-side benchmarks (standard library only).

This module runs in three kinds of interpreters: ours (the kernel installed, usually editable),
the PyPI ``toolregistry`` 0.19.0 in its own virtual environment, and a langchain-core one. It
must therefore import nothing but the standard library.

Each benchmark script is both the orchestrator (``python benchmarks/x_bench.py``) and the worker
it starts in a fresh subprocess (``python benchmarks/x_bench.py --worker KIND ...``), so every
measurement of one library happens in a process that never saw the other one. The orchestrator
interleaves the sides (ours, 0.19, ours, 0.19, ... with the starting side alternating per round)
so that the noise of a small shared machine lands on both, and reports medians.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / "benchmarks"
VENVS = REPO / ".bench-venvs"  # git-ignored; reused between runs
OLD_VERSION = "0.19.0"
OLD_VENV = f"toolregistry-{OLD_VERSION}"
LANGCHAIN_SPEC = "langchain-core>=1.0,<2"  # what plugins/langchain requires
LANGCHAIN_VENV = "langchain-core"
RESULT_MARK = "@@BENCH-RESULT "


# ----------------------------------------------------------------------------- command line
def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--ours-python",
        default=sys.executable,
        help="interpreter with our kernel installed (default: the running one)",
    )
    parser.add_argument(
        "--old-python",
        default=None,
        help=f"interpreter with toolregistry {OLD_VERSION} (default: create/reuse "
        f".bench-venvs/{OLD_VENV})",
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small sizes)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds of interleaved runs")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    return parser


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- environments
def _venv_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def find_uv(*near: str) -> list[str] | None:
    """``uv`` from PATH or beside one of the given interpreters (uv is much faster than pip)."""
    found = shutil.which("uv")
    if found:
        return [found]
    for python in (*near, sys.executable):
        candidate = Path(python).parent / "uv"
        if candidate.exists():
            return [str(candidate)]
    return None


def ensure_venv(
    name: str,
    requirements: Sequence[str] = (),
    editables: Sequence[Path] = (),
    *,
    base_python: str,
) -> Path:
    """Create (or reuse) ``.bench-venvs/<name>`` holding exactly ``requirements`` + ``editables``.

    A stamp file records what was installed; the environment is rebuilt when that changes (for
    editables, when their ``pyproject.toml`` changes). ``base_python`` decides the CPython
    build, so both sides of a comparison run on the same interpreter.
    """
    path = VENVS / name
    python = _venv_python(path)
    spec = {
        "requirements": list(requirements),
        "editables": {
            str(e): hashlib.sha256((e / "pyproject.toml").read_bytes()).hexdigest()[:16]
            for e in editables
        },
        "base": _base_version(base_python),
    }
    stamp = path / ".bench-stamp.json"
    if python.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()) == spec:
                return python
        except ValueError:
            pass
    log(f"preparing {path.relative_to(REPO)} ({', '.join(requirements) or ''}"
        f"{' + ' if requirements and editables else ''}"
        f"{', '.join(str(e.relative_to(REPO)) for e in editables)})")
    VENVS.mkdir(exist_ok=True)
    if path.exists():
        shutil.rmtree(path)
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(path)], check=True)
    args: list[str] = list(requirements)
    for e in editables:
        args += ["-e", str(e)]
    uv = find_uv(base_python)
    if uv:
        cmd = [*uv, "pip", "install", "--quiet", "--python", str(python), *args]
    else:
        subprocess.run([str(python), "-m", "ensurepip", "--upgrade"], check=True,
                       stdout=subprocess.DEVNULL)
        cmd = [str(python), "-m", "pip", "install", "--quiet", *args]
    subprocess.run(cmd, check=True)
    stamp.write_text(json.dumps(spec))
    return python


def _base_version(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sys, platform; print(platform.python_implementation(), "
         "sys.version.split()[0])"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def old_python(args: argparse.Namespace) -> str:
    if args.old_python:
        return str(args.old_python)
    return str(ensure_venv(OLD_VENV, [f"toolregistry=={OLD_VERSION}"],
                           base_python=args.ours_python))


def langchain_python(args: argparse.Namespace) -> str:
    return str(ensure_venv(LANGCHAIN_VENV, [LANGCHAIN_SPEC], base_python=args.ours_python))


def distribution_versions(python: str, names: Iterable[str]) -> dict[str, str | None]:
    code = (
        "import json, sys, importlib.metadata as md\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = md.version(n)\n"
        "    except md.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([python, "-c", code, *names], capture_output=True, text=True, check=True)
    return dict(json.loads(res.stdout))


def check_ours(python: str) -> str:
    """Refuse to benchmark a 0.x toolregistry as 'ours'."""
    version = distribution_versions(python, ["toolregistry"])["toolregistry"]
    if version is None or version.startswith("0."):
        raise SystemExit(
            f"{python} has toolregistry {version}, not our kernel: pass --ours-python with an "
            "interpreter where `uv pip install -e core` was run"
        )
    return version


# ----------------------------------------------------------------------------- workers
def run_worker(python: str, script: Path, kind: str, params: dict[str, Any],
               *, env: dict[str, str] | None = None, timeout: float = 900) -> dict[str, Any]:
    """Run ``script --worker kind`` under ``python`` in a fresh process; return its result."""
    cmd = [python, str(script), "--worker", kind, "--params", json.dumps(params)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                         env=env, cwd=str(REPO))
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            return dict(json.loads(line[len(RESULT_MARK):]))
    raise RuntimeError(
        f"worker {kind} under {python} failed (exit {res.returncode}):\n"
        f"{res.stderr[-3000:]}"
    )


def worker_args(argv: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """``(kind, params)`` when this process is a worker, else ``None``."""
    if "--worker" not in argv:
        return None
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--params", default="{}")
    ns = parser.parse_args(argv)
    return ns.worker, dict(json.loads(ns.params))


def emit_result(result: dict[str, Any]) -> None:
    sys.stdout.flush()
    print(RESULT_MARK + json.dumps(result), flush=True)


def run_script(worker: Callable[..., dict[str, Any]], main: Callable[[list[str]], int]) -> None:
    """A benchmark script's entry point: run as a worker (``--worker``) it measures one side
    and prints the result for its parent; otherwise ``main`` runs the whole benchmark."""
    args = worker_args(sys.argv[1:])
    if args is not None:
        emit_result(worker(*args))
    else:
        sys.exit(main(sys.argv[1:]))


def interleave(sides: Sequence[str], repeats: int, run: Callable[[str, int], None]) -> None:
    """Call ``run(side, round)`` round-robin; the starting side rotates with the round."""
    for r in range(repeats):
        k = r % len(sides)
        for side in [*sides[k:], *sides[:k]]:
            run(side, r)


def wall(cmd: Sequence[str], env: dict[str, str] | None = None,
         cwd: str | Path = REPO) -> tuple[float, str]:
    """Wall time of one fresh process (parent-side, like ``time python -c ...``)."""
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(cwd))
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-2000:]}")
    return elapsed, res.stdout


def cpu(cmd: Sequence[str], env: dict[str, str] | None = None,
        cwd: str | Path = REPO) -> float:
    """CPU time (user + system) of one fresh process, as the parent sees its child's."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall(cmd, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# ----------------------------------------------------------------------------- in-worker helpers
def rss_bytes() -> int:
    """Current resident set size (Linux ``/proc``; falls back to the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def settled_rss() -> int:
    gc.collect()
    return rss_bytes()


def per_call(fn: Callable[[], Any], calls: int, batches: int) -> list[float]:
    """Seconds per call of ``fn`` for each of ``batches`` batches of ``calls`` calls."""
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
    return out


# ----------------------------------------------------------------------------- generated tools
_VERBS = ["get", "list", "create", "update", "delete", "search", "compute", "convert", "send",
          "fetch", "check", "render"]
_NOUNS = ["weather", "invoice", "user", "order", "ticket", "report", "file", "price", "route",
          "event", "metric", "image"]
_PARAMS: list[tuple[str, str, str | None, str]] = [
    # (annotation, default or None, description)
    ("city", "str", None, "City name, e.g. \"Tokyo\"."),
    ("count", "int", "10", "How many items to return."),
    ("unit", 'Literal["c", "f", "k"]', '"c"', "Temperature unit."),
    ("limit", "Optional[int]", "None", "Upper bound, or none for no limit."),
    ("query", "str", None, "Free-text search query."),
    ("verbose", "bool", "False", "Include details in the answer."),
    ("ratio", "float", "0.5", "Mixing ratio between 0 and 1."),
    ("tag", "str | None", "None", "Optional tag to filter by."),
    ("user_id", "int", None, "Numeric id of the user."),
    ("mode", 'Literal["fast", "exact"]', '"fast"', "Trade-off between speed and precision."),
    ("names", "list[str]", None, "Names to look up."),
    ("page", "int", "1", "Page number, starting at 1."),
]


def tools_source(n: int, seed: int = 0, *, pep563: bool = False) -> str:
    """Python source of ``n`` varied tool functions ``tool_00000_verb_noun`` ... (deterministic).

    Signatures mix str, int, float, bool, Optional, PEP 604 unions, Literal, list[str] and
    defaults; every docstring has a summary, often a body, an ``Args:`` section and
    ``Returns:``. ``pep563``: the module starts with ``from __future__ import annotations``
    (every annotation is a string to resolve), as most modern code does.
    """
    rng = random.Random(seed)
    lines = ["from typing import Literal, Optional", "", ""]
    if pep563:
        lines.insert(0, "from __future__ import annotations")
    for i in range(n):
        name = f"tool_{i:05d}_{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        chosen = rng.sample(_PARAMS, rng.randint(1, 5))
        # required parameters first, so that the signature is valid
        chosen.sort(key=lambda p: p[2] is not None)
        sig = ", ".join(f"{p}: {ann}" + (f" = {d}" if d is not None else "")
                        for p, ann, d, _ in chosen)
        doc = [f"{name.split('_', 2)[2].replace('_', ' ').capitalize()} for tool number {i}."]
        if i % 3 == 0:
            doc += ["", "Looks the value up in the backing store and formats it for the model.",
                    "Results are cached for a minute."]
        doc += ["", "Args:"] + [f"    {p}: {desc}" for p, _, _, desc in chosen]
        doc += ["", "Returns:", "    A short text answer."]
        body = "\n".join(f"    {d}" if d else "" for d in doc).lstrip()
        first = chosen[0][0]
        lines += [f"def {name}({sig}) -> str:", f'    """{body}\n    """',
                  f"    return f\"{name}: {{{first}!r}}\"", "", ""]
    return "\n".join(lines)


def write_tools_module(n: int, seed: int = 0, *, pep563: bool = False) -> Path:
    """Write the generated module under ``.bench-venvs/_generated`` (reused when identical)."""
    source = tools_source(n, seed, pep563=pep563)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    folder = VENVS / "_generated"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"bench_tools_{n}_{digest}.py"
    if not path.exists():
        path.write_text(source)
    return path


def warm_up(city: str, days: int = 1) -> str:
    """A first tool, registered before the timed ones on both sides (what every first
    registration pays once: imports on first use, plugins loaded).

    Args:
        city: Where.
        days: How many days.
    """
    return city


def load_tools(path: str) -> list[Callable[..., Any]]:
    """Import the generated module (by path) and return its functions in definition order."""
    import importlib.util

    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return [v for k, v in vars(module).items() if k.startswith("tool_") and callable(v)]


# ----------------------------------------------------------------------------- statistics & tables
def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_seconds(s: float | None) -> str:
    if s is None or s != s:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_bytes(b: float | None) -> str:
    if b is None or b != b:
        return "-"
    return f"{b / 2**20:+.1f} MiB"


@dataclass
class Row:
    """One line of a results table. ``values`` maps a column (side) to a list of samples."""

    metric: str
    values: dict[str, list[float]]
    unit: str = "s"  # s | bytes | x
    target: str = ""  # human text, e.g. "<= 1/3" or "<= 1 ms"
    check: Callable[[dict[str, float]], bool] | None = None
    note: str = ""
    medians: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.medians = {k: median(v) for k, v in self.values.items() if v}

    def fmt(self, side: str) -> str:
        if side not in self.medians:
            return "-"
        m = self.medians[side]
        if self.unit == "bytes":
            return fmt_bytes(m)
        if self.unit == "x":
            return f"{m:.2f}"
        return fmt_seconds(m)

    def ratio(self, ours: str = "ours", old: str = "0.19") -> float | None:
        if ours in self.medians and old in self.medians and self.medians[old]:
            return self.medians[ours] / self.medians[old]
        return None

    def verdict(self) -> str:
        if self.check is None:
            return ""
        try:
            return "PASS" if self.check(self.medians) else "MISS"
        except KeyError:
            return "?"


def print_grid(title: str, header: Sequence[str], body: Sequence[Sequence[Any]]) -> None:
    """``title``, then ``body`` under ``header`` in left-aligned columns between rules."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = "  ".join("-" * w for w in widths)
    print(title)
    print(line)
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print(line)
    for r in body:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    print(line)


def print_table(title: str, rows: Sequence[Row], sides: Sequence[str]) -> None:
    header = ["metric", *sides, "ours/0.19", "target", "result"]
    body = []
    for row in rows:
        ratio = row.ratio()
        body.append([
            row.metric,
            *(row.fmt(s) for s in sides),
            "-" if ratio is None else (f"{ratio:.1e}" if ratio < 0.001 else
                                       f"{ratio:.3f}" if ratio < 0.1 else f"{ratio:.2f}"),
            row.target,
            row.verdict(),
        ])
    print()
    print_grid(title, header, body)
    for row in rows:
        if row.note:
            print(f"  {row.metric}: {row.note}")


def source_state() -> str:
    """Which kernel source "ours" measured: the commit, and whether core/ had local changes."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %cs"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "core"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "source state unknown (no git)"
    return f"repo at {head}" + (", core/ with uncommitted changes" if dirty else "")


def machine_line() -> str:
    return (f"{platform.python_implementation()} {platform.python_version()} on "
            f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs")


def dump_json(path: Path | None, payload: dict[str, Any], rows: Sequence[Row]) -> None:
    if path is None:
        return
    payload = dict(payload)
    payload["rows"] = [
        {"metric": r.metric, "unit": r.unit, "samples": r.values, "medians": r.medians,
         "ratio_ours_old": r.ratio(), "target": r.target, "result": r.verdict()}
        for r in rows
    ]
    path.write_text(json.dumps(payload, indent=2))


def discovery_speed(discovery: Callable[[Any], Any], registry: Any, queries: Sequence[str],
                    repeat: int) -> dict[str, float]:
    """Build time (wall and CPU: the median of ``repeat`` builds, and the first build of the
    process on its own, before any cache of either side is warm), memory and query times of a
    discovery index over ``registry``; ``discovery`` is the class of either side (its
    instances may have ``close()``)."""
    import tracemalloc

    builds, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        index = discovery(registry)
        builds.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        getattr(index, "close", lambda: None)()
    del index
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    index = discovery(registry)
    memory = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    times = []
    for q in queries:
        t0 = time.perf_counter()
        index.discover(q, top_k=5)
        times.append(time.perf_counter() - t0)
    return {"query_median": statistics.median(times),
            "query_p95": sorted(times)[int(0.95 * (len(times) - 1))],
            "build": statistics.median(builds), "build_cpu": statistics.median(cpu),
            "build_first": builds[0], "build_first_cpu": cpu[0], "memory": memory}
