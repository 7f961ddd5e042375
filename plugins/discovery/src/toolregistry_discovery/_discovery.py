"""``ToolDiscoveryTool``: exact-name lookup plus BM25F search over a registry's tools."""

from __future__ import annotations

import difflib
import math
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import log, operation

from ._analysis import analyze_query
from ._fields import DEFAULT_FIELD_WEIGHTS, FIELDS, fold_name, tool_texts
from ._settings import semantic_available

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry

    from ._index import BM25FIndex, Texts
    from ._semantic import SemanticOptions, SemanticSearch

__all__ = ["DISCOVER_TOOLS_NAME", "INFRASTRUCTURE_TOOLS", "ToolDiscoveryTool"]


DISCOVER_TOOLS_NAME = "discover_tools"
INFRASTRUCTURE_TOOLS = frozenset({DISCOVER_TOOLS_NAME})
"""Tools the plugin registers itself; never indexed, never returned."""


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def merge_field_weights(field_weights: Mapping[str, float] | None) -> dict[str, float]:
    """The default weights with ``field_weights`` applied on top (unknown fields are errors)."""
    merged = dict(DEFAULT_FIELD_WEIGHTS)
    if field_weights:
        unknown = sorted(set(field_weights) - set(merged))
        if unknown:
            raise ValueError(
                f"unknown discovery field(s) {unknown} in field_weights; known fields: "
                f"{', '.join(merged)}"
            )
        for fname, w in field_weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0 or math.isnan(w):
                raise ValueError(
                    f"field_weights[{fname!r}] must be a number >= 0, got {w!r}"
                )
            merged[fname] = float(w)
    return merged


def _default_semantic(registry: ToolRegistry) -> SemanticSearch | None:
    """The default dense side (its vectors cached on the registry's store where one is
    configured, so that workers and hosts share them), or ``None`` (logged) when the
    installed model cannot load: the default falls back to BM25F alone where asking for it
    explicitly is an error."""
    from ._semantic import SemanticOptions, SemanticSearch

    url = registry.store_url()
    try:
        return SemanticSearch(SemanticOptions() if url is None else SemanticOptions(cache=url))
    except (ImportError, OSError, ValueError) as exc:
        log.warning("discovery.semantic_unavailable", registry=registry.name,
                    error=f"{type(exc).__name__}: {exc}")
        return None


class ToolDiscoveryTool:
    """Find a registry's tools by exact name or by a natural-language query.

    The index covers every enabled tool (deferred ones included) in six fields: ``name``,
    ``description``, ``search_hint``, ``tags``, ``params`` and ``param_descriptions``;
    ``field_weights`` overrides some or all of their default weights. Built once here;
    call :meth:`rebuild_index` after changing the registry (the ``discover_tools`` tool
    registered by ``registry.enable_tool_discovery()`` follows changes by itself).

    ``semantic`` (``True`` or a :class:`SemanticOptions`; needs the ``semantic`` extra)
    adds dense retrieval, fused with BM25F; tools are embedded when the index is built.
    ``None`` (the default) is ``True`` where the ``semantic`` extra is installed and
    ``False`` elsewhere, and embeds the tools with the first index build rather than now.
    Without an explicit ``semantic``, and with the default ``k1`` / ``b`` / ``delta``, the
    index (and numpy, and the model) is built on first use: by a search, a suggestion or
    :attr:`index`.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        field_weights: Mapping[str, float] | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        delta: float = 1.0,
        semantic: bool | SemanticOptions | None = None,
    ) -> None:
        self._registry = registry
        self._folded: tuple[int, dict[str, str]] | None = None
        self.field_weights = merge_field_weights(field_weights)
        assert tuple(self.field_weights) == FIELDS  # tool_texts() fills fields in this order
        self._bm25 = (k1, b, delta)
        self._index: BM25FIndex | None = None
        self._building = threading.Lock()  # one first build, whichever thread searches first
        self._semantic: SemanticSearch | None = None
        # The default: hybrid where the extra is installed, opened with the first build.
        self._semantic_later = semantic is None and semantic_available()
        if semantic:
            from ._semantic import SemanticOptions, SemanticSearch

            if semantic is True:
                semantic = SemanticOptions()
            if not isinstance(semantic, SemanticOptions):
                raise TypeError(f"semantic must be True, False or a SemanticOptions, "
                                f"got {semantic!r}")
            self._semantic = SemanticSearch(semantic)
        if self._semantic is not None or self._bm25 != (1.5, 0.75, 1.0):
            self.rebuild_index()  # embeds now; bad BM25 parameters are refused now

    def _built(self) -> BM25FIndex:
        index = self._index
        if index is None:
            with self._building:
                if self._index is None:
                    self.rebuild_index()
                index = self._index
            assert index is not None
        return index

    @property
    def registry(self) -> ToolRegistry:
        """The registry searched."""
        return self._registry

    @property
    def index(self) -> BM25FIndex:
        """The underlying BM25F index (built now if it was not yet)."""
        return self._built()

    @property
    def semantic(self) -> SemanticSearch | None:
        """The dense side of hybrid retrieval (``None`` when it is off, or by default until
        the index is first built)."""
        return self._semantic

    @property
    def hybrid(self) -> bool:
        """Whether searches fuse the dense side (now, or from the first index build on)."""
        return self._semantic is not None or self._semantic_later

    def close(self) -> None:
        """Close the embedding cache (the index stays usable; the cache reopens no more)."""
        self._semantic_later = False
        if self._semantic is not None:
            self._semantic.close()

    # -- indexing ------------------------------------------------------------------------

    def rebuild_index(self) -> None:
        """Re-index every enabled tool of the registry from scratch."""
        if self._semantic_later:  # before the index: a search that sees it sees this too
            self._semantic_later = False
            self._semantic = _default_semantic(self._registry)
        if self._index is None:
            from ._index import BM25FIndex

            k1, b, delta = self._bm25
            self._index = BM25FIndex(self.field_weights, k1=k1, b=b, delta=delta)
        self._index.clear()
        terms = self._index.term_ids
        tools = self._registry.get_tools()
        docs = [(tool.name, tool_texts(tool, terms)) for tool in tools
                if tool.name not in INFRASTRUCTURE_TOOLS]
        self._index.add_texts(docs)
        if self._semantic is not None:
            from ._semantic import embedding_text

            self._semantic.clear()
            self._semantic.stage((name, embedding_text(texts)) for name, texts in docs)
            self._semantic.flush()
        log.debug("discovery.indexed", registry=self._registry.name, tools=len(self._index))

    def refresh(self, names: Iterable[str]) -> None:
        """Bring the entries of ``names`` up to date: (re)index enabled tools, drop others.

        Costs O(size of those tools), whatever the size of the registry; nothing while the
        index is not built yet (it will read them then).
        """
        if self._index is None:
            return
        fresh: list[tuple[str, Texts]] = []
        for name in names:
            if name in INFRASTRUCTURE_TOOLS:
                continue
            tool = self._registry.get_tool(name)
            if tool is None or not self._registry.is_enabled(name):
                self.forget((name,))
            else:
                fresh.append((name, tool_texts(tool, self._index.term_ids)))
        self._index.add_texts(fresh)
        if self._semantic is not None and fresh:
            from ._semantic import embedding_text

            # Embedded together when the next query needs them.
            self._semantic.stage((name, embedding_text(texts)) for name, texts in fresh)

    def forget(self, names: Iterable[str]) -> None:
        """Drop ``names`` from the index."""
        names = list(names)
        if self._index is not None:
            for name in names:
                self._index.remove(name)
        if self._semantic is not None:
            self._semantic.remove(names)

    # -- searching -----------------------------------------------------------------------

    def _live_tool(self, name: str) -> Tool | None:
        tool = self._registry.get_tool(name)
        if tool is None or name in INFRASTRUCTURE_TOOLS or not self._registry.is_enabled(name):
            return None
        return tool

    def exact_match(self, query: str) -> Tool | None:
        """The enabled tool ``query`` names, exactly or as commonly respelled."""
        name = query.strip()
        tool = self._live_tool(name)
        if tool is not None:
            return tool
        if not name or any(c.isspace() for c in name):
            return None
        found = self._folded_names().get(fold_name(name))
        return self._live_tool(found) if found is not None else None

    def _folded_names(self) -> dict[str, str]:
        """``fold_name(n) -> n`` for every tool, rebuilt only after the registry changed."""
        version = self._registry.version
        cached = self._folded
        if cached is None or cached[0] != version:
            folded: dict[str, str] = {}
            for n in self._registry.list_tools(include_disabled=True):
                folded.setdefault(fold_name(n), n)
            cached = (version, folded)
            self._folded = cached
        return cached[1]

    def _schema(self, tool: Tool, api_format: str) -> dict[str, Any]:
        return dict(self._registry.get_tool_schema(tool.name, api_format=api_format))

    def _result(self, tool: Tool, score: float, with_schema: bool,
                api_format: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "score": score,
            "namespace": tool.namespace,
            "deferred": bool(tool.metadata.defer),
        }
        if with_schema:
            out["schema"] = self._schema(tool, api_format)
        return out

    def discover(
        self,
        query: str,
        top_k: int = 5,
        explain: bool = False,
        *,
        api_format: str = "openai-chat",
    ) -> list[dict[str, Any]]:
        """Tools for ``query``, best first.

        A query that names an enabled tool returns just that tool, with score 1.0 and its
        full schema. Otherwise up to ``top_k`` BM25F hits come back; a hit carries a
        ``schema`` only when the tool is deferred (the model has not seen it yet). With
        ``explain=True`` each hit also has ``explain``: the score per field and per term.
        Disabled tools are never returned.
        """
        if not isinstance(query, str):
            raise TypeError(f"discover() query must be a string, got {type(query).__name__}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"discover() top_k must be an integer >= 1, got {top_k!r}")
        # observers (the otel plugin) see each query; its text is content (opt-in there)
        with operation(self._registry, "discovery.query",
                       {"content.discovery.query.text": query, "discovery.top_k": top_k}
                       ) as attrs:
            out = self._discover(query, top_k, explain, api_format)
            attrs["discovery.hits"] = len(out)
        return out

    def _discover(self, query: str, top_k: int, explain: bool, api_format: str
                  ) -> list[dict[str, Any]]:
        exact = self.exact_match(query)
        if exact is not None:
            result = self._result(exact, 1.0, True, api_format)
            if explain:
                result["explain"] = {"exact_match": True}
            return [result]
        out: list[dict[str, Any]] = []
        fetch = top_k
        while True:
            hits = self._ranked(query, fetch, explain)
            out = []
            for key, score, hybrid in hits:
                tool = self._live_tool(key)
                if tool is None:  # changed since the last rebuild_index()
                    continue
                result = self._result(tool, round(score, 4), tool.metadata.defer, api_format)
                if explain:
                    result["explain"] = self._explain(key, query, hybrid)
                out.append(result)
                if len(out) == top_k:
                    break
            if len(out) == top_k or len(hits) < fetch:
                break
            fetch *= 4
        if not out:
            log.debug("discovery.no_match", query=query)
        return out

    def _ranked(self, query: str, limit: int, explain: bool
                ) -> list[tuple[str, float, dict[str, Any] | None]]:
        """(key, score, with ``explain`` the hybrid detail, else ``None``) for the ``limit``
        best tools."""
        index = self._built()  # first: the default dense side opens with the first build
        semantic = self._semantic
        if semantic is None:
            return [(h.key, h.score, None) for h in index.search(query, limit)]
        from ._semantic import fuse

        depth = max(50, 4 * limit)
        lexical = [(h.key, h.score) for h in index.search(query, depth)]
        weight = semantic.options.weight
        # The dense side joins only for a query with a word that may anchor a hit (as for
        # BM25F) in a language the embedder covers: otherwise BM25F answers alone.
        dense = None
        skipped = ""
        if weight <= 0:
            skipped = "semantic weight is 0"
        elif not any(analyze_query(query).values()):
            skipped = "no query word may anchor a hit"
        elif not semantic.covers(query):
            skipped = "the embedder does not cover this query's language"
        with semantic.lock:  # rows stay put between ranking and fusing
            if not skipped:
                dense = semantic.rank(query, depth)
                if dense is None:
                    skipped = "no tool is embedded, or the query has no vector"
            fused = fuse(lexical, dense, semantic, weight, limit)
        if not explain:
            return [(hit.key, hit.score, None) for hit in fused]
        out: list[tuple[str, float, dict[str, Any] | None]] = []
        for hit in fused:
            detail: dict[str, Any] = {
                "lexical_rank": hit.lexical_rank,
                "lexical_score": round(hit.lexical_score, 4),
            }
            if dense is None:
                detail["dense_skipped"] = skipped
            else:
                rank = hit.dense_rank
                if rank is None and hit.similarity is not None:  # beyond the candidates
                    import numpy as np

                    rank = int(np.count_nonzero(dense.similarities > hit.similarity)) + 1
                detail.update(dense_rank=rank, dense_similarity=_round(hit.similarity, 4),
                              dense_z=_round(hit.z, 3))
                if hit.request is not None:  # z of one request of a multi-request query
                    detail["dense_request"] = hit.request
            detail["fused"] = round(hit.score, 4)
            out.append((hit.key, hit.score, detail))
        return out

    def _explain(self, key: str, query: str, hybrid: dict[str, Any] | None) -> dict[str, Any]:
        lexical = self._built().explain(key, query)
        return lexical if hybrid is None else {**lexical, **hybrid}

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """At most ``limit`` enabled tool names close to the unknown ``name``.

        Close spellings first (case, separators and typos forgiven), then tools whose
        name and description match the words of ``name``.
        """
        if limit < 1:
            return []
        folded = fold_name(name)
        names = [n for n in self._registry.list_tools() if n not in INFRASTRUCTURE_TOOLS]
        by_fold: dict[str, str] = {}
        for n in names:
            by_fold.setdefault(fold_name(n), n)
        out: list[str] = []
        if folded in by_fold:
            out.append(by_fold[folded])
        for close in difflib.get_close_matches(folded, list(by_fold), n=limit, cutoff=0.6):
            if by_fold[close] not in out:
                out.append(by_fold[close])
        if len(out) < limit:
            for hit in self._built().search(name, limit + len(out)):
                if hit.key not in out and self._live_tool(hit.key) is not None:
                    out.append(hit.key)
                if len(out) >= limit:
                    break
        return out[:limit]
