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
# An identifier written in a query (snake_case, dotted, camelCase): split as tool names are.
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b")
# A capital that only opens a sentence (or a quotation): orthography, not a proper noun.
_INITIAL_CAPITAL = re.compile(r"(^|[.!?:]\s+|[\"'(]\s*)([A-Z])(?=[a-z]+\b)")
_VERSION = re.compile(r"(?:^|\s)(?:v\d+|\d+)(?=\s|$)", re.IGNORECASE)  # "v2", "2" in a name
_REDUNDANT = 0.8  # tool-to-tool cosine above which a second pick counts as a near-duplicate

Queries = list[tuple[str, list[str]]]


def metrics(rankings: list[list[str]], queries: Queries,
            same_name: dict[str, str] | None = None) -> dict[str, float]:
    """Recall@1/5 and MRR. With ``same_name`` (tool -> its original name), a tool counts for
    a relevant one when both are definitions of the same name (a diagnostic, not the target:
    the pool keeps every distinct definition, and which of them is "relevant" is the one that
    came with the question)."""
    def key(name: str) -> str:
        return same_name.get(name, name) if same_name else name

    r1 = r5 = mrr = 0.0
    for ranked, (_, relevant) in zip(rankings, queries):
        rel = {key(r) for r in relevant}
        top = [key(n) for n in ranked[:5]]
        r1 += len(rel & set(top[:1])) / len(rel)
        r5 += len(rel & set(top)) / len(rel)
        for i, name in enumerate(top):
            if name in rel:
                mrr += 1.0 / (i + 1)
                break
    n = len(queries)
    return {"recall@1": r1 / n, "recall@5": r5 / n, "mrr": mrr / n}


def check_metrics() -> None:
    """The same-name count is a diagnostic beside the target's, never instead of it: a
    sibling definition counts only with ``same_name`` (run before the hybrid section)."""
    queries: Queries = [("q", ["area"]), ("r", ["area", "perimeter"])]
    runs = [["other", "area_v2"], ["perimeter", "area_v2"]]
    names = {"area_v2": "area", "area": "area", "perimeter": "perimeter", "other": "other"}
    target = metrics(runs, queries)
    assert (target["recall@5"], target["mrr"]) == (0.25, 0.5), target
    diagnostic = metrics(runs, queries, names)
    assert (diagnostic["recall@5"], diagnostic["mrr"]) == (1.0, 0.75), diagnostic


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

    Measured in the session after those (each with a reason, none tuned on a half):
    ``text="no-version"`` (a name's version words, "v2" or a bare number, not embedded: they
    say nothing about what a tool does), ``text="lower-initial"`` / ``query="lower-initial"``
    (a capital that only opens a sentence lowered: orthography, while "BMI" or "Paris" keep
    theirs), ``text`` / ``query="case-robust"`` (the vector of the text and of its lowercased
    form, summed: the cased tokenizer sees "Calculate" and "calculate" as different tokens),
    ``query="split-identifiers"`` (identifiers written in a query, ``sort_list`` or
    ``math.hypot``, split as the tools' names are). ``how="coverage"``: BM25F's score over the
    most the query's words can score (each word's best posting summed) instead of over the
    best hit's, so a query that BM25F matches weakly leaves more to the dense side.
    ``coverage_weight``: the dense weight ``param * (1.5 - coverage)`` (that shape tried with
    one other on the whole set). ``lexical_requests``: each request's BM25F hits, scaled by
    that request's best, count too (a candidate's lexical score is its best).
    ``request_tops``: each request's best tool (whole-query BM25F plus that request's z)
    placed right after the first hit. ``z_floor``: only the part of a z above the largest a
    catalogue of N unrelated tools would show by chance, ``sqrt(2 ln N)``, counts.
    ``whiten``: vectors whitened by the covariance of the model's own token table (static
    embeddings are anisotropic). ``redundancy``: for a query of several requests, a pick
    loses this much per unit of cosine above 0.8 to a tool picked before it (MMR).
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
    coverage_weight: bool = False
    lexical_requests: bool = False
    request_tops: bool = False
    z_floor: bool = False
    whiten: bool = False
    redundancy: float = 0.0


class VariantSet:
    """One query set with its BM25F results, to rank it by dense and fused variants.
    ``registry``: the tools registered (as the plugin sees them); ``keys``: their names."""

    def __init__(self, registry: Any, keys: list[str], queries: Queries,
                 bm25f_runs: list[list[str]]) -> None:
        from toolregistry_discovery import ToolDiscoveryTool
        from toolregistry_discovery._fields import tool_texts

        index = self.index = ToolDiscoveryTool(registry, semantic=False).index
        self.queries = queries
        self.keys = keys
        self.row = {k: i for i, k in enumerate(keys)}
        self.base_runs = bm25f_runs
        self.lexical = [[(h.key, h.score) for h in index.search(q, SCORE_FUSION_DEPTH)]
                        for q, _ in queries]
        tools = registry.get_tools()
        fields = {t.name: tool_texts(t) for t in tools}
        self.fields = [fields[k] for k in keys]
        self.same_name = {t.name: t.provenance.original_name or t.name for t in tools}
        self._vectors: dict[tuple[int, str, bool], Any] = {}
        self._dense: dict[tuple[int, str, str, float, bool], Any] = {}
        self._embedders: dict[int, Any] = {}
        self._coverage: list[float] | None = None
        self._request_lexical: list[dict[str, float]] | None = None

    def _embedder(self, dim: int) -> Any:
        from toolregistry_discovery import WordLlamaEmbedder

        if dim not in self._embedders:
            self._embedders[dim] = WordLlamaEmbedder(dim=dim)
        return self._embedders[dim]

    def _embed(self, dim: int, texts: list[str], case_robust: bool = False,
               whiten: bool = False) -> Any:
        """Unit vectors of ``texts``; ``case_robust``: of each text and its lowercased form,
        summed; ``whiten``: whitened by the token table's covariance (see :class:`Variant`)."""
        import numpy as np

        embed = self._embedder(dim)
        vecs = unit_vectors(embed, texts)
        if case_robust:
            vecs = vecs + unit_vectors(embed, [t.lower() for t in texts])
        if whiten:
            if ("whiten", dim) not in self._embedders:
                table = np.asarray(embed._table, dtype=np.float64)
                mean = table.mean(axis=0)
                values, basis = np.linalg.eigh(np.cov((table - mean).T))
                self._embedders["whiten", dim] = (mean, basis / np.sqrt(values))
            mean, project = self._embedders["whiten", dim]
            vecs = (vecs - mean) @ project
        return unit_vectors(lambda _t: vecs, [""] * len(vecs))

    def _tool_vectors(self, dim: int, text: str, whiten: bool = False) -> list[Any]:
        """One matrix (tools x dim), or three for ``fields-max``."""
        from toolregistry_discovery._semantic import _IDENT_SPLIT, embedding_text

        if (dim, text, whiten) in self._vectors:
            return self._vectors[dim, text, whiten]  # type: ignore[no-any-return]
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

        if text in ("all", "lower", "lower-initial", "case-robust", "no-version"):
            fields = self.fields
            if text == "no-version":  # the names' words without "v2" or a bare number
                fields = [(tuple(_VERSION.sub(" ", _IDENT_SPLIT.sub(" ", n)).strip()
                                 for n in ((f[0],) if isinstance(f[0], str) else f[0])),
                           *f[1:]) for f in fields]
            full = [embedding_text(f) for f in fields]
            if text == "lower":
                full = [t.lower() for t in full]
            elif text == "lower-initial":
                full = [_lower_initials(t) for t in full]
            got = [self._embed(dim, full, text == "case-robust", whiten)]
        elif text in ("fields-sum", "fields-max"):
            parts = [unit_vectors(embed, texts(p)) for p in ("name", "description", "params")]
            got = parts if text == "fields-max" else [
                unit_vectors(lambda _t: parts[0] + 2 * parts[1] + parts[2], [""] * len(parts[0]))]
        else:
            got = [unit_vectors(embed, texts(text))]
        self._vectors[dim, text, whiten] = got
        return got

    def _query_text(self, query: str, how: str) -> str:
        from toolregistry_discovery._semantic import _IDENT_SPLIT

        if how == "no-numbers":
            return _NUMBER.sub(" ", query)
        if how == "lower-initial":
            return _lower_initials(query)
        if how == "split-identifiers":
            return _IDENTIFIER.sub(lambda m: _IDENT_SPLIT.sub(" ", m.group(0)), query)
        return query.lower() if how == "lower" else query

    def _dense_side(self, v: Variant) -> tuple[Any, list[Any]]:
        """(similarities queries x tools, per query the z of each request or None)."""
        import numpy as np

        from toolregistry_discovery._semantic import split_requests

        key = (v.dim, v.text, v.query, v.feedback, v.whiten)
        if key in self._dense:
            return self._dense[key]  # type: ignore[no-any-return]
        tools = self._tool_vectors(v.dim, v.text, v.whiten)
        queries = [self._query_text(q, v.query) for q, _ in self.queries]

        def embed_queries(texts: list[str]) -> Any:
            return self._embed(v.dim, texts, v.query == "case-robust", v.whiten)

        qvecs = embed_queries(queries)
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
            per_request.append(_zscore(sims(embed_queries(requests))) if requests else None)
        self._dense[key] = (sims(qvecs), per_request)
        return self._dense[key]

    def coverage(self) -> list[float]:
        """Per query, the most its words can score in BM25F: each indexed word's best share
        of any tool's score, summed (the score of a tool that matched every word as well as
        the best tool for that word does)."""
        if self._coverage is None:
            from toolregistry_discovery._analysis import analyze_query

            index, out = self.index, []
            for query, _ in self.queries:
                ids = [i for i in map(index._vocab.get, analyze_query(query)) if i is not None]
                total = 0.0
                if ids:
                    _present, _docs, shares, sizes = index._postings_of(ids, scored=True)
                    at = 0
                    for size in sizes:
                        total += float(shares[at : at + size].max())
                        at += size
                out.append(total)
            self._coverage = out
        return self._coverage

    def request_lexical(self) -> list[dict[str, float]]:
        """Per query, each request's BM25F hits scaled by that request's best (a tool's best
        over the requests); empty for a query of one request."""
        if self._request_lexical is None:
            from toolregistry_discovery._semantic import split_requests

            out: list[dict[str, float]] = []
            for query, _ in self.queries:
                best: dict[str, float] = {}
                for request in split_requests(query):
                    hits = self.index.search(request, SCORE_FUSION_DEPTH)
                    if hits and hits[0].score > 0:
                        for h in hits:
                            best[h.key] = max(best.get(h.key, 0.0), h.score / hits[0].score)
                out.append(best)
            self._request_lexical = out
        return self._request_lexical

    def runs(self, v: Variant, top_k: int) -> list[list[str]]:
        """The top ``top_k`` of every query by variant ``v``."""
        sims, per_request = self._dense_side(v)
        tools = self._tool_vectors(v.dim, v.text, v.whiten)[0] if v.redundancy else None
        cover = self.coverage() if v.how == "coverage" or v.coverage_weight else None
        extra = self.request_lexical() if v.lexical_requests else None
        return [fused_ranking(self.lexical[i], sims[i], self.keys, v, top_k,
                              per_request[i] if v.requests else None,
                              attainable=cover[i] if cover else None,
                              request_lexical=extra[i] if extra else None, tool_vectors=tools)
                for i in range(len(self.queries))]

    def gains(self, runs: list[list[str]], picks: list[bool] | None,
              same_name: bool = False) -> tuple[float, float]:
        """Gains over BM25F alone (points) on the queries ``picks`` (all: ``None``);
        ``same_name``: a definition of a relevant tool's name counts (see :func:`metrics`)."""
        names = self.same_name if same_name else None
        qs = self.queries if picks is None else subset(picks, self.queries)
        mine = runs if picks is None else subset(picks, runs)
        base = self.base_runs if picks is None else subset(picks, self.base_runs)
        return gains(metrics(mine, qs, names), metrics(base, qs, names))


def _lower_initials(text: str) -> str:
    return _INITIAL_CAPITAL.sub(lambda m: m.group(1) + m.group(2).lower(), text)


def fused_ranking(lexical: Sequence[tuple[str, float]], sims: Any, keys: list[str],
                  v: Variant, top_k: int, request_z: Any = None, *,
                  attainable: float | None = None,
                  request_lexical: dict[str, float] | None = None,
                  tool_vectors: Any = None) -> list[str]:
    """One query's top ``top_k`` by variant ``v`` (see :class:`Variant`) from BM25F's ranked
    (key, score) list and the dense similarities; ``request_z``: the z of each request of a
    multi-request query (requests x tools), a candidate's z being the best of them and the
    whole query's, as in the plugin. With ``how="score"`` and nothing else on, this is the
    plugin's fusion. ``attainable``: the most the query's words can score in BM25F
    (``how="coverage"``, ``coverage_weight``); ``request_lexical``: each request's scaled
    BM25F hits (``lexical_requests``); ``tool_vectors``: the tools' unit vectors
    (``redundancy``)."""
    import math

    import numpy as np

    n = min(SCORE_FUSION_DEPTH, sims.size)
    top = np.argpartition(sims, sims.size - n)[sims.size - n:]
    order = [int(r) for r in top[np.lexsort((top, -sims[top]))]]
    if v.how == "dense":
        return [keys[r] for r in order[:top_k]]
    z = _zscore(sims)
    if v.z_floor:  # the largest z that N unrelated tools would show by chance
        floor = math.sqrt(2 * math.log(max(2, sims.size)))
        z = np.maximum(z - floor, 0.0)
        if request_z is not None:
            request_z = np.maximum(request_z - floor, 0.0)
    best_z = z if request_z is None else np.maximum(z, request_z.max(axis=0))
    row = {k: i for i, k in enumerate(keys)}
    lrank = {k: i for i, (k, _) in enumerate(lexical[:SCORE_FUSION_DEPTH], 1)}
    lscore = dict(lexical[:SCORE_FUSION_DEPTH])
    for key in request_lexical or ():  # hits of a request only: ranked after BM25F's own
        lrank.setdefault(key, SCORE_FUSION_DEPTH + 1)
    drank = {keys[r]: i for i, r in enumerate(order, 1)}
    weight = v.param
    if v.gate:
        weight *= min(1.0, max(0.0, (float(z[order[0]]) - _GATE_LOW) / _GATE_SPAN))
    coverage = 0.0
    if attainable:
        coverage = (lexical[0][1] / attainable) if lexical else 0.0
    if v.coverage_weight:
        weight *= 1.5 - coverage
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
        if v.how == "coverage" and attainable:
            best = attainable
        if request_lexical:
            lex = np.maximum(lex, best * np.array([request_lexical.get(k, 0.0) for k in cands]))
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
    if v.request_tops and request_z is not None:
        # Each request's best candidate (whole-query BM25F + that request's z) right after
        # the first hit.
        lex_part = np.array([lscore.get(k, 0.0) for k in cands])
        lex_part = lex_part / (lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0)
        rows = [row[k] for k in cands]
        picks = ranked[:1]
        for rz in request_z:
            best_i = int(np.argmax(lex_part + weight * rz[rows] / _Z_SCALE))
            if best_i not in picks:
                picks.append(best_i)
        ranked = picks + [i for i in ranked if i not in picks]
    if v.redundancy and request_z is not None and tool_vectors is not None:
        # MMR: a pick loses redundancy x (cosine above _REDUNDANT) to the closest pick so far.
        pool = ranked[:SCORE_FUSION_DEPTH]
        vecs = tool_vectors[[row[cands[i]] for i in pool]]
        close = np.maximum(vecs @ vecs.T - _REDUNDANT, 0.0)
        base = np.array([fused[i] for i in pool])
        penalty = np.zeros(len(pool))
        free = np.ones(len(pool), dtype=bool)
        out_mmr: list[str] = []
        for _ in range(min(top_k, len(pool))):
            pick = int(np.argmax(np.where(free, base - v.redundancy * penalty, -inf)))
            out_mmr.append(cands[pool[pick]])
            free[pick] = False
            penalty = np.maximum(penalty, close[pick])
        return out_mmr
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
