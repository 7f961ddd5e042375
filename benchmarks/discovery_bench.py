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
from _hybrid_variants import (
    GAIN_TARGET,
    HELD_OUT_HALF,
    TUNE_HALF,
    Variant,
    VariantSet,
    check_metrics,
    gain_interval,
    gains,
    metrics,
    subset,
)

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


def ensure_environments(*, old: bool = True) -> None:
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    _ensure_venv(MAIN_VENV, [
        ["-e", str(ROOT / "core"), "-e", f"{ROOT / 'plugins' / 'discovery'}[semantic]", BM25S],
        ["--no-deps", BFCL_EVAL],
    ])
    if old:
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
    tools, queries, _categories = load_bfcl_by_category()
    return tools, queries


def load_bfcl_by_category() -> tuple[list[dict[str, Any]], list[tuple[str, list[str]]],
                                     list[str]]:
    """:func:`load_bfcl` plus the category of each query."""
    data = bfcl_data_dir()
    categories: list[str] = []
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
            categories.append(cat)
    return tools, queries, categories


def scale_tools(tools: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    out = []
    i = 0
    while len(out) < n:
        t = dict(tools[i % len(tools)])
        t["name"] = f"{t['name'][:54]}_r{i // len(tools)}"
        out.append(t)
        i += 1
    return out


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
                          semantic=SemanticOptions(cache=False) if semantic else False)
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
from _hybrid_variants import (GAIN_TARGET, HELD_OUT_HALF, TUNE_HALF, Variant, VariantSet,
                              gain_interval, gains, metrics, subset)
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
        "module": str(c.write_tools_module(n, pep563=True)) if corpus == "gen" else "",
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
from _hybrid_variants import (GAIN_TARGET, HELD_OUT_HALF, TUNE_HALF, Variant, VariantSet,
                              gain_interval, gains, metrics, subset)
from toolregistry import Tool, ToolRegistry
from toolregistry_discovery import SemanticOptions, ToolDiscoveryTool, WordLlamaEmbedder

hybrid = job["side"] != "bm25f"
dim = job["dim"]
reg = ToolRegistry(config=job["empty_config"])
reg.register_tools([Tool(name=t["name"], description=t["description"], parameters=t["parameters"],
                         callable=lambda **kw: None) for t in job["tools"]])
base = c.settled_rss()
out = {}
t0, c0 = time.perf_counter(), time.process_time()

def options():
    return SemanticOptions(embedder=None if dim == 256 else WordLlamaEmbedder(dim=dim),
                           cache=job["cache"])


if hybrid:
    d = ToolDiscoveryTool(reg, semantic=options())
    assert d.semantic.stats["embedded"] == len(job["tools"]), d.semantic.stats
else:
    d = ToolDiscoveryTool(reg, semantic=False)
    d.index  # built now, as the hybrid side's is
out["build_cold"], out["build_cold_cpu"] = time.perf_counter() - t0, time.process_time() - c0
times, cpu = [], []
for q in job["queries"]:
    t0, c0 = time.perf_counter(), time.thread_time()
    d.discover(q, top_k=5)
    times.append(time.perf_counter() - t0)
    cpu.append(time.thread_time() - c0)
out["rss"] = c.settled_rss() - base  # one index built, queried
out["query_median"] = statistics.median(times)
out["query_cpu_median"] = statistics.median(cpu)
out["query_p95"] = sorted(times)[int(0.95 * (len(times) - 1))]
if hybrid:  # a restart: the same tools, vectors from the disk cache
    d.close()
    t0 = time.perf_counter()
    d = ToolDiscoveryTool(reg, semantic=options())
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
        "side": side, "dim": 128 if side.endswith("128") else 256,
        "tools": tools, "queries": queries, "cache": str(cache),
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


SEMANTIC_SIDES = ("BM25F", "hybrid", "hybrid 128")  # hybrid: the default (256 dimensions)


def semantic_rows(args: argparse.Namespace, tools: list[dict[str, Any]],
                  queries: list[str]) -> list[c.Row]:
    big = scale_tools(tools, args.semantic_tools)
    samples: dict[str, dict[str, list[float]]] = {side: {} for side in SEMANTIC_SIDES}

    def run(side: str, round_: int) -> None:
        c.log(f"hybrid at {len(big):,} tools: {side}, round {round_ + 1}")
        job = side.lower().replace(" ", "-")
        for key, value in semantic_job(job, big, queries, round_).items():
            samples[side].setdefault(key, []).append(value)

    c.interleave(list(SEMANTIC_SIDES[::-1]), args.rounds, run)
    extra = {side: [h - b for h, b in zip(samples[side]["rss"], samples["BM25F"]["rss"])]
             for side in SEMANTIC_SIDES[1:]}

    def col(key: str) -> dict[str, list[float]]:
        return {side: got[key] for side, got in samples.items() if key in got}

    n = f"{len(big):,}"
    # Hybrid is the default where the extra is installed: <= 3 ms at a registry of 2,500
    # tools; the original target for the dense side, 2 ms, at 10,000.
    limit = 3e-3 if len(big) <= 2_500 else 2e-3
    query_target = f"hybrid <= {limit * 1e3:g} ms"
    return [
        c.Row(f"{n} tools: index build, cold (hybrid: model load + embedding every tool)",
              col("build_cold"), target="hybrid <= 10 s",
              check=lambda m: m["hybrid"] <= 10.0),
        c.Row(f"{n} tools: index build, cold, CPU", col("build_cold_cpu"),
              target="hybrid <= 10 s", check=lambda m: m["hybrid"] <= 10.0),
        c.Row(f"{n} tools: index build, warm (vectors from the disk cache)", col("build_warm")),
        c.Row(f"{n} tools: query median", col("query_median"), target=query_target,
              check=lambda m: m["hybrid"] <= limit),
        c.Row(f"{n} tools: query median, CPU of the thread", col("query_cpu_median"),
              target=query_target, check=lambda m: m["hybrid"] <= limit),
        c.Row(f"{n} tools: query p95", col("query_p95")),
        c.Row(f"{n} tools: memory after building (RSS growth)", col("rss"), unit="bytes"),
        c.Row(f"{n} tools: memory the dense side adds", extra, unit="bytes",
              target="<= 50 MiB", check=lambda m: m["hybrid"] <= 50 * 2**20),
    ]


def _verdict(gain: float) -> str:
    return "PASS" if gain >= GAIN_TARGET - 1e-9 else "MISS"


# The variants measured against the default (see _hybrid_variants.Variant), with a label.
VARIANTS: list[tuple[str, Variant]] = [
    ("default: 256 dims, all fields, score fusion w=1", Variant()),
    ("default without the per-request z", Variant(requests=False)),
    ("dense side alone (256 dims)", Variant(how="dense")),
    ("128 dims (Matryoshka truncation)", Variant(dim=128)),
    ("64 dims (Matryoshka truncation)", Variant(dim=64)),
    ("text: name + description", Variant(text="name+description")),
    ("text: name + description + param names", Variant(text="name+description+params")),
    ("text: name/description/params apart, summed 1:2:1", Variant(text="fields-sum")),
    ("text: name/description/params apart, best of 3", Variant(text="fields-max")),
    ("text and query lowercased", Variant(text="lower", query="lower")),
    ("query without numbers", Variant(query="no-numbers")),
    *((f"score fusion w={w:g}", Variant(param=w)) for w in (0.5, 1.5, 2.0, 3.0)),
    ("score fusion, dense weight gated by the best z", Variant(gate=True)),
    ("convex min-max fusion, dense 0.5", Variant(how="minmax", param=0.5)),
    *((f"z-score fusion (both sides), dense {w:g}", Variant(how="zscore", param=w))
      for w in (0.5, 0.7)),
    ("CombMNZ (score fusion x sides that found it)", Variant(how="combmnz")),
    *((f"reciprocal rank fusion k={k}", Variant(how="rrf", param=float(k))) for k in (10, 60)),
    ("reciprocal rank fusion k=10, dense weight 0.5", Variant(how="rrf-half", param=10.0)),
    ("requests covered in the top 5 (xQuAD 0.5)", Variant(diversify=0.5)),
    ("query moved towards BM25F's best tool (0.25)", Variant(feedback=0.25)),
    ("no numbers + z-score fusion 0.7", Variant(query="no-numbers", how="zscore", param=0.7)),
    # Measured in a later session (each with a reason, see Variant), none adopted:
    ("query identifiers split as tool names are", Variant(query="split-identifiers")),
    ("names' version words (v2, 3) not embedded", Variant(text="no-version")),
    ("sentence-initial capitals lowered (text, query)",
     Variant(text="lower-initial", query="lower-initial")),
    ("case-robust: cased + lowercased vectors summed",
     Variant(text="case-robust", query="case-robust")),
    ("vectors whitened by the token table", Variant(whiten=True)),
    ("BM25F over the query's attainable score", Variant(how="coverage")),
    ("dense weight 1.5 - BM25F coverage (shape on all)", Variant(coverage_weight=True)),
    ("BM25F per request too (best scaled score)", Variant(lexical_requests=True)),
    ("each request's best tool placed second", Variant(request_tops=True)),
    ("z above chance only (z - sqrt(2 ln N))", Variant(z_floor=True)),
    ("near-duplicates demoted, multi-request (MMR 1)", Variant(redundancy=1.0)),
]
_NOT_CANDIDATES = ("default without", "dense side alone")  # ablations, not choices


def semantic_quality(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]],
                     categories: list[str], top_k: int) -> None:
    """BM25F vs the plugin's hybrid on BFCL (whole, tuning half, held-out half) and on the
    paraphrase set, with the targets and the gains' 95% intervals; then the variants
    measured to choose the default, and what the tuning half's choice gains on the other."""
    halves = {"tuning half": [cat in TUNE_HALF for cat in categories],
              "held-out half": [cat in HELD_OUT_HALF for cat in categories]}
    assert all(a != b for a, b in zip(*halves.values())), "each category in one half"
    check_metrics()
    bm25f_runs = run_ours(tools, queries, top_k)
    hybrid_runs = run_ours(tools, queries, top_k, semantic=True)
    p_tools, p_queries = load_paraphrases()
    print()
    print(f"Hybrid retrieval quality: BM25F vs BM25F + WordLlama l2_supercat 256 (the default, "
          f"z per request), top {top_k}; gains in points")
    print(f"  {'query set':<44}{'system':<8}{'recall@1':>9}{'recall@5':>9}{'MRR':>7}"
          f"{'gain r@5':>10}{'gain MRR':>10}  target (both)  result")
    sets: list[tuple[str, list[bool] | None]] = [
        (f"BFCL, all {len(queries)} (the tuning set)", None),
        *((f"BFCL {name}, {sum(p)}", p) for name, p in halves.items()),
    ]
    for label, picks in sets:
        qs = queries if picks is None else subset(picks, queries)
        base = metrics(bm25f_runs if picks is None else subset(picks, bm25f_runs), qs)
        hyb = metrics(hybrid_runs if picks is None else subset(picks, hybrid_runs), qs)
        g5, gm = gains(hyb, base)
        target = f">= +{GAIN_TARGET:.1f}" if picks is None else ""
        verdict = f"{_verdict(g5)} / {_verdict(gm)}" if picks is None else ""
        for system, m in (("BM25F", base), ("hybrid", hyb)):
            cells = f"{g5:>+10.2f}{gm:>+10.2f}  {target:<13}  {verdict}" if system == "hybrid" else ""
            print(f"  {label if system == 'BM25F' else '':<44}{system:<8}{m['recall@1']:>9.3f}"
                  f"{m['recall@5']:>9.3f}{m['mrr']:>7.3f}{cells}")
    p_base = metrics(run_ours(p_tools, p_queries, top_k), p_queries)
    p_hyb = metrics(run_ours(p_tools, p_queries, top_k, semantic=True), p_queries)
    g5, gm = gains(p_hyb, p_base)
    label = f"paraphrase set, {len(p_queries)} ({len(p_tools)} tools)"
    print(f"  {label:<44}{'BM25F':<8}{p_base['recall@1']:>9.3f}{p_base['recall@5']:>9.3f}"
          f"{p_base['mrr']:>7.3f}")
    print(f"  {'':<44}{'hybrid':<8}{p_hyb['recall@1']:>9.3f}{p_hyb['recall@5']:>9.3f}"
          f"{p_hyb['mrr']:>7.3f}{g5:>+10.2f}{gm:>+10.2f}")
    (r_lo, r_hi), (m_lo, m_hi) = gain_interval(hybrid_runs, bm25f_runs, queries)
    print(f"  95% interval of BFCL's gains (paired bootstrap over the queries): recall@5 "
          f"{r_lo:+.1f} to {r_hi:+.1f}, MRR {m_lo:+.1f} to {m_hi:+.1f} points")
    print(f"  halves of BFCL's categories: tuning {', '.join(TUNE_HALF)}; held out "
          f"{', '.join(HELD_OUT_HALF)}")

    # -- variants: what else was measured before keeping this default ----------------------
    bfcl_reg, para_reg = _ours_registry(tools), _ours_registry(p_tools)
    bfcl = VariantSet(bfcl_reg, [t["name"] for t in tools], queries, bm25f_runs)
    para = VariantSet(para_reg, [t["name"] for t in p_tools], p_queries,
                      run_ours(p_tools, p_queries, top_k))
    print()
    print("Variants (gains over BM25F in points, recall@5/MRR; the tuning and held-out halves "
          "are BFCL's categories as above)")
    print(f"  {'variant':<52}{'BFCL all':>14}{'tuning half':>14}{'held-out':>14}"
          f"{'paraphrases':>16}{'vectors@10k':>13}{'same name: tuning':>20}{'held-out':>14}")
    measured: list[tuple[str, list[tuple[float, float]]]] = []
    for label, v in VARIANTS:
        runs = bfcl.runs(v, top_k)
        if v == Variant():
            plugin, mine = metrics(hybrid_runs, queries), metrics(runs, queries)
            if any(abs(plugin[k] - mine[k]) > 2e-3 for k in mine):
                print(f"  (warning: this replica of the plugin's fusion gives {mine}, "
                      f"the plugin {plugin})")
        cells = [bfcl.gains(runs, None), *(bfcl.gains(runs, p) for p in halves.values()),
                 para.gains(para.runs(v, top_k), None)]
        if not label.startswith(_NOT_CANDIDATES):
            measured.append((label, cells))
        vectors = 10_000 * v.dim * 4 * (3 if v.text == "fields-max" else 1) / 2**20
        tolerant = [bfcl.gains(runs, p, same_name=True) for p in halves.values()]
        print(f"  {label:<52}" + "".join(f"{a:>+7.2f}/{b:<+6.2f}" for a, b in cells[:3])
              + f"{cells[3][0]:>+8.1f}/{cells[3][1]:<+7.1f}{vectors:>9.1f} MiB      "
              + "".join(f"{a:>+7.2f}/{b:<+6.2f}" for a, b in tolerant))
    print("  same name: a definition with a relevant tool's original name counts too (a "
          "diagnostic; the target counts only the definition that came with the question)")
    near_duplicates(tools, queries, categories)
    # Chosen on one half alone (the smaller of its two gains, then their sum), measured on
    # the other: what choosing among these variants is worth on queries the choice never saw.
    default = measured[0][1]
    for chosen_on, other in ((1, 2), (2, 1)):
        label, cells = max(measured, key=lambda m: (min(m[1][chosen_on]), sum(m[1][chosen_on])))
        names = {1: "tuning half", 2: "held-out half"}
        print(f"  best on the {names[chosen_on]}: {label} ({cells[chosen_on][0]:+.2f}/"
              f"{cells[chosen_on][1]:+.2f}); on the {names[other]} {cells[other][0]:+.2f}/"
              f"{cells[other][1]:+.2f} (the default {default[other][0]:+.2f}/"
              f"{default[other][1]:+.2f})")


def near_duplicates(tools: list[dict[str, Any]], queries: list[tuple[str, list[str]]],
                    categories: list[str]) -> None:
    """Why the halves disagree: per category, the relevant tools that are one of several
    definitions of their name in the pool, and how many of those are the first registered
    (the one BM25F's ties and shorter name favour: the others are named ``<name>_v2`` ...)."""
    order = {t["name"]: i for i, t in enumerate(tools)}
    by_name: dict[str, list[int]] = {}
    for t in tools:
        by_name.setdefault(t["original_name"], []).append(order[t["name"]])
    counts: dict[str, list[int]] = {cat: [0, 0, 0] for cat in CATEGORIES}
    for (_, relevant), cat in zip(queries, categories):
        for name in relevant:
            same = by_name[tools[order[name]]["original_name"]]
            counts[cat][0 if len(same) == 1 else 1 if same[0] == order[name] else 2] += 1
    print("  relevant tools with other definitions of their name in the pool (first registered "
          "/ later):")
    print("    " + "; ".join(f"{cat} {c[1] + c[2]} of {sum(c)} ({c[1]} / {c[2]})"
                             for cat, c in counts.items()))


def print_quality(title: str, rows: list[tuple[str, dict[str, float]]]) -> None:
    print()
    print(title)
    print(f"  {'system':<42}{'recall@1':>10}{'recall@5':>10}{'MRR':>8}")
    for label, m in rows:
        print(f"  {label:<42}{m['recall@1']:>10.3f}{m['recall@5']:>10.3f}{m['mrr']:>8.3f}")


# ----------------------------------------------------------------------------- report

def worker(args: argparse.Namespace) -> None:
    (CACHE / "empty.toml").write_text("")  # our registries ignore any pyproject config
    tools, queries, categories = load_bfcl_by_category()
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
        semantic_quality(tools, queries, categories, top_k)
    if args.only & {"semantic", "semantic-speed"}:
        # Spread over every category, so queries of several requests are timed too.
        spread = [q for q, _ in queries[:: max(1, len(queries) // args.queries)]][: args.queries]
        c.print_table(f"Hybrid retrieval speed and memory ({len(spread)} BFCL queries from "
                      f"every category, {args.rounds} interleaved fresh-process round(s) per side)",
                      semantic_rows(args, tools, spread), list(SEMANTIC_SIDES))

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


SECTIONS = ("quality", "semantic", "semantic-speed", "scale")


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
                        help="sections, comma-separated: quality, semantic (quality and "
                             "speed), semantic-speed (speed only), scale")
    parser.add_argument("--semantic-tools", type=int, default=10_000,
                        help="tools in the hybrid speed and memory run")
    parser.add_argument("--quick", action="store_true",
                        help="1,000 and 10,000 tools, one round, 100 queries")
    args = parser.parse_args()
    unknown = args.only - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown section(s) {sorted(unknown)}; choose from "
                     f"{', '.join(SECTIONS)}")
    if args.quick:
        args.sizes = [n for n in args.sizes if n <= 10_000]
        args.rounds, args.queries = 1, min(args.queries, 100)
    if os.environ.get(WORKER_ENV) != "1":
        ensure_environments(old=bool(args.only & {"quality", "scale"}))
        env = dict(os.environ, **{WORKER_ENV: "1"})
        env.pop("PYTHONPATH", None)
        raise SystemExit(subprocess.call([str(_python(MAIN_VENV)), __file__, *sys.argv[1:]],
                                         env=env))
    worker(args)


if __name__ == "__main__":
    main()
