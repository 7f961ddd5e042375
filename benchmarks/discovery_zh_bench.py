"""Chinese tool discovery: retrieval quality with and without a Chinese word segmenter.

    python benchmarks/discovery_zh_bench.py            # 5 rounds of the speed figures
    python benchmarks/discovery_zh_bench.py --quick    # 1 round

Data: ``plugins/discovery/tests/data/zh_mcp_tools.json``: 853 tools, the MCP servers whose PyPI project
summary is written in Chinese (name and summary as the package index lists them), and 100
requests a user might make, written in Chinese by the project's developers; each request's
relevant tools are the ones a regular expression (kept beside it) finds in their name or
summary, so the labels can be checked and redone. Recall@5 counts the relevant tools among the
first five (out of at most five), MRR the rank of the first relevant one, hit@1 the queries
whose first answer is relevant.

A second, parallel set: the 24 tools and 31 paraphrased requests of the discovery tests
(``plugins/discovery/tests/data/paraphrases.json``, few words shared between a request and its
tool), translated into Chinese by the project's developers (``plugins/discovery/tests/data/
paraphrases_zh.json``): the same questions in both languages.

Systems, each in the same process over the same registry: the BM25F index with Chinese cut
into character bigrams (what every CJK script gets without the ``zh`` extra) and with the
words of the rjieba segmenter (``zh`` extra: jieba's dictionary, in Rust); hybrid retrieval
with the ``semantic`` extra's English WordLlama model, and with the ``multilingual`` extra's
Universal Sentence Encoder (multilingual v3, in numpy). Speed: index build and median query
(wall clock, embeddings computed afresh: no cache), and the segmenter's first load.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

TEST_DATA = c.REPO / "plugins" / "discovery" / "tests" / "data"
DATA = TEST_DATA / "zh_mcp_tools.json"
PARALLEL_ZH = TEST_DATA / "paraphrases_zh.json"
PARALLEL_EN = TEST_DATA / "paraphrases.json"


def load_parallel(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    tools = [{"name": t["name"], "description": t["description"], "parameters": {
        "type": "object", "properties": {k: {"type": "string", "description": v}
                                         for k, v in t["params"].items()}}}
        for t in data["tools"]]
    return tools, [{"query": q, "relevant": [name]} for q, name in data["queries"]]


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return data["tools"], data["queries"]


def registry(tools: list[dict[str, Any]]) -> Any:
    from toolregistry import Tool, ToolRegistry

    reg = ToolRegistry(load_plugins=["discovery"])
    reg.register_tools([Tool(name=t["name"], description=t["description"],
                             parameters=t.get("parameters") or {"type": "object",
                                                                "properties": {}},
                             callable=lambda **kw: None) for t in tools])
    return reg


def scores(rankings: list[list[str]], queries: list[dict[str, Any]]) -> dict[str, float]:
    recall, rr, hit = [], [], []
    for ranked, q in zip(rankings, queries):
        relevant = set(q["relevant"])
        recall.append(len(relevant & set(ranked[:5])) / min(len(relevant), 5))
        first = next((i for i, name in enumerate(ranked) if name in relevant), None)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
        hit.append(1.0 if first == 0 else 0.0)
    n = len(queries)
    return {"recall@5": sum(recall) / n, "MRR": sum(rr) / n, "hit@1": sum(hit) / n}


def segmenter(mode: str) -> Callable[[str], list[str]] | None:
    from toolregistry_discovery import _analysis

    if mode == "bigrams":
        return None
    return _analysis._load_segmenter()


def multilingual() -> Any:
    """The ``multilingual`` extra's embedder, or ``None`` where it is not installed."""
    from toolregistry_discovery import MultilingualEmbedder

    try:
        return MultilingualEmbedder()
    except ModuleNotFoundError:
        return None


def run(mode: str, semantic: Any, tools: list[dict[str, Any]], queries: list[dict[str, Any]],
        rounds: int) -> dict[str, Any]:
    from toolregistry_discovery import SemanticOptions, ToolDiscoveryTool, _analysis

    _analysis.use_segmenter(segmenter(mode))
    reg = registry(tools)
    builds, times = [], []
    rankings: list[list[str]] = []
    for _ in range(rounds):
        _analysis.use_segmenter(segmenter(mode))  # empties the caches of analysed text
        t = time.perf_counter()
        options = None
        if semantic is True:
            options = SemanticOptions(cache=False)
        elif semantic:
            options = SemanticOptions(embedder=semantic, cache=False)
        d = ToolDiscoveryTool(reg, semantic=options)
        d.discover("预热", top_k=5)
        builds.append(time.perf_counter() - t)
        rankings = []
        for q in queries:
            t = time.perf_counter()
            found = d.discover(q["query"], top_k=10)
            times.append(time.perf_counter() - t)
            rankings.append([r["name"] for r in found])
    return {**scores(rankings, queries), "build": statistics.median(builds),
            "query": statistics.median(times)}


def main(argv: list[str]) -> int:
    parser = c.base_parser(__doc__.split("\n")[0])
    args = parser.parse_args(argv)
    rounds = args.repeats or (1 if args.quick else 5)
    tools, queries = load()
    try:
        from toolregistry_discovery import _analysis
    except ImportError:
        raise SystemExit("discovery_zh_bench needs the discovery plugin: "
                         "pip install -e 'plugins/discovery[zh,multilingual,semantic]'") from None
    t = time.process_time()
    segmented = _analysis._load_segmenter() is not None
    load_cpu = time.process_time() - t
    try:
        import wordllama  # noqa: F401
        semantic_sides = [False, True]
    except ImportError:
        semantic_sides = [False]
    print(f"{c.machine_line()}; {len(tools)} tools, {len(queries)} queries, {rounds} rounds")
    if segmented:
        print(f"rjieba import (the segmenter's dictionary), CPU: {load_cpu * 1e3:.0f} ms")
    else:
        print("rjieba is not installed (the zh extra): bigrams only")
    header = f"{'system':<34} {'recall@5':>8} {'MRR':>6} {'hit@1':>6} {'build':>9} {'query':>9}"
    results = {}
    embedder = multilingual()
    sides: list[tuple[str, Any]] = [("BM25F", False)]
    if semantic_sides[-1]:
        sides.append(("hybrid, WordLlama", True))
    if embedder is not None:
        sides.append(("hybrid, USE multilingual", embedder))
    sets = [("Chinese MCP servers (853 tools, 100 requests)", tools, queries),
            ("paraphrases, Chinese (24 tools, 31 requests)", *load_parallel(PARALLEL_ZH)),
            ("paraphrases, English (the same, in English)", *load_parallel(PARALLEL_EN))]
    for title, set_tools, set_queries in sets:
        print()
        print(title)
        print(header)
        print("-" * len(header))
        english = set_tools[0]["description"].isascii()
        for kind, semantic in sides:
            for mode in ("bigrams",) if english or not segmented else ("bigrams", "words"):
                r = run(mode, semantic, set_tools, set_queries, rounds)
                name = f"{kind}" if english else f"{kind}, {mode}"
                results[f"{title}: {name}"] = r
                print(f"{name:<34} {r['recall@5']:8.3f} {r['MRR']:6.3f} {r['hit@1']:6.3f} "
                      f"{c.fmt_seconds(r['build']):>9} {c.fmt_seconds(r['query']):>9}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
