#!/usr/bin/env python3
"""Tool-discovery benchmark: retrieval quality on BFCL and speed at 10,000 tools.

One command, from the repository root::

    python benchmarks/discovery_bench.py            # add --quick for a shorter speed run

It creates (once) two virtual environments under ``.bench-venvs/`` (ignored by git):

* ``discovery``: this checkout's ``core`` + ``plugins/discovery``, ``bm25s``, and the
  Berkeley Function Calling Leaderboard data from the PyPI package ``bfcl-eval``
  (installed with ``--no-deps``: only its JSON Lines data files are read);
* ``toolregistry-0.19``: PyPI ``toolregistry==0.19.0`` alone (same import name as ours, so
  it never shares an environment with this checkout), driven through a subprocess.

Quality: the functions of BFCL v4 ``simple_python``, ``simple_java``, ``simple_javascript``,
``multiple``, ``parallel`` and ``parallel_multiple`` are pooled into one registry (distinct
definitions; one name with different definitions stays separate tools). Each question's
first user turn is the query; the ground-truth functions (from ``possible_answer/``) are the
relevant tools. Recall@k = share of a question's relevant tools in the top k (averaged over
questions); MRR = mean reciprocal rank of the first relevant tool (top 5 searched). The
``live_*`` categories are held out and never read.

Speed: the pool is repeated (names suffixed) up to 10,000 tools; median and 95th percentile
query time over the BFCL queries, median index build time over repeated builds (without
tracing), and index memory as the bytes still allocated after building (``tracemalloc``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common as c

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench-venvs"
MAIN_VENV = CACHE / "discovery"
OLD_VENV = CACHE / "toolregistry-0.19"
BFCL_EVAL = "bfcl-eval==2026.3.23"
BM25S = "bm25s==0.3.16"
OLD_TOOLREGISTRY = "toolregistry==0.19.0"
CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
              "parallel_multiple")
WORKER_ENV = "DISCOVERY_BENCH_WORKER"


# ----------------------------------------------------------------------------- environments

def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _pip(venv: Path, *args: str) -> None:
    subprocess.run([str(_python(venv)), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", *args], check=True)


def _ensure_venv(venv: Path, installs: list[list[str]]) -> None:
    stamp = venv / ".bench-stamp"
    want = hashlib.sha256(json.dumps(installs).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == want and _python(venv).exists():
        return
    print(f"[setup] creating {venv.relative_to(ROOT)} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    for args in installs:
        _pip(venv, *args)
    stamp.write_text(want)


def ensure_environments() -> None:
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    _ensure_venv(MAIN_VENV, [
        ["-e", str(ROOT / "core"), "-e", str(ROOT / "plugins" / "discovery"), BM25S],
        ["--no-deps", BFCL_EVAL],
    ])
    _ensure_venv(OLD_VENV, [[OLD_TOOLREGISTRY]])


# ----------------------------------------------------------------------------- data

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None, "char": "string",
          "byte": "integer", "short": "integer", "long": "integer", "double": "number",
          "Array": "array", "ArrayList": "array", "HashMap": "object", "Set": "array",
          "Boolean": "boolean", "String": "string", "bigint": "integer"}


def _to_json_schema(schema: Any) -> Any:
    """BFCL writes Python / Java type names ("dict", "float", "HashMap"); JSON Schema wants
    object / number / ...: translate them so every system sees valid schemas."""
    if isinstance(schema, dict):
        out = {k: _to_json_schema(v) for k, v in schema.items()}
        t = out.get("type")
        if isinstance(t, str) and t in _TYPES:
            if _TYPES[t] is None:
                del out["type"]
            else:
                out["type"] = _TYPES[t]
        return out
    if isinstance(schema, list):
        return [_to_json_schema(v) for v in schema]
    return schema


def bfcl_data_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bfcl-eval is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_bfcl() -> tuple[list[dict[str, Any]], list[tuple[str, list[str]]]]:
    """(tools, queries): tools with unique provider-safe names, queries with relevant names."""
    data = bfcl_data_dir()
    tools: list[dict[str, Any]] = []
    by_definition: dict[str, str] = {}
    taken: set[str] = set()
    queries: list[tuple[str, list[str]]] = []
    for cat in CATEGORIES:
        assert not cat.startswith("live"), "live_* categories are held out"
        answers = {r["id"]: r["ground_truth"]
                   for r in _read_jsonl(data / "possible_answer" / f"BFCL_v4_{cat}.json")}
        for row in _read_jsonl(data / f"BFCL_v4_{cat}.json"):
            local: dict[str, str] = {}
            for fn in row["function"]:
                key = json.dumps(fn, sort_keys=True)
                if key not in by_definition:
                    base = _UNSAFE.sub("_", fn["name"]).strip("_")[:56] or "tool"
                    name, n = base, 1
                    while name in taken:
                        n += 1
                        name = f"{base}_v{n}"
                    taken.add(name)
                    by_definition[key] = name
                    tools.append({
                        "name": name,
                        "original_name": fn["name"],
                        "description": fn.get("description", ""),
                        "parameters": _to_json_schema(fn.get("parameters") or {}),
                    })
                local[fn["name"]] = by_definition[key]
            first_turn = row["question"][0]
            query = next(m["content"] for m in first_turn if m["role"] == "user")
            relevant = sorted({local[n] for call in answers[row["id"]] for n in call})
            queries.append((query, relevant))
    return tools, queries


def scale_tools(tools: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    out = []
    i = 0
    while len(out) < n:
        t = dict(tools[i % len(tools)])
        t["name"] = f"{t['name'][:54]}_r{i // len(tools)}"
        out.append(t)
        i += 1
    return out


def metrics(rankings: list[list[str]], queries: list[tuple[str, list[str]]]) -> dict[str, float]:
    r1 = r5 = mrr = 0.0
    for ranked, (_, relevant) in zip(rankings, queries):
        rel = set(relevant)
        r1 += len(rel & set(ranked[:1])) / len(rel)
        r5 += len(rel & set(ranked[:5])) / len(rel)
        for i, name in enumerate(ranked[:5]):
            if name in rel:
                mrr += 1.0 / (i + 1)
                break
    n = len(queries)
    return {"recall@1": r1 / n, "recall@5": r5 / n, "mrr": mrr / n}


# ----------------------------------------------------------------------------- systems

def _ours_registry(tools: list[dict[str, Any]]) -> Any:
    from toolregistry import Tool, ToolRegistry
    from toolregistry.tool import Provenance

    reg = ToolRegistry(config=str(CACHE / "empty.toml"))
    reg.register_tools([
        Tool(name=t["name"], description=t["description"], parameters=t["parameters"],
             callable=lambda **kw: None,
             provenance=Provenance("manual", None, t.get("original_name")))
        for t in tools])
    return reg


def run_ours(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]], top_k: int
             ) -> list[list[str]]:
    from toolregistry_discovery import ToolDiscoveryTool

    d = ToolDiscoveryTool(_ours_registry(tools))
    return [[r["name"] for r in d.discover(q, top_k=top_k)] for q, _ in queries]


def run_bm25s(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]], top_k: int
              ) -> list[list[str]]:
    import bm25s

    def split(s: str) -> str:
        return re.sub(r"[_.\-]+", " ", s)

    corpus = [
        " ".join([split(t["original_name"]), t["description"],
                  *(split(p) for p in (t["parameters"].get("properties") or {}))])
        for t in tools
    ]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False),
                    show_progress=False)
    q_tokens = bm25s.tokenize([q for q, _ in queries], stopwords="en", show_progress=False)
    docs, _scores = retriever.retrieve(q_tokens, k=top_k, show_progress=False)
    return [[tools[int(i)]["name"] for i in row] for row in docs]


def speed_ours(tools: list[dict[str, Any]], queries: list[str], repeat: int) -> dict[str, Any]:
    from toolregistry import ToolRegistry
    from toolregistry_discovery import ToolDiscoveryTool

    speed = c.discovery_speed(ToolDiscoveryTool, _ours_registry(tools), queries, repeat)
    # The registry path: discovery on, N tools registered one at a time (index follows).
    from toolregistry import Tool

    objs = [Tool(name=t["name"], description=t["description"], parameters=t["parameters"],
                 callable=lambda **kw: None) for t in tools]
    live = ToolRegistry(config=str(CACHE / "empty.toml"), tool_discovery=True)
    t0 = time.perf_counter()
    for tool in objs:
        live.register(tool)
    incremental = time.perf_counter() - t0
    plain = ToolRegistry(config=str(CACHE / "empty.toml"))
    t0 = time.perf_counter()
    for tool in objs:
        plain.register(tool)
    baseline = time.perf_counter() - t0
    return {**speed, "register_one_by_one": incremental,
            "register_one_by_one_without": baseline}


_OLD_WORKER = r'''
import json, sys

job = json.load(open(sys.argv[1], encoding="utf-8"))
sys.path.insert(0, job["benchmarks"])
from _common import discovery_speed
from toolregistry import Tool, ToolRegistry
from toolregistry.llm.discovery import ToolDiscoveryTool

def registry(tools):
    reg = ToolRegistry()
    for t in tools:
        reg.register(Tool(name=t["name"], description=t["description"] or " ",
                          parameters=t["parameters"], callable=lambda **kw: None))
    return reg

out = {}
reg = registry(job["tools"])
for label, ratio in (("default", None), ("ratio0", 0.0)):
    kw = {} if ratio is None else {"min_score_ratio": ratio}
    d = ToolDiscoveryTool(reg, **kw)
    out[label] = [[r["name"] for r in d.discover(q, top_k=job["top_k"])] for q in job["queries"]]
    d.close()
if job.get("speed_tools"):
    out["speed"] = discovery_speed(ToolDiscoveryTool, registry(job["speed_tools"]),
                                   job["speed_queries"], job["repeat"])
json.dump(out, sys.stdout)
'''


def run_old(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]], top_k: int,
            speed_tools: list[dict[str, Any]] | None, speed_queries: list[str],
            repeat: int) -> dict[str, Any]:
    job = CACHE / "old-job.json"
    worker = CACHE / "old_worker.py"
    worker.write_text(_OLD_WORKER, encoding="utf-8")
    job.write_text(json.dumps({
        "tools": tools, "queries": [q for q, _ in queries], "top_k": top_k,
        "speed_tools": speed_tools, "speed_queries": speed_queries, "repeat": repeat,
        "benchmarks": str(Path(__file__).resolve().parent),
    }), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(_python(OLD_VENV)), str(worker), str(job)], check=True,
                          capture_output=True, text=True, env=env, cwd=str(CACHE))
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- report

def worker(args: argparse.Namespace) -> None:
    (CACHE / "empty.toml").write_text("")  # our registries ignore any pyproject config
    tools, queries = load_bfcl()
    top_k = 5
    n_speed_q = 200 if args.quick else len(queries)
    speed_queries = [q for q, _ in queries[:n_speed_q]]
    big = scale_tools(tools, args.tools)

    t0 = time.perf_counter()
    ours = run_ours(tools, queries, top_k)
    plain = run_bm25s(tools, queries, top_k)
    old = run_old(tools, queries, top_k, big, speed_queries, args.repeat)
    ours_speed = speed_ours(big, speed_queries, args.repeat)
    elapsed = time.perf_counter() - t0

    rows = [
        ("toolregistry-discovery (this repo)", metrics(ours, queries)),
        ("toolregistry 0.19.0 discovery (defaults)", metrics(old["default"], queries)),
        ("toolregistry 0.19.0, min_score_ratio=0", metrics(old["ratio0"], queries)),
        ("plain BM25 (bm25s, name+desc+params)", metrics(plain, queries)),
    ]
    print()
    print(f"Quality: BFCL v4 {', '.join(CATEGORIES)}")
    print(f"  {len(tools)} distinct tools, {len(queries)} queries, top {top_k}")
    print(f"  {'system':<42}{'recall@1':>10}{'recall@5':>10}{'MRR':>8}")
    for label, m in rows:
        print(f"  {label:<42}{m['recall@1']:>10.3f}{m['recall@5']:>10.3f}{m['mrr']:>8.3f}")
    ours_r5 = rows[0][1]["recall@5"]
    best_other = max(m["recall@5"] for _, m in rows[1:])
    print(f"  recall@5 margin over the best other system: {100 * (ours_r5 - best_other):+.1f} points")

    os_ = old["speed"]
    print()
    print(f"Speed: {len(big)} tools, {len(speed_queries)} queries, builds: median of {args.repeat}")
    print(f"  {'system':<36}{'query median':>14}{'query p95':>12}{'build':>10}{'build CPU':>11}"
          f"{'index memory':>15}")
    for label, s in (("toolregistry-discovery (this repo)", ours_speed),
                     ("toolregistry 0.19.0", os_)):
        print(f"  {label:<36}{s['query_median'] * 1e3:>11.3f} ms{s['query_p95'] * 1e3:>9.3f} ms"
              f"{s['build']:>8.3f} s{s['build_cpu']:>9.3f} s{s['memory'] / 2**20:>11.1f} MiB")
    print(f"  ratios (0.19 / ours): query {os_['query_median'] / ours_speed['query_median']:.1f}x, "
          f"build {os_['build'] / ours_speed['build']:.1f}x, "
          f"memory {os_['memory'] / max(ours_speed['memory'], 1):.1f}x")
    print(f"  registering {len(big)} tools one by one: "
          f"{ours_speed['register_one_by_one']:.2f} s with discovery on, "
          f"{ours_speed['register_one_by_one_without']:.2f} s without")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n(measured in {elapsed:.0f} s; python {sys.version.split()[0]}; {os.cpu_count()} CPUs,"
          f" load average {load:.1f}: wall times grow with other work on the machine)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000, help="tools in the speed run")
    parser.add_argument("--repeat", type=int, default=3, help="index builds per system")
    parser.add_argument("--quick", action="store_true", help="time 200 queries, not all")
    args = parser.parse_args()
    if os.environ.get(WORKER_ENV) != "1":
        ensure_environments()
        env = dict(os.environ, **{WORKER_ENV: "1"})
        env.pop("PYTHONPATH", None)
        raise SystemExit(subprocess.call([str(_python(MAIN_VENV)), __file__, *sys.argv[1:]],
                                         env=env))
    worker(args)


if __name__ == "__main__":
    main()
