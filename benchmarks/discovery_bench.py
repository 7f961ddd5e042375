#!/usr/bin/env python3
"""Tool-discovery benchmark: retrieval quality on BFCL, speed at 1k-100k tools, hybrid retrieval.

One command, from the repository root::

    python benchmarks/discovery_bench.py            # add --quick for a shorter speed run
    python benchmarks/discovery_bench.py --only quality,semantic   # some sections

It creates (once) two virtual environments under ``.bench-venvs/`` (ignored by git):

* ``discovery``: this checkout's ``core`` + ``plugins/discovery[semantic]``, ``bm25s``, and the
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

Speed and scale (issue 18): two corpora at 1,000 / 10,000 / 100,000 tools -- ``bfcl``, the
pool repeated (names suffixed), and ``gen``, the generated PEP 563 functions of
``_common.tools_source`` (distinct names and summaries, shared parameters) -- each side in a
fresh process per round, rounds interleaved (ours, 0.19, then 0.19, ours, ...): median index
build time (wall and CPU of the process) over repeated builds, median and 95th percentile
query time over the same BFCL queries, index memory as the bytes still allocated after
building (``tracemalloc``). 0.19 runs up to 10,000 tools (``--old-at-100k`` adds 100,000).
Targets: build <= 0.20x of 0.19 and query <= 0.05x; at 100,000 tools build <= 3 s and
query <= 1 ms.

Hybrid retrieval (issue 25): BM25F alone vs BM25F fused with the default dense side
(WordLlama, read offline from its wheel) on the BFCL pool above (the tuning set) and on the
paraphrase set written for the tests (``plugins/discovery/tests/data/paraphrases.json``);
then at 10,000 tools (the BFCL pool repeated), each side in a fresh process per round:
index build cold (model load and every tool embedded, no disk cache) and warm (vectors from
the disk cache), query median and 95th percentile, and the resident memory the dense side
adds. Targets: recall@5 and MRR >= BM25F + 2 points on BFCL; query <= 2 ms, embedding
10,000 tools <= 10 s and <= 50 MiB extra memory at 10,000 tools.
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
from collections.abc import Callable
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
        ["-e", str(ROOT / "core"), "-e", f"{ROOT / 'plugins' / 'discovery'}[semantic]", BM25S],
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


def run_ours(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]], top_k: int,
             *, semantic: bool = False) -> list[list[str]]:
    from toolregistry_discovery import SemanticOptions, ToolDiscoveryTool

    d = ToolDiscoveryTool(_ours_registry(tools),
                          semantic=SemanticOptions(cache=False) if semantic else None)
    return [[r["name"] for r in d.discover(q, top_k=top_k)] for q, _ in queries]


PARAPHRASES = ROOT / "plugins" / "discovery" / "tests" / "data" / "paraphrases.json"


def load_paraphrases() -> tuple[list[dict[str, Any]], list[tuple[str, list[str]]]]:
    data = json.loads(PARAPHRASES.read_text(encoding="utf-8"))
    tools = [{"name": t["name"], "original_name": t["name"], "description": t["description"],
              "parameters": {"type": "object", "properties": {
                  k: {"type": "string", "description": v} for k, v in t["params"].items()}}}
             for t in data["tools"]]
    return tools, [(q, [want]) for q, want in data["queries"]]


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


def one_by_one(tools: list[dict[str, Any]]) -> tuple[float, float]:
    """Seconds to register ``tools`` one at a time with discovery on (the index follows each
    change) and without."""
    from toolregistry import Tool, ToolRegistry

    objs = [Tool(name=t["name"], description=t["description"], parameters=t["parameters"],
                 callable=lambda **kw: None) for t in tools]
    times = []
    for discovery in (True, False):
        reg = ToolRegistry(config=str(CACHE / "empty.toml"), tool_discovery=discovery)
        t0 = time.perf_counter()
        for tool in objs:
            reg.register(tool)
        times.append(time.perf_counter() - t0)
    return times[0], times[1]


_OLD_WORKER = r'''
import json, sys

job = json.load(open(sys.argv[1], encoding="utf-8"))
from toolregistry import Tool, ToolRegistry
from toolregistry.llm.discovery import ToolDiscoveryTool

reg = ToolRegistry()
for t in job["tools"]:
    reg.register(Tool(name=t["name"], description=t["description"] or " ",
                      parameters=t["parameters"], callable=lambda **kw: None))
out = {}
for label, ratio in (("default", None), ("ratio0", 0.0)):
    kw = {} if ratio is None else {"min_score_ratio": ratio}
    d = ToolDiscoveryTool(reg, **kw)
    out[label] = [[r["name"] for r in d.discover(q, top_k=job["top_k"])] for q in job["queries"]]
    d.close()
json.dump(out, sys.stdout)
'''


def run_old(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]], top_k: int
            ) -> dict[str, Any]:
    job = CACHE / "old-job.json"
    worker = CACHE / "old_worker.py"
    worker.write_text(_OLD_WORKER, encoding="utf-8")
    job.write_text(json.dumps({"tools": tools, "queries": [q for q, _ in queries],
                               "top_k": top_k}), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(_python(OLD_VENV)), str(worker), str(job)], check=True,
                          capture_output=True, text=True, env=env, cwd=str(CACHE))
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- scale

# One worker for both sides, each in a fresh process of its own environment: it builds the
# registry (not timed), then times the index with the shared _common.discovery_speed.
_SPEED_WORKER = r'''
import json, sys

job = json.load(open(sys.argv[1], encoding="utf-8"))
sys.path.insert(0, job["benchmarks"])
import _common as c
from toolregistry import Tool, ToolRegistry

ours = job["side"] == "ours"
if ours:
    from toolregistry.tool import Provenance
    from toolregistry_discovery import ToolDiscoveryTool
    reg = ToolRegistry(config=job["empty_config"])
else:
    from toolregistry.llm.discovery import ToolDiscoveryTool
    reg = ToolRegistry()
if job["corpus"] == "gen":
    for fn in c.load_tools(job["module"]):
        reg.register(fn)
else:
    base = job["tools"]
    for i in range(job["n"]):
        t = base[i % len(base)]
        extra = {"provenance": Provenance("manual", None, t["original_name"])} if ours else {}
        reg.register(Tool(name=f"{t['name'][:54]}_r{i // len(base)}",
                          description=t["description"] or " ", parameters=t["parameters"],
                          callable=lambda **kw: None, **extra))
out = c.discovery_speed(ToolDiscoveryTool, reg, job["queries"], job["repeat"])
print(c.RESULT_MARK + json.dumps(out))
'''


def speed_job(side: str, corpus: str, n: int, tools: list[dict[str, Any]],
              queries: list[str], repeat: int) -> dict[str, Any]:
    """Index build and query times of one side on ``n`` tools of ``corpus``, in a fresh
    process of that side's environment."""
    worker = CACHE / "speed_worker.py"
    worker.write_text(_SPEED_WORKER, encoding="utf-8")
    job = CACHE / f"speed-{side}.json"
    job.write_text(json.dumps({
        "side": side, "corpus": corpus, "n": n, "tools": tools if corpus == "bfcl" else [],
        "module": str(c.write_tools_module(n)) if corpus == "gen" else "",
        "queries": queries, "repeat": repeat, "benchmarks": str(Path(__file__).parent),
        "empty_config": str(CACHE / "empty.toml"),
    }), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(_python(MAIN_VENV if side == "ours" else OLD_VENV)),
                           str(worker), str(job)], capture_output=True, text=True, env=env,
                          cwd=str(CACHE))
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(c.RESULT_MARK):
            return dict(json.loads(line[len(c.RESULT_MARK):]))
    raise RuntimeError(f"{side} speed worker ({corpus}, {n}) failed:\n{proc.stderr[-3000:]}")


def measure(args: argparse.Namespace, corpus: str, n: int, tools: list[dict[str, Any]],
            queries: list[str]) -> dict[str, dict[str, list[float]]]:
    """Samples per side (0.19 only up to 10,000 tools unless asked) and metric."""
    sides = ["ours", "0.19"] if n <= 10_000 or args.old_at_100k else ["ours"]
    samples: dict[str, dict[str, list[float]]] = {s: {} for s in sides}

    def run(side: str, round_: int) -> None:
        c.log(f"{corpus} {n:,} tools: {side}, round {round_ + 1}")
        res = speed_job("ours" if side == "ours" else "old", corpus, n, tools, queries,
                        args.repeat)
        for key, value in res.items():
            samples[side].setdefault(key, []).append(value)

    c.interleave(sides, args.rounds, run)
    return samples


def _ratio_at_most(limit: float) -> Callable[[dict[str, float]], bool]:
    return lambda m: m["ours"] / m["0.19"] <= limit


def _ours_at_most(limit: float) -> Callable[[dict[str, float]], bool]:
    return lambda m: m["ours"] <= limit


def scale_rows(args: argparse.Namespace, tools: list[dict[str, Any]],
               queries: list[str]) -> list[c.Row]:
    rows: list[c.Row] = []
    for n in args.sizes:
        for corpus in args.corpora:
            samples = measure(args, corpus, n, tools, queries)

            def col(key: str, samples: dict[str, dict[str, list[float]]] = samples
                    ) -> dict[str, list[float]]:
                return {side: got[key] for side, got in samples.items() if key in got}

            big = n >= 100_000
            build = (_ours_at_most(3.0), "<= 3 s") if big else (_ratio_at_most(0.20), "<= 0.20x")
            query = (_ours_at_most(1e-3), "<= 1 ms") if big else (_ratio_at_most(0.05), "<= 0.05x")
            label = f"{corpus} {n:,}"
            rows += [
                c.Row(f"{label}: index build", col("build"), target=build[1], check=build[0]),
                c.Row(f"{label}: index build, CPU", col("build_cpu"), target=build[1],
                      check=build[0]),
                c.Row(f"{label}: first build of the process, CPU", col("build_first_cpu"),
                      target=build[1], check=build[0]),
                c.Row(f"{label}: query median", col("query_median"), target=query[1],
                      check=query[0]),
                c.Row(f"{label}: query p95", col("query_p95")),
                c.Row(f"{label}: index memory", col("memory"), unit="bytes"),
            ]
    return rows


# ----------------------------------------------------------------------------- hybrid

_SEMANTIC_WORKER = r'''
import json, statistics, sys, time

job = json.load(open(sys.argv[1], encoding="utf-8"))
sys.path.insert(0, job["benchmarks"])
import _common as c
from toolregistry import Tool, ToolRegistry
from toolregistry_discovery import SemanticOptions, ToolDiscoveryTool

reg = ToolRegistry(config=job["empty_config"])
reg.register_tools([Tool(name=t["name"], description=t["description"], parameters=t["parameters"],
                         callable=lambda **kw: None) for t in job["tools"]])
base = c.settled_rss()
out = {}
t0, c0 = time.perf_counter(), time.process_time()
if job["side"] == "hybrid":
    d = ToolDiscoveryTool(reg, semantic=SemanticOptions(cache=job["cache"]))
    assert d.semantic.stats["embedded"] == len(job["tools"]), d.semantic.stats
else:
    d = ToolDiscoveryTool(reg)
out["build_cold"], out["build_cold_cpu"] = time.perf_counter() - t0, time.process_time() - c0
times = []
for q in job["queries"]:
    t0 = time.perf_counter()
    d.discover(q, top_k=5)
    times.append(time.perf_counter() - t0)
out["rss"] = c.settled_rss() - base  # one index built, queried
out["query_median"] = statistics.median(times)
out["query_p95"] = sorted(times)[int(0.95 * (len(times) - 1))]
if job["side"] == "hybrid":  # a restart: the same tools, vectors from the disk cache
    d.close()
    t0 = time.perf_counter()
    d = ToolDiscoveryTool(reg, semantic=SemanticOptions(cache=job["cache"]))
    out["build_warm"] = time.perf_counter() - t0
    assert d.semantic.stats["from_cache"] == len(job["tools"]), d.semantic.stats
c.emit_result(out)
'''


def semantic_job(side: str, tools: list[dict[str, Any]], queries: list[str], round_: int
                 ) -> dict[str, Any]:
    worker = CACHE / "semantic_worker.py"
    worker.write_text(_SEMANTIC_WORKER, encoding="utf-8")
    cache = CACHE / f"embeddings-{round_}.sqlite3"
    for leftover in CACHE.glob(f"embeddings-{round_}.sqlite3*"):
        leftover.unlink()
    job = CACHE / f"semantic-{side}.json"
    job.write_text(json.dumps({
        "side": side, "tools": tools, "queries": queries, "cache": str(cache),
        "benchmarks": str(Path(__file__).parent), "empty_config": str(CACHE / "empty.toml"),
    }), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(_python(MAIN_VENV)), str(worker), str(job)], capture_output=True,
                          text=True, env=env, cwd=str(CACHE))
    for leftover in CACHE.glob(f"embeddings-{round_}.sqlite3*"):
        leftover.unlink()
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(c.RESULT_MARK):
            return dict(json.loads(line[len(c.RESULT_MARK):]))
    raise RuntimeError(f"{side} semantic worker failed:\n{proc.stderr[-3000:]}")


def semantic_rows(args: argparse.Namespace, tools: list[dict[str, Any]],
                  queries: list[str]) -> list[c.Row]:
    big = scale_tools(tools, args.semantic_tools)
    samples: dict[str, dict[str, list[float]]] = {"BM25F": {}, "hybrid": {}}

    def run(side: str, round_: int) -> None:
        c.log(f"hybrid at {len(big):,} tools: {side}, round {round_ + 1}")
        for key, value in semantic_job(side.lower(), big, queries, round_).items():
            samples[side].setdefault(key, []).append(value)

    c.interleave(["hybrid", "BM25F"], args.rounds, run)
    extra = [h - b for h, b in zip(samples["hybrid"]["rss"], samples["BM25F"]["rss"])]

    def col(key: str) -> dict[str, list[float]]:
        return {side: got[key] for side, got in samples.items() if key in got}

    n = f"{len(big):,}"
    return [
        c.Row(f"{n} tools: index build, cold (hybrid: model load + embedding every tool)",
              col("build_cold"), target="hybrid <= 10 s",
              check=lambda m: m["hybrid"] <= 10.0),
        c.Row(f"{n} tools: index build, cold, CPU", col("build_cold_cpu")),
        c.Row(f"{n} tools: index build, warm (vectors from the disk cache)", col("build_warm")),
        c.Row(f"{n} tools: query median", col("query_median"), target="hybrid <= 2 ms",
              check=lambda m: m["hybrid"] <= 2e-3),
        c.Row(f"{n} tools: query p95", col("query_p95")),
        c.Row(f"{n} tools: memory after building (RSS growth)", col("rss"), unit="bytes"),
        c.Row(f"{n} tools: memory the dense side adds", {"hybrid": extra}, unit="bytes",
              target="<= 50 MiB", check=lambda m: m["hybrid"] <= 50 * 2**20),
    ]


def print_quality(title: str, rows: list[tuple[str, dict[str, float]]]) -> None:
    print()
    print(title)
    print(f"  {'system':<42}{'recall@1':>10}{'recall@5':>10}{'MRR':>8}")
    for label, m in rows:
        print(f"  {label:<42}{m['recall@1']:>10.3f}{m['recall@5']:>10.3f}{m['mrr']:>8.3f}")


# ----------------------------------------------------------------------------- report

def worker(args: argparse.Namespace) -> None:
    (CACHE / "empty.toml").write_text("")  # our registries ignore any pyproject config
    tools, queries = load_bfcl()
    top_k = 5
    speed_queries = [q for q, _ in queries[: args.queries]]
    t0 = time.perf_counter()

    if "quality" in args.only:
        ours = run_ours(tools, queries, top_k)
        plain = run_bm25s(tools, queries, top_k)
        old = run_old(tools, queries, top_k)
        rows = [
            ("toolregistry-discovery (this repo)", metrics(ours, queries)),
            ("toolregistry 0.19.0 discovery (defaults)", metrics(old["default"], queries)),
            ("toolregistry 0.19.0, min_score_ratio=0", metrics(old["ratio0"], queries)),
            ("plain BM25 (bm25s, name+desc+params)", metrics(plain, queries)),
        ]
        print_quality(f"Quality: BFCL v4 {', '.join(CATEGORIES)}\n"
                      f"  {len(tools)} distinct tools, {len(queries)} queries, top {top_k}", rows)
        ours_r5 = rows[0][1]["recall@5"]
        best_other = max(m["recall@5"] for _, m in rows[1:])
        print(f"  recall@5 margin over the best other system: "
              f"{100 * (ours_r5 - best_other):+.1f} points")

    if "semantic" in args.only:
        bm25f = metrics(run_ours(tools, queries, top_k), queries)
        hybrid = metrics(run_ours(tools, queries, top_k, semantic=True), queries)
        print_quality(f"Hybrid retrieval (BM25F + WordLlama l2_supercat_256): BFCL v4, "
                      f"{len(tools)} tools, {len(queries)} queries (the tuning set)",
                      [("BM25F", bm25f), ("hybrid", hybrid)])
        for key in ("recall@5", "mrr"):
            gain = 100 * (hybrid[key] - bm25f[key])
            print(f"  {key} gain: {gain:+.2f} points (target >= +2.0): "
                  f"{'PASS' if gain >= 2.0 - 1e-9 else 'MISS'}")
        p_tools, p_queries = load_paraphrases()
        print_quality(f"Hybrid retrieval: paraphrase set, {len(p_tools)} tools, "
                      f"{len(p_queries)} queries",
                      [("BM25F", metrics(run_ours(p_tools, p_queries, top_k), p_queries)),
                       ("hybrid", metrics(run_ours(p_tools, p_queries, top_k, semantic=True),
                                          p_queries))])
        c.print_table(f"Hybrid retrieval speed and memory ({len(speed_queries)} BFCL queries, "
                      f"{args.rounds} interleaved fresh-process round(s) per side)",
                      semantic_rows(args, tools, speed_queries), ["BM25F", "hybrid"])

    if "scale" in args.only:
        table = scale_rows(args, tools, speed_queries)
        c.print_table(
            f"Speed: index build (median of {args.repeat} builds per process) and query "
            f"({len(speed_queries)} BFCL queries), {args.rounds} interleaved fresh-process "
            "round(s) per side", table, ["ours", "0.19"])
        live, without = one_by_one(scale_tools(tools, 10_000))
        print(f"  registering 10,000 tools one by one: {live:.2f} s with discovery on, "
              f"{without:.2f} s without")
    elapsed = time.perf_counter() - t0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n(measured in {elapsed:.0f} s; {c.machine_line()}, load average {load:.1f}: wall "
          f"times grow with other work on the machine, CPU times much less; {c.source_state()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")],
                        default=[1_000, 10_000, 100_000], help="tool counts, comma-separated")
    parser.add_argument("--corpora", type=lambda v: v.split(","), default=["bfcl", "gen"],
                        help="bfcl (the pool repeated) and/or gen (generated PEP 563 tools)")
    parser.add_argument("--repeat", type=int, default=3, help="index builds per process")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per side")
    parser.add_argument("--queries", type=int, default=200, help="BFCL queries timed")
    parser.add_argument("--old-at-100k", action="store_true",
                        help="time 0.19 at 100,000 tools too (slow: minutes)")
    parser.add_argument("--only", type=lambda v: set(v.split(",")),
                        default={"quality", "semantic", "scale"},
                        help="sections, comma-separated: quality, semantic, scale")
    parser.add_argument("--semantic-tools", type=int, default=10_000,
                        help="tools in the hybrid speed and memory run")
    parser.add_argument("--quick", action="store_true",
                        help="1,000 and 10,000 tools, one round, 100 queries")
    args = parser.parse_args()
    if args.only - {"quality", "semantic", "scale"}:
        parser.error(f"--only: unknown section(s) {sorted(args.only - {'quality', 'semantic', 'scale'})}"
                     "; choose from quality, semantic, scale")
    if args.quick:
        args.sizes = [n for n in args.sizes if n <= 10_000]
        args.rounds, args.queries = 1, min(args.queries, 100)
    if os.environ.get(WORKER_ENV) != "1":
        ensure_environments()
        env = dict(os.environ, **{WORKER_ENV: "1"})
        env.pop("PYTHONPATH", None)
        raise SystemExit(subprocess.call([str(_python(MAIN_VENV)), __file__, *sys.argv[1:]],
                                         env=env))
    worker(args)


if __name__ == "__main__":
    main()
