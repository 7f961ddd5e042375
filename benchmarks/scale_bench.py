"""Scale benchmark (issue 18 item 5): 1k / 10k / 100k generated tools in a PEP 563 module.

    python benchmarks/scale_bench.py               # 1k, 10k (3 rounds each), 100k (1 round)
    python benchmarks/scale_bench.py --quick       # 1k and 10k, 1 round: a smoke run
    python benchmarks/scale_bench.py --sizes 1000,50000 --repeats 2 --png docs/assets/x.png

Every measurement runs in a fresh process on the same generated functions (a module that starts
with ``from __future__ import annotations``, so every annotation is a string to resolve):

* ours: the kernel **with every first-party plugin installed** (``.bench-venvs/ours-plugins``,
  the environment import_bench builds), configuration from an empty file;
* 0.19: the PyPI package toolregistry 0.19.0 (its own venv), at sizes up to 10,000 (it takes
  minutes and gigabytes beyond).

Per size and side: register every function (after one first registration of another function,
which both sides pay once), RSS growth from that registration (the tools' module is loaded
before the baseline), ``get_schemas`` cold and warm, ``invoke`` of one of the tools (median per
call), the discovery index build (construction plus the first query, so a lazy index pays its
build too) and the median query over 60 queries. The table prints PASS/MISS per target; the
log-log plot (``--png``, matplotlib in the ``bench`` session) draws each metric against size.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

SCRIPT = Path(__file__).resolve()
DEFAULT_PNG = c.REPO / "docs" / "assets" / "scale_bench.png"
OLD_MAX = 10_000

# Arguments for the generated tools' required parameters (see _common._PARAMS).
_REQUIRED_VALUES: dict[str, Any] = {"city": "Tokyo", "query": "weather", "user_id": 7,
                                    "names": ["a", "b"]}
_QUERY_PARTS = (["get", "list", "create", "update", "delete", "search", "compute", "convert",
                 "send", "fetch", "check", "render"],
                ["weather", "invoice", "user", "order", "ticket", "report", "file", "price",
                 "route", "event", "metric", "image"])


def queries() -> list[str]:
    """60 short queries a model would write, over the generated tools' vocabulary."""
    verbs, nouns = _QUERY_PARTS
    out = []
    for i in range(60):
        verb, noun = verbs[i % len(verbs)], nouns[(i * 5) % len(nouns)]
        out.append([f"{verb} the {noun}", f"{verb} {noun} for a city",
                    f"how do I {verb} a {noun} by user id"][i % 3])
    return out


# ----------------------------------------------------------------------------- worker side
def _worker(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    import inspect

    fns = c.load_tools(params["path"])
    out: dict[str, Any] = {"n": len(fns)}
    if kind == "ours":
        from toolregistry import ToolRegistry
        from toolregistry_discovery import ToolDiscoveryTool

        registry = ToolRegistry(config=params["config"])
    elif kind == "old":
        from toolregistry import ToolRegistry  # 0.19, in its own venv
        from toolregistry.llm.discovery import (  # type: ignore[import-not-found,unused-ignore]
            ToolDiscoveryTool,
        )

        registry = ToolRegistry()
    else:
        raise SystemExit(f"unknown worker kind {kind!r}")

    registry.register(c.warm_up)
    rss0 = c.settled_rss()
    t0, p0 = time.perf_counter(), time.process_time()
    for fn in fns:
        registry.register(fn)
    out["register"] = time.perf_counter() - t0
    out["register_cpu"] = time.process_time() - p0
    out["rss_register"] = c.settled_rss() - rss0
    out["rss_total"] = c.rss_bytes()

    t0 = time.perf_counter()
    schemas = registry.get_schemas(api_format="openai-chat")
    out["schemas_cold"] = time.perf_counter() - t0
    assert len(schemas) == len(fns) + 1, (len(schemas), len(fns))
    out["schemas_warm"] = c.median(
        c.per_call(lambda: registry.get_schemas(api_format="openai-chat"), 1, 20))

    fn = fns[len(fns) // 2]
    args = {p: _REQUIRED_VALUES[p] for p, prm in inspect.signature(fn).parameters.items()
            if prm.default is inspect.Parameter.empty}
    result = registry.invoke(fn.__name__, args)
    text = str(getattr(result, "content", None) or getattr(result, "result", result))
    assert fn.__name__ in text, text  # the tool really ran
    out["invoke"] = c.median(c.per_call(lambda: registry.invoke(fn.__name__, args), 200, 7))

    qs = queries()
    t0, p0 = time.perf_counter(), time.process_time()
    index = ToolDiscoveryTool(registry, semantic=False)  # the BM25F index, as 0.19's
    index.discover(qs[0], top_k=5)
    out["index_build"] = time.perf_counter() - t0
    out["index_build_cpu"] = time.process_time() - p0
    times = []
    for q in qs:
        t0 = time.perf_counter()
        found = index.discover(q, top_k=5)
        times.append(time.perf_counter() - t0)
    assert found, f"no tool found for {qs[-1]!r}"
    out["query"] = c.median(times)
    out["rss_after_index"] = c.settled_rss() - rss0
    return out


# ----------------------------------------------------------------------------- orchestrator
METRICS: list[tuple[str, str, str]] = [
    # key, label, unit
    ("register", "register", "s"),
    ("register_cpu", "  same, CPU time of the process", "s"),
    ("rss_register", "RSS growth after register", "bytes"),
    ("schemas_cold", "get_schemas cold", "s"),
    ("schemas_warm", "get_schemas warm", "s"),
    ("invoke", "invoke (per call)", "s"),
    ("index_build", "discovery index build", "s"),
    ("index_build_cpu", "  same, CPU time of the process", "s"),
    ("query", "discovery query (median)", "s"),
    ("rss_after_index", "RSS growth after index", "bytes"),
]
# ratio targets (ours / 0.19), from issue 18
RATIO_TARGETS = {"register": 0.10, "rss_register": 0.25, "index_build": 0.20, "query": 0.05,
                 "invoke": 0.10,
                 # the CPU rows: what a loaded machine inflates much less than the wall clock
                 "register_cpu": 0.10, "index_build_cpu": 0.20}
# absolute targets at 100,000 tools
AT_100K = {"register": (5.0, "<= 5 s"), "register_cpu": (5.0, "<= 5 s"),
           "index_build": (3.0, "<= 3 s"), "index_build_cpu": (3.0, "<= 3 s"),
           "query": (1e-3, "<= 1 ms"), "rss_register": (300 * 2**20, "<= 300 MiB")}


def _at_most(limit: float) -> Callable[[dict[str, float]], bool]:
    return lambda m: m["ours"] <= limit


def _ratio_at_most(ratio: float) -> Callable[[dict[str, float]], bool]:
    return lambda m: m["ours"] <= ratio * m["0.19"]


def _rows(n: int, samples: dict[str, list[dict[str, Any]]]) -> list[c.Row]:
    rows = []
    for key, label, unit in METRICS:
        values = {s: [float(x[key]) for x in v if key in x] for s, v in samples.items()}
        target, check = "", None
        if n == 100_000 and key in AT_100K:
            limit, text = AT_100K[key]
            target, check = f"ours {text}", _at_most(limit)
        elif key in RATIO_TARGETS and samples.get("0.19"):
            target, check = f"<= {RATIO_TARGETS[key]:.2f}", _ratio_at_most(RATIO_TARGETS[key])
        rows.append(c.Row(f"{label} [{n:,}]", values, unit=unit, target=target, check=check))
    return rows


def plot(png: Path, results: dict[int, dict[str, list[dict[str, Any]]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [m for m in METRICS if m[0] in ("register", "schemas_cold", "invoke",
                                             "index_build", "query", "rss_register")]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7))
    for ax, (key, label, unit) in zip(axes.flat, shown):
        for side, style in (("ours", "o-"), ("0.19", "s--")):
            pts = [(n, c.median([float(x[key]) for x in r[side]]))
                   for n, r in sorted(results.items()) if r.get(side)]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] / (2**20 if unit == "bytes" else 1)
                                              for p in pts], style, label=side)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(label)
        ax.set_xlabel("tools")
        ax.set_ylabel("MiB" if unit == "bytes" else "seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("toolregistry (all plugins) vs 0.19, PEP 563 tools, medians")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=90, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str]) -> int:
    parser = c.base_parser(__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=None,
                        help="comma-separated tool counts (default 1000,10000,100000; "
                        "--quick: 1000,10000)")
    parser.add_argument("--png", type=Path, default=None,
                        help=f"write the log-log plot here (default with matplotlib present: "
                        f"{DEFAULT_PNG.relative_to(c.REPO)})")
    parser.add_argument("--no-png", action="store_true", help="do not draw the plot")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick
                                             else "1000,10000,100000")).split(",")]
    base_repeats = args.repeats or (1 if args.quick else 3)

    from import_bench import plugins_python  # the all-plugins environment, built once

    ours, skipped = plugins_python(args)
    if skipped:
        c.log(f"plugins that did not install (left out): {', '.join(skipped)}")
    c.check_ours(ours)
    old = c.old_python(args)
    config = c.VENVS / "_generated" / "empty-config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# no [tool.toolregistry] table: defaults only\n")
    pythons = {"ours": ours, "0.19": old}
    kinds = {"ours": "ours", "0.19": "old"}
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    all_rows: list[c.Row] = []
    for n in sizes:
        path = c.write_tools_module(n, pep563=True)
        sides = ["ours", "0.19"] if n <= OLD_MAX else ["ours"]
        repeats = base_repeats if n <= OLD_MAX else max(1, base_repeats // 3)
        samples: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}

        def run(side: str, r: int, n: int = n, path: Path = path,
                samples: dict[str, list[dict[str, Any]]] = samples, repeats: int = repeats
                ) -> None:
            c.log(f"{n:,} tools, round {r + 1}/{repeats}: {side}")
            samples[side].append(c.run_worker(
                pythons[side], SCRIPT, kinds[side],
                {"path": str(path), "config": str(config)}, timeout=3600))

        c.interleave(sides, repeats, run)
        results[n] = samples
        all_rows += _rows(n, samples)

    print(f"\n{c.machine_line()}; PEP 563 generated tools; medians of interleaved fresh-process "
          f"rounds ({base_repeats} up to {OLD_MAX:,} tools, {max(1, base_repeats // 3)} above)")
    print(f"  ours: toolregistry {c.distribution_versions(ours, ['toolregistry'])['toolregistry']}"
          f" with every plugin under plugins/ [{ours}]"
          + (f" (left out: {', '.join(skipped)})" if skipped else ""))
    print(f"  0.19: toolregistry {c.distribution_versions(old, ['toolregistry'])['toolregistry']}"
          f" [{old}] (up to {OLD_MAX:,} tools)")
    print(f"  ours source: {c.source_state()}")
    c.print_table("scale_bench: register, schemas, invoke, discovery, memory", all_rows,
                  ["ours", "0.19"])
    print("  RSS growth: settled RSS after registering (or indexing) minus before, with the "
          "tools' module already loaded; the 100k RSS target applies to it")
    if not args.no_png:
        png = args.png or DEFAULT_PNG
        try:
            plot(png, results)
            print(f"  plot: {png}")
        except ImportError:
            if args.png:
                raise
            c.log("matplotlib is not installed here: no plot (the bench session has it)")
    c.dump_json(args.json, {"bench": "scale", "sizes": sizes, "raw": {
        str(n): r for n, r in results.items()}}, all_rows)
    return 0


if __name__ == "__main__":
    c.run_script(_worker, main)
