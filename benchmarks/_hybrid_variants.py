"""Hybrid retrieval variants for ``discovery_bench.py`` (issue 25): the plugin's fusion
replicated in numpy, and the alternatives measured against it, on one query set at a time.

Each variant ranks every query of a set from the same BM25F candidates (the plugin's index)
and the WordLlama vectors of the tools and queries; the gains over BM25F alone are reported
on the whole set and on the tuning and held-out halves of BFCL's categories, so a setting
chosen on one half is checked on queries it never saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TUNE_HALF = ("simple_python", "simple_javascript", "parallel")
HELD_OUT_HALF = ("simple_java", "multiple", "parallel_multiple")
GAIN_TARGET = 2.0  # points, recall@5 and MRR, on the whole tuning set
SCORE_FUSION_DEPTH = 50  # candidates per side, as the plugin takes for top_k <= 12
_Z_SCALE = 10.0  # the plugin's: a z of 10 weighs as much as the best BM25F hit
# The confidence gate: the dense weight grows from 0 to full as the best tool's z goes from
# _GATE_LOW to _GATE_LOW + _GATE_SPAN (a flat similarity distribution: no clear dense hit).
_GATE_LOW, _GATE_SPAN = 3.0, 2.0
_DIVERSIFY_MID = 4.0  # a request's z at which a tool counts as half covering it
_NUMBER = re.compile(r"\b\d[\d,.:/-]*\b")

Queries = list[tuple[str, list[str]]]


def metrics(rankings: list[list[str]], queries: Queries) -> dict[str, float]:
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


def subset(picks: list[bool], items: list[Any]) -> list[Any]:
    return [x for x, keep in zip(items, picks) if keep]


def gains(m: dict[str, float], base: dict[str, float]) -> tuple[float, float]:
    return 100 * (m["recall@5"] - base["recall@5"]), 100 * (m["mrr"] - base["mrr"])


def gain_interval(runs: list[list[str]], base_runs: list[list[str]], queries: Queries,
                  resamples: int = 2000) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% intervals (points) of the recall@5 and MRR gains of ``runs`` over ``base_runs``:
    a paired bootstrap over the queries (same seed every run)."""
    import numpy as np

    def per_query(rs: list[list[str]]) -> Any:
        out = []
        for ranked, (_, relevant) in zip(rs, queries):
            rel = set(relevant)
            rr = next((1.0 / (i + 1) for i, k in enumerate(ranked[:5]) if k in rel), 0.0)
            out.append((len(rel & set(ranked[:5])) / len(rel), rr))
        return np.asarray(out)

    diff = per_query(runs) - per_query(base_runs)
    rng = np.random.default_rng(25)
    means = np.stack([diff[rng.integers(0, len(diff), len(diff))].mean(axis=0)
                      for _ in range(resamples)]) * 100
    lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


def unit_vectors(embedder: Callable[[list[str]], Any], texts: list[str]) -> Any:
    """The embedder's vectors of ``texts``, L2-normalised (rows)."""
    import numpy as np

    m = np.asarray(embedder(texts), dtype=np.float32)
    n = np.linalg.norm(m, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return m / n


def _zscore(sims: Any) -> Any:
    spread = sims.std(axis=-1, keepdims=True)
    spread[spread == 0] = 1.0
    return (sims - sims.mean(axis=-1, keepdims=True)) / spread


@dataclass(frozen=True)
class Variant:
    """One way to embed and fuse.

    ``text``: what is embedded for a tool: ``all`` (the plugin's :func:`embedding_text`),
    ``name+description``, ``name+description+params`` (parameter names), ``fields-sum``
    (name, description and parameters embedded apart, unit vectors summed 1:2:1: still one
    vector a tool), ``fields-max`` (the best of the three similarities: three vectors a tool),
    ``lower`` (all, lowercased). ``query``: ``as-is``, ``no-numbers`` or ``lower``.
    ``how``: ``score`` (the plugin's ``bm25f / best + param * z / 10``), ``minmax`` (convex
    combination ``(1 - param) * lexical + param * dense``, each min-max normalised over the
    candidates), ``zscore`` (both sides as z-scores over the candidates, dense times
    ``param``), ``combmnz`` (the score form times the number of sides that found the tool),
    ``rrf`` (``1 / (param + rank)`` each side), ``rrf-half`` (the dense term halved) or
    ``dense`` (the dense side alone). ``requests``: the plugin's z per request of a
    multi-request query. ``gate``: the dense weight scaled by how peaked the dense side is
    (the best tool's z). ``diversify``: xQuAD weight of covering each request of a
    multi-request query (0: off). ``feedback``: the query vector moved towards BM25F's best
    tool by this much (pseudo-relevance feedback; 0: off).
    """

    dim: int = 256
    text: str = "all"
    query: str = "as-is"
    how: str = "score"
    param: float = 1.0
    requests: bool = True
    gate: bool = False
    diversify: float = 0.0
    feedback: float = 0.0


class VariantSet:
    """One query set with its BM25F results, to rank it by dense and fused variants.
    ``registry``: the tools registered (as the plugin sees them); ``keys``: their names."""

    def __init__(self, registry: Any, keys: list[str], queries: Queries,
                 bm25f_runs: list[list[str]]) -> None:
        from toolregistry_discovery import ToolDiscoveryTool
        from toolregistry_discovery._fields import tool_texts

        index = ToolDiscoveryTool(registry).index
        self.queries = queries
        self.keys = keys
        self.row = {k: i for i, k in enumerate(keys)}
        self.base_runs = bm25f_runs
        self.lexical = [[(h.key, h.score) for h in index.search(q, SCORE_FUSION_DEPTH)]
                        for q, _ in queries]
        fields = {t.name: tool_texts(t) for t in registry.get_tools()}
        self.fields = [fields[k] for k in keys]
        self._vectors: dict[tuple[int, str], Any] = {}
        self._dense: dict[tuple[int, str, str, float], Any] = {}
        self._embedders: dict[int, Any] = {}

    def _embedder(self, dim: int) -> Any:
        from toolregistry_discovery import WordLlamaEmbedder

        if dim not in self._embedders:
            self._embedders[dim] = WordLlamaEmbedder(dim=dim)
        return self._embedders[dim]

    def _tool_vectors(self, dim: int, text: str) -> list[Any]:
        """One matrix (tools x dim), or three for ``fields-max``."""
        from toolregistry_discovery._semantic import embedding_text

        if (dim, text) in self._vectors:
            return self._vectors[dim, text]  # type: ignore[no-any-return]
        embed = self._embedder(dim)

        def texts(part: str) -> list[str]:
            out = []
            for names, description, hint, _tags, params, param_texts in self.fields:
                name_only = (names, "", "", (), (), ())
                if part == "name":
                    out.append(embedding_text(name_only) or " ")
                elif part == "description":
                    out.append(str(description) or " ")
                elif part == "params":
                    out.append(embedding_text(("", "", "", (), params, param_texts)) or " ")
                else:
                    kept = params if part == "name+description+params" else ()
                    out.append(embedding_text((names, description, hint, (), kept, ())))
            return out

        if text in ("all", "lower"):
            full = [embedding_text(f) for f in self.fields]
            got = [unit_vectors(embed, [t.lower() for t in full] if text == "lower" else full)]
        elif text in ("fields-sum", "fields-max"):
            parts = [unit_vectors(embed, texts(p)) for p in ("name", "description", "params")]
            got = parts if text == "fields-max" else [
                unit_vectors(lambda _t: parts[0] + 2 * parts[1] + parts[2], [""] * len(parts[0]))]
        else:
            got = [unit_vectors(embed, texts(text))]
        self._vectors[dim, text] = got
        return got

    def _query_text(self, query: str, how: str) -> str:
        if how == "no-numbers":
            return _NUMBER.sub(" ", query)
        return query.lower() if how == "lower" else query

    def _dense_side(self, v: Variant) -> tuple[Any, list[Any]]:
        """(similarities queries x tools, per query the z of each request or None)."""
        import numpy as np

        from toolregistry_discovery._semantic import split_requests

        key = (v.dim, v.text, v.query, v.feedback)
        if key in self._dense:
            return self._dense[key]  # type: ignore[no-any-return]
        embed = self._embedder(v.dim)
        tools = self._tool_vectors(v.dim, v.text)
        queries = [self._query_text(q, v.query) for q, _ in self.queries]
        qvecs = unit_vectors(embed, queries)
        if v.feedback:
            for i, lexical in enumerate(self.lexical):
                if lexical:
                    qvecs[i] += v.feedback * tools[0][self.row[lexical[0][0]]]
            qvecs = unit_vectors(lambda _t: qvecs, [""] * len(qvecs))

        def sims(vecs: Any) -> Any:
            return np.max(np.stack([vecs @ t.T for t in tools]), axis=0)

        per_request: list[Any] = []
        for query in queries:
            requests = split_requests(query)
            per_request.append(_zscore(sims(unit_vectors(embed, requests)))
                               if requests else None)
        self._dense[key] = (sims(qvecs), per_request)
        return self._dense[key]

    def runs(self, v: Variant, top_k: int) -> list[list[str]]:
        """The top ``top_k`` of every query by variant ``v``."""
        sims, per_request = self._dense_side(v)
        return [fused_ranking(self.lexical[i], sims[i], self.keys, v, top_k,
                              per_request[i] if v.requests else None)
                for i in range(len(self.queries))]

    def gains(self, runs: list[list[str]], picks: list[bool] | None) -> tuple[float, float]:
        if picks is None:
            return gains(metrics(runs, self.queries), metrics(self.base_runs, self.queries))
        qs = subset(picks, self.queries)
        return gains(metrics(subset(picks, runs), qs), metrics(subset(picks, self.base_runs), qs))


def fused_ranking(lexical: Sequence[tuple[str, float]], sims: Any, keys: list[str],
                  v: Variant, top_k: int, request_z: Any = None) -> list[str]:
    """One query's top ``top_k`` by variant ``v`` (see :class:`Variant`) from BM25F's ranked
    (key, score) list and the dense similarities; ``request_z``: the z of each request of a
    multi-request query (requests x tools), a candidate's z being the best of them and the
    whole query's, as in the plugin. With ``how="score"`` and nothing else on, this is the
    plugin's fusion."""
    import numpy as np

    n = min(SCORE_FUSION_DEPTH, sims.size)
    top = np.argpartition(sims, sims.size - n)[sims.size - n:]
    order = [int(r) for r in top[np.lexsort((top, -sims[top]))]]
    if v.how == "dense":
        return [keys[r] for r in order[:top_k]]
    z = _zscore(sims)
    best_z = z if request_z is None else np.maximum(z, request_z.max(axis=0))
    row = {k: i for i, k in enumerate(keys)}
    lrank = {k: i for i, (k, _) in enumerate(lexical[:SCORE_FUSION_DEPTH], 1)}
    lscore = dict(lexical[:SCORE_FUSION_DEPTH])
    drank = {keys[r]: i for i, r in enumerate(order, 1)}
    weight = v.param
    if v.gate:
        weight *= min(1.0, max(0.0, (float(z[order[0]]) - _GATE_LOW) / _GATE_SPAN))
    if v.how.startswith("rrf"):
        dense_weight = 0.5 if v.how == "rrf-half" else 1.0
        cands = list(lrank) + [k for k in drank if k not in lrank]
        fused = np.array([(1 / (weight + lrank[k]) if k in lrank else 0.0)
                          + (dense_weight / (weight + drank[k]) if k in drank else 0.0)
                          for k in cands])
    else:
        cands = list(lrank) + [k for k in drank if k not in lrank and best_z[row[k]] > 0]
        lex = np.array([lscore.get(k, 0.0) for k in cands])
        dense = np.array([float(best_z[row[k]]) for k in cands])
        best = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
        if v.how == "minmax":
            def minmax(x: Any) -> Any:
                span = x.max() - x.min()
                return (x - x.min()) / span if span > 0 else np.zeros_like(x)
            fused = (1 - weight) * minmax(lex) + weight * minmax(dense)
        elif v.how == "zscore":
            fused = _zscore(lex) + weight * _zscore(dense)
        else:
            fused = lex / best + weight * dense / _Z_SCALE
            if v.how == "combmnz":
                fused = fused * ((lex > 0).astype(float)
                                 + np.array([k in drank for k in cands], dtype=float))
    inf = float("inf")
    ranked = sorted(range(len(cands)), key=lambda i: (-fused[i], lrank.get(cands[i], inf),
                                                      drank.get(cands[i], inf), cands[i]))
    if not v.diversify or request_z is None:
        return [cands[i] for i in ranked[:top_k]]
    # xQuAD: each pick also scores by the requests it covers that the picks so far do not.
    pool = ranked[:SCORE_FUSION_DEPTH]
    covers = 1 / (1 + np.exp(-(request_z[:, [row[cands[i]] for i in pool]] - _DIVERSIFY_MID)))
    uncovered = np.full(covers.shape[0], 1.0 / covers.shape[0])
    base = np.array([fused[i] for i in pool])
    free = np.ones(len(pool), dtype=bool)
    out: list[str] = []
    for _ in range(min(top_k, len(pool))):
        score = np.where(free, base + v.diversify * (uncovered @ covers), -inf)
        pick = int(np.argmax(score))
        out.append(cands[pool[pick]])
        free[pick] = False
        uncovered = uncovered * (1 - covers[:, pick])
    return out
