"""Registry benchmark (issue 3): register N generated functions, emit their schemas, RSS growth.

    python benchmarks/core_bench.py            # 10,000 tools, 5 interleaved rounds
    python benchmarks/core_bench.py --quick    # 1,000 tools, 1 round: a smoke run

Side by side, each measurement in a fresh process, on the same generated functions:
ours (``--ours-python``, default: this interpreter), PyPI toolregistry 0.19.0 (its own venv under
``.bench-venvs/``) and langchain-core (``StructuredTool.from_function(..., parse_docstring=True)``
then ``convert_to_openai_tool``; it has no registry and no schema cache).

Targets: register >= 10x faster than 0.19, also for the same functions in a PEP 563 module
(``from __future__ import annotations``, issue 18); get_schemas cold >= 5x faster, warm <= 1 ms;
RSS growth after registering <= 1/4 of 0.19's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

SCRIPT = Path(__file__).resolve()


# ----------------------------------------------------------------------------- worker side
def _worker(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    fns = c.load_tools(params["path"])
    warm_calls = int(params.get("warm_calls", 50))
    fmt = params.get("api_format", "openai-chat")
    out: dict[str, Any] = {"n": len(fns)}
    if kind in ("ours", "old"):
        from toolregistry import ToolRegistry

        registry = ToolRegistry()

        def get_schemas() -> Any:
            # The same call on both: 0.19 takes api_format as a keyword too.
            return registry.get_schemas(api_format=fmt)

        rss0 = c.settled_rss()
        t0, p0 = time.perf_counter(), time.process_time()
        if params.get("register_only"):
            # one function of this file first: what every first registration pays once
            # (imports done on first use, plugins loaded), then the module's functions
            registry.register(c.warm_up)
            t1, p1 = time.perf_counter(), time.process_time()
            for fn in fns:
                registry.register(fn)
            out["register"] = time.perf_counter() - t0
            out["register_cpu"] = time.process_time() - p0
            out["register_steady"] = time.perf_counter() - t1
            out["register_steady_cpu"] = time.process_time() - p1
            return out
        for fn in fns:
            registry.register(fn)
        out["register"] = time.perf_counter() - t0
        out["register_cpu"] = time.process_time() - p0
        out["rss_register"] = c.settled_rss() - rss0
        t0, p0 = time.perf_counter(), time.process_time()
        schemas = get_schemas()
        out["schemas_cold"] = time.perf_counter() - t0
        out["schemas_cold_cpu"] = time.process_time() - p0
        out["rss_schemas"] = c.settled_rss() - rss0
        assert len(schemas) == len(fns), (len(schemas), len(fns))
        out["schemas_warm"] = c.median(c.per_call(get_schemas, 1, warm_calls))
    elif kind == "langchain":
        # langchain-core lives in its own venv, not in the one mypy checks with
        from langchain_core.tools import (  # type: ignore[import-not-found,unused-ignore]
            StructuredTool,
        )
        from langchain_core.utils.function_calling import (  # type: ignore[import-not-found,unused-ignore]
            convert_to_openai_tool,
        )

        rss0 = c.settled_rss()
        t0, p0 = time.perf_counter(), time.process_time()
        tools = [
            StructuredTool.from_function(fn, parse_docstring=True,
                                         error_on_invalid_docstring=False)
            for fn in fns
        ]
        out["register"] = time.perf_counter() - t0
        out["register_cpu"] = time.process_time() - p0
        out["rss_register"] = c.settled_rss() - rss0
        t0, p0 = time.perf_counter(), time.process_time()
        schemas = [convert_to_openai_tool(t) for t in tools]
        out["schemas_cold"] = time.perf_counter() - t0
        out["schemas_cold_cpu"] = time.process_time() - p0
        out["rss_schemas"] = c.settled_rss() - rss0
        # No cache in langchain-core: a "warm" call converts again; a few calls suffice.
        out["schemas_warm"] = c.median(
            c.per_call(lambda: [convert_to_openai_tool(t) for t in tools], 1, 3))
        assert len(schemas) == len(fns)
    else:
        raise SystemExit(f"unknown worker kind {kind!r}")
    return out


# ----------------------------------------------------------------------------- orchestrator
def main(argv: list[str]) -> int:
    parser = c.base_parser(__doc__.split("\n")[0])
    parser.add_argument("-n", "--tools", type=int, default=None,
                        help="number of generated tools (default 10000; --quick: 1000)")
    parser.add_argument("--no-langchain", action="store_true", help="skip langchain-core")
    parser.add_argument("--langchain-repeats", type=int, default=None,
                        help="rounds for langchain-core (default: min(repeats, 3))")
    parser.add_argument("--api-format", default="openai-chat")
    args = parser.parse_args(argv)
    n = args.tools or (1000 if args.quick else 10_000)
    repeats = args.repeats or (1 if args.quick else 5)
    lc_repeats = args.langchain_repeats or min(repeats, 3)

    ours_version = c.check_ours(args.ours_python)
    pythons = {"ours": args.ours_python, "0.19": c.old_python(args)}
    sides = ["ours", "0.19"]
    if not args.no_langchain:
        pythons["langchain-core"] = c.langchain_python(args)
        sides.append("langchain-core")
    versions = {
        "ours": f"toolregistry {ours_version}",
        "0.19": f"toolregistry {c.distribution_versions(pythons['0.19'], ['toolregistry'])['toolregistry']}",
    }
    if "langchain-core" in pythons:
        lc = c.distribution_versions(pythons["langchain-core"], ["langchain-core", "pydantic"])
        versions["langchain-core"] = f"langchain-core {lc['langchain-core']} (pydantic {lc['pydantic']})"
    path = c.write_tools_module(n)
    path563 = c.write_tools_module(n, pep563=True)
    kinds = {"ours": "ours", "0.19": "old", "langchain-core": "langchain"}
    samples: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    samples563: dict[str, list[dict[str, Any]]] = {s: [] for s in ("ours", "0.19")}

    def run(side: str, r: int) -> None:
        if side == "langchain-core" and r >= lc_repeats:
            return
        c.log(f"round {r + 1}/{repeats}: {side} registering {n} tools")
        res = c.run_worker(pythons[side], SCRIPT, kinds[side],
                           {"path": str(path), "api_format": args.api_format,
                            "warm_calls": 20 if args.quick else 50})
        samples[side].append(res)
        if side in samples563:  # the same functions, every annotation a string (PEP 563)
            samples563[side].append(c.run_worker(pythons[side], SCRIPT, kinds[side], {
                "path": str(path563), "register_only": True}))

    c.interleave(sides, repeats, run)

    def col(key: str, source: dict[str, list[dict[str, Any]]] = samples
            ) -> dict[str, list[float]]:
        return {s: [float(x[key]) for x in source[s] if key in x] for s in source}

    def per_tool(key: str, source: dict[str, list[dict[str, Any]]]) -> dict[str, list[float]]:
        return {s: [v / n for v in values] for s, values in col(key, source).items()}

    def faster(factor: float) -> Any:
        return lambda m: m["0.19"] / m["ours"] >= factor

    rows = [
        c.Row(f"register {n} functions", col("register"), target=">= 10x faster (<= 0.10)",
              check=faster(10)),
        c.Row("  same, CPU time of the process", col("register_cpu"),
              target=">= 10x (<= 0.10)", check=faster(10)),
        c.Row(f"register {n} functions, PEP 563 module", col("register", samples563),
              target=">= 10x faster (<= 0.10)", check=faster(10),
              note="the same functions under `from __future__ import annotations` (every "
              "annotation a string to resolve), after one first registration of another "
              "function; 'per tool' rows leave that first registration out"),
        c.Row("  same, CPU time of the process", col("register_cpu", samples563),
              target=">= 10x (<= 0.10)", check=faster(10)),
        c.Row("  per tool", per_tool("register_steady", samples563),
              target=">= 10x (<= 0.10)", check=faster(10)),
        c.Row("  per tool, CPU time of the process", per_tool("register_steady_cpu", samples563),
              target=">= 10x (<= 0.10)", check=faster(10)),
        c.Row(f"get_schemas({args.api_format}) cold", col("schemas_cold"),
              target=">= 5x faster (<= 0.20)", check=faster(5)),
        c.Row("  same, CPU time of the process", col("schemas_cold_cpu"),
              target=">= 5x (<= 0.20)", check=faster(5)),
        c.Row("get_schemas warm (unchanged registry)", col("schemas_warm"),
              target="ours <= 1 ms", check=lambda m: m["ours"] <= 1e-3,
              note="langchain-core has no cache: its 'warm' converts every tool again"
              if "langchain-core" in sides else ""),
        c.Row("RSS growth after register", col("rss_register"), unit="bytes",
              target="<= 1/4 of 0.19 (<= 0.25)",
              check=lambda m: m["ours"] <= m["0.19"] / 4),
        c.Row("RSS growth after register + schemas", col("rss_schemas"), unit="bytes"),
    ]
    print(f"\n{c.machine_line()}; {n} generated tools ({path.name}); medians of "
          f"{repeats} interleaved fresh-process rounds"
          + (f" ({lc_repeats} for langchain-core)" if "langchain-core" in sides else ""))
    for side in sides:
        print(f"  {side}: {versions[side]}  [{pythons[side]}]")
    print(f"  ours source: {c.source_state()}")
    c.print_table("core_bench: registry and schemas", rows, sides)
    c.dump_json(args.json, {"bench": "core", "n": n, "versions": versions,
                            "raw": samples}, rows)
    return 0


if __name__ == "__main__":
    c.run_script(_worker, main)
