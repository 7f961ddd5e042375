"""Hybrid (dense + BM25F) discovery with the real WordLlama model shipped in its wheel."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolregistry import Tool, ToolMetadata, ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry_discovery import SemanticOptions, ToolDiscoveryTool, WordLlamaEmbedder
from toolregistry_discovery._plugin import get_discoverer
from toolregistry_discovery._semantic import DenseIndex, split_requests

DATA = json.loads((Path(__file__).parent / "data" / "paraphrases.json").read_text("utf-8"))
QUERIES: list[tuple[str, str]] = [(q, want) for q, want in DATA["queries"]]


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def _tool(name: str, description: str, params: dict[str, str] | None = None,
          **meta: Any) -> Tool:
    props = {k: {"type": "string", "description": v} for k, v in (params or {}).items()}
    return Tool(name=name, description=description, callable=lambda **kw: kw,
                parameters={"type": "object", "properties": props},
                metadata=ToolMetadata(**meta))


def _registry(tmp_path: Path, tools: list[Tool] | None = None, config: str = "") -> ToolRegistry:
    cfg = tmp_path / "pyproject.toml"
    if not cfg.exists():
        cfg.write_text(config, encoding="utf-8")
    reg = ToolRegistry(config=str(cfg))
    reg.register_tools(tools if tools is not None else
                       [_tool(t["name"], t["description"], t["params"]) for t in DATA["tools"]])
    return reg


def _names(results: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in results]


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: WordLlamaEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.texts: list[str] = []

    def covers(self, text: str) -> bool:
        return self.inner.covers(text)

    def __call__(self, texts: list[str]) -> Any:
        self.texts += texts
        return self.inner(texts)


# -- the default embedder ------------------------------------------------------------------

@pytest.mark.parametrize("dim", [256, 128])
def test_vectors_are_wordllamas_own(embedder: WordLlamaEmbedder, dim: int) -> None:
    """Our reading of the shipped files gives the vectors WordLlama.embed(norm=True) gives,
    also for a Matryoshka truncation (WordLlama.load(trunc_dim=...))."""
    if dim != embedder.dim:
        embedder = WordLlamaEmbedder(dim=dim)
        assert embedder.dim == dim and embedder.model_id.endswith(f"/trunc{dim}")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama  # configures the root logger on import (restored below)

        model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent,
                                         disable_download=True,
                                         trunc_dim=None if dim == 256 else dim)
    finally:
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)
    texts = ["get the weather for a city", "Request a car to pick you up", "x", "",
             "résumé naïve café", "计算三角形的面积", "a " * 300]
    ours = np.asarray(embedder(texts))
    ours /= np.maximum(np.linalg.norm(ours, axis=1, keepdims=True), 1e-12)
    theirs = model.embed([t for t in texts if t], norm=True)
    np.testing.assert_allclose(np.delete(ours, 3, axis=0), theirs, rtol=1e-4, atol=1e-5)
    assert not ours[3].any()  # no token, no vector


def test_default_embedder_works_offline_without_importing_wordllama(tmp_path: Path) -> None:
    """Nothing is downloaded (no network needed) and wordllama is never imported, so the
    root logger stays as the application left it."""
    script = textwrap.dedent("""
        import logging, socket, sys
        def no_network(*a, **k):
            raise OSError("network used")
        socket.socket.connect = no_network
        socket.create_connection = no_network
        from toolregistry_discovery import WordLlamaEmbedder
        e = WordLlamaEmbedder()
        v = e(["find restaurants nearby"])
        assert v.shape == (1, 256) and abs(float((v * v).sum()) ** 0.5 - 1) > -1
        assert "wordllama" not in sys.modules, "wordllama was imported"
        assert logging.getLogger().handlers == [], logging.getLogger().handlers
        print("ok", e.model_id)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok wordllama-")


@pytest.mark.parametrize("dim", [0, 32, 512, 100, True, "128"])
def test_unknown_dimension_is_named(dim: Any) -> None:
    with pytest.raises(ValueError, match=r"dim must be one of \(64, 128, 256\)"):
        WordLlamaEmbedder(dim=dim)


def test_covers_latin_script_only(embedder: WordLlamaEmbedder) -> None:
    assert embedder.covers("book a ride to the airport")
    assert embedder.covers("café résumé 2024")
    assert not embedder.covers("压缩文件")
    assert not embedder.covers("ファイルを圧縮する zip")
    assert not embedder.covers("Москва погода")


def test_missing_extra_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"toolregistry-discovery\[semantic\]"):
        ToolDiscoveryTool(_registry(tmp_path), semantic=True)


# -- retrieval quality ---------------------------------------------------------------------

def test_paraphrases_found_by_hybrid_not_by_bm25f(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    hybrid = ToolDiscoveryTool(reg, semantic=SemanticOptions(cache=False))
    lexical = ToolDiscoveryTool(reg, semantic=False)
    h1 = h5 = l5 = 0
    for query, want in QUERIES:
        got = _names(hybrid.discover(query, top_k=5))
        h1 += got[:1] == [want]
        h5 += want in got
        l5 += want in _names(lexical.discover(query, top_k=5))
    n = len(QUERIES)
    assert h5 / n >= 0.9, (h1, h5, l5)
    assert h1 / n >= 0.6, (h1, h5, l5)
    assert l5 / n <= 0.35, (h1, h5, l5)  # the set is made of paraphrases BM25F misses


def test_exact_names_and_strong_words_still_win(tmp_path: Path) -> None:
    d = ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(cache=False))
    assert _names(d.discover("get_weather")) == ["get_weather"]
    assert _names(d.discover("translate text into another language"))[0] == "translate_text"
    assert _names(d.discover("zip archive"))[0] == "compress_files"


def test_query_without_anchor_words_finds_nothing(tmp_path: Path) -> None:
    d = ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(cache=False))
    assert d.discover("please help me") == []
    assert d.discover("the of to") == []


ZH_TOOLS = [
    _tool("compress_files", "Pack files into a zip archive.", {"paths": "Files"},
          search_hint="压缩文件 打包"),
    _tool("get_weather", "Get the current weather conditions for a city.", {"city": "City"},
          search_hint="天气 预报"),
    _tool("send_email", "Send an email message to a recipient.", {"to": "Recipient"},
          search_hint="发送邮件"),
    _tool("translate_text", "Translate text into another language.", {"text": "Text"}),
    _tool("book_hotel", "Reserve a hotel room for given dates.", {"city": "City"},
          search_hint="预订酒店"),
]


@pytest.mark.parametrize("query", ["压缩文件", "帮我查一下明天的天气", "发送一封邮件", "预订酒店房间",
                                   "翻译这段文字", "今天股票怎么样", "ファイルを圧縮"])
def test_query_the_embedder_does_not_cover_is_answered_by_bm25f_alone(
        tmp_path: Path, query: str) -> None:
    """A Chinese (or Japanese) query against an English-only embedder: exactly BM25F's
    results, scores included, and ``explain`` says why the dense side stayed out."""
    reg = _registry(tmp_path, ZH_TOOLS)
    hybrid = ToolDiscoveryTool(reg, semantic=SemanticOptions(cache=False))
    lexical = ToolDiscoveryTool(reg, semantic=False)
    got = hybrid.discover(query, top_k=5, explain=True)
    want = lexical.discover(query, top_k=5)
    assert _names(got) == _names(want)
    for hit in got:
        assert hit["explain"]["dense_skipped"] == \
            "the embedder does not cover this query's language"
        assert hit["explain"]["lexical_rank"] == _names(want).index(hit["name"]) + 1


def test_explain_shows_both_sides(tmp_path: Path, embedder: WordLlamaEmbedder) -> None:
    reg = _registry(tmp_path)
    d = ToolDiscoveryTool(reg, semantic=SemanticOptions(embedder=embedder, cache=False))
    query = "send the weather report by email"
    hits = d.discover(query, top_k=5, explain=True)
    lexical = _names(ToolDiscoveryTool(reg, semantic=False).discover(query, top_k=50))
    # The dense ranks and similarities, recomputed here from the vectors.
    from toolregistry_discovery._fields import tool_texts
    from toolregistry_discovery._semantic import embedding_text

    tools = [reg.get_tool(t["name"]) for t in DATA["tools"]]
    vecs = np.asarray(embedder([embedding_text(tool_texts(t)) for t in tools if t]))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    q = np.asarray(embedder([query]))[0]
    q /= np.linalg.norm(q)
    sims = vecs @ q
    names = [t["name"] for t in DATA["tools"]]
    dense_order = [names[i] for i in np.argsort(-sims, kind="stable")]
    assert hits
    for hit in hits:
        ex = hit["explain"]
        assert set(ex) >= {"fields", "terms", "lexical_rank", "lexical_score", "dense_rank",
                           "dense_similarity", "dense_z", "fused"}
        assert ex["fused"] == hit["score"]
        name = hit["name"]
        assert ex["lexical_rank"] == (lexical.index(name) + 1 if name in lexical else None)
        assert ex["dense_rank"] == dense_order.index(name) + 1
        assert ex["dense_similarity"] == pytest.approx(sims[names.index(name)], abs=1e-3)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


@pytest.mark.parametrize(("query", "requests"), [
    ("Book a hotel in Paris. Then find a vegan restaurant nearby.",
     ["Book a hotel in Paris.", "Then find a vegan restaurant nearby."]),
    ('"Put my photos into one archive, then mail it to my sister."',
     ["Put my photos into one archive", "then mail it to my sister."]),
    ("What is 5 plus 3? Also, what does the word serendipity mean? Finally translate it into French",
     ["What is 5 plus 3?", "Also, what does the word serendipity mean?",
      "Finally translate it into French"]),
    ("Find the area of a triangle with base 10 and height 5.", []),  # one request
    ("Get the weather. Then stop.", []),  # too short to be requests of their own
    ("the weather then", []),
    ("", []),
])
def test_split_requests(query: str, requests: list[str]) -> None:
    assert split_requests(query) == requests


@pytest.mark.parametrize(("query", "first", "second"), [
    ("Put my holiday photos into a single archive, then mail it to my sister.",
     "compress_files", "send_email"),
    ("Reserve a room in Rome for three nights. After that, find somewhere nearby that "
     "serves pasta.", "book_hotel", "find_restaurants"),
    ("How much is 100 dollars in euros? Also, what does the word serendipity mean?",
     "lookup_definition", "convert_currency"),
])
def test_each_request_of_a_query_finds_its_tool(tmp_path: Path, embedder: WordLlamaEmbedder,
                                                query: str, first: str, second: str) -> None:
    """One vector for a query of several requests resembles none of their tools; each
    request's own z counts, and explain says which request it was (recomputed here)."""
    reg = _registry(tmp_path)
    d = ToolDiscoveryTool(reg, semantic=SemanticOptions(embedder=embedder, cache=False))
    hits = d.discover(query, top_k=5, explain=True)
    assert _names(hits)[:2] == [first, second]
    from toolregistry_discovery._fields import tool_texts
    from toolregistry_discovery._semantic import embedding_text

    names = [t["name"] for t in DATA["tools"]]
    vecs = np.asarray(embedder([embedding_text(tool_texts(reg.get_tool(n))) for n in names]))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    requests = split_requests(query)
    req = np.asarray(embedder(requests))
    req /= np.linalg.norm(req, axis=1, keepdims=True)
    sims = req @ vecs.T  # requests x tools
    z = (sims - sims.mean(axis=1, keepdims=True)) / sims.std(axis=1, keepdims=True)
    second_hit = hits[1]["explain"]
    i = requests.index(second_hit["dense_request"])
    assert second_hit["dense_z"] == pytest.approx(z[i, names.index(second)], abs=2e-3)
    assert second_hit["dense_z"] == pytest.approx(z[:, names.index(second)].max(), abs=2e-3)


def test_a_request_the_embedder_does_not_cover_adds_nothing(tmp_path: Path,
                                                            embedder: WordLlamaEmbedder) -> None:
    """A query mostly in English with a Russian request: the dense side joins, but only the
    English requests get a z of their own."""
    reg = _registry(tmp_path)
    d = ToolDiscoveryTool(reg, semantic=SemanticOptions(embedder=embedder, cache=False))
    query = ("Please book a hotel room for three nights in the centre of Rome. "
             "Then find a good restaurant near the hotel for dinner tonight. "
             "Какая погода будет завтра в Риме?")
    requests = split_requests(query)
    assert len(requests) == 3 and not embedder.covers(requests[2])
    hits = d.discover(query, top_k=5, explain=True)
    assert _names(hits)[:2] == ["book_hotel", "find_restaurants"]
    used = {h["explain"].get("dense_request") for h in hits} - {None}
    assert used and used <= set(requests[:2])


def test_weight_zero_is_bm25f(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    off = ToolDiscoveryTool(reg, semantic=SemanticOptions(cache=False, weight=0.0))
    lexical = ToolDiscoveryTool(reg, semantic=False)
    for query, _ in QUERIES[:10]:
        assert _names(off.discover(query)) == _names(lexical.discover(query))


# -- the live index and the disk cache -----------------------------------------------------

def test_live_index_follows_the_registry(tmp_path: Path, embedder: WordLlamaEmbedder) -> None:
    counting = Counting(embedder)
    reg = _registry(tmp_path, [_tool(t["name"], t["description"], t["params"])
                               for t in DATA["tools"][:5]])
    reg.enable_tool_discovery(semantic=SemanticOptions(embedder=counting, cache=False))
    d = get_discoverer(reg)
    assert d is not None and d.semantic is not None
    assert len(counting.texts) == 5
    assert "play_music" not in _names(d.discover("put on some jazz"))
    assert len(counting.texts) == 6  # the query
    for t in DATA["tools"][5:8]:  # registered one by one: embedded together, when asked
        reg.register(_tool(t["name"], t["description"], t["params"]))
    assert len(counting.texts) == 6
    assert _names(d.discover("put on some jazz"))[0] == "play_music"
    assert len(counting.texts) == 10  # three tools and the query
    reg.unregister("play_music")
    assert "play_music" not in _names(d.discover("put on some jazz", top_k=10))
    reg.disable("request_taxi")
    assert "request_taxi" not in _names(d.discover("book a ride", top_k=10))
    reg.enable("request_taxi")
    assert _names(d.discover("I need a cab home"))[0] == "request_taxi"
    assert len(d.semantic.index) == len(d.index) == 7
    # A changed description is embedded again; the others are not.
    before = len(counting.texts)
    reg.update_tool_metadata("request_taxi", search_hint="cab ride lift")
    d.discover("cab")
    assert counting.texts[before:] == [counting.texts[before], "cab"]
    assert "cab ride lift" in counting.texts[before]
    reg.disable_tool_discovery()
    assert get_discoverer(reg) is None


def test_disk_cache_spares_a_restart_the_embedding(tmp_path: Path,
                                                   embedder: WordLlamaEmbedder) -> None:
    cache = tmp_path / "vectors.sqlite3"
    reg = _registry(tmp_path)
    first = Counting(embedder)
    a = ToolDiscoveryTool(reg, semantic=SemanticOptions(embedder=first, cache=cache))
    assert len(first.texts) == len(DATA["tools"])
    expected = [a.discover(q, top_k=3) for q, _ in QUERIES]
    a.close()
    second = Counting(embedder)
    b = ToolDiscoveryTool(reg, semantic=SemanticOptions(embedder=second, cache=cache))
    assert b.semantic is not None
    assert b.semantic.stats == {"embedded": 0, "from_cache": len(DATA["tools"])}
    got = [b.discover(q, top_k=3) for q, _ in QUERIES]
    assert [_names(r) for r in got] == [_names(r) for r in expected]
    for mine, theirs in zip(got, expected):
        for x, y in zip(mine, theirs):
            assert x["score"] == pytest.approx(y["score"], abs=2e-3)  # float16 on disk
    # Only queries are embedded now; a new tool is embedded once, then cached too.
    assert all(t in [q for q, _ in QUERIES] for t in second.texts)
    reg.register(_tool("water_plants", "Water the plants in the garden.", {"zone": "Zone"}))
    b.refresh(["water_plants"])
    b.discover("water the garden")
    assert b.semantic.stats["embedded"] == 1
    b.close()


def test_embedder_without_model_id_is_not_cached(tmp_path: Path,
                                                 embedder: WordLlamaEmbedder) -> None:
    cache = tmp_path / "vectors.sqlite3"
    d = ToolDiscoveryTool(_registry(tmp_path),
                          semantic=SemanticOptions(embedder=lambda texts: embedder(texts),
                                                   cache=cache))
    assert d.semantic is not None and d.semantic.cache is None
    assert not cache.exists()


def test_unusable_cache_is_logged_and_discovery_goes_on(tmp_path: Path,
                                                        embedder: WordLlamaEmbedder) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        d = ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(
            embedder=embedder, cache=blocked / "vectors.sqlite3"))
    assert any(e["event"] == "discovery.embedding_cache_unavailable" for e in logs), logs
    assert _names(d.discover("is my plane late"))[0] == "check_flight_status"


# -- embedders by import path, configuration, bad input ------------------------------------

@pytest.fixture
def embedder_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "my_embedders.py").write_text(textwrap.dedent("""
        from toolregistry_discovery import WordLlamaEmbedder

        class Shared:
            model_id = "my-shared-model"

            def __init__(self):
                self.inner = WordLlamaEmbedder()

            def __call__(self, texts):
                return self.inner(texts)

        _model = None

        def embed(texts):
            global _model
            _model = _model or WordLlamaEmbedder()
            return [list(map(float, v)) for v in _model(texts)]

        def wrong_shape(texts):
            return [[1.0, 2.0]]

        def not_numbers(texts):
            return [["a", "b"] for _ in texts]

        not_callable = 42
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_embedders"
    sys.modules.pop("my_embedders", None)


def test_configuration_turns_hybrid_on(tmp_path: Path, embedder_module: str) -> None:
    cache = tmp_path / "cfg-cache.sqlite3"
    reg = _registry(tmp_path, config=textwrap.dedent(f"""
        [tool.toolregistry]
        tool-discovery = true

        [tool.toolregistry.plugins.discovery]
        semantic = true
        embedder = "{embedder_module}:embed"
        embedding-cache = "{cache}"
        semantic-weight = 1.5
    """))
    reg.enable_tool_discovery()  # re-reads the table now that the tools are registered
    d = get_discoverer(reg)
    assert d is not None and d.semantic is not None
    assert d.semantic.options.weight == 1.5
    assert d.semantic.model_id == f"{embedder_module}:embed"  # the import path names it
    assert cache.exists()
    [result] = reg.execute_tool_calls([{"id": "1", "type": "function", "function": {
        "name": "discover_tools", "arguments": json.dumps({"query": "is my plane late"})}}])
    found = json.loads(str(result.content))
    assert found[0]["name"] == "check_flight_status"
    # Code wins over the file: semantic=False keeps BM25F alone.
    reg.enable_tool_discovery(semantic=False)
    d = get_discoverer(reg)
    assert d is not None and d.semantic is None
    # Closing the registry closes the embedding cache of a hybrid discoverer.
    reg.enable_tool_discovery(semantic=True)
    d = get_discoverer(reg)
    assert d is not None and d.semantic is not None and d.semantic.cache is not None
    reg.close()
    assert d.semantic.cache._db is None


def test_class_by_import_path_is_instantiated(tmp_path: Path, embedder_module: str) -> None:
    d = ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(
        embedder=f"{embedder_module}:Shared", cache=False))
    assert d.semantic is not None and d.semantic.model_id == "my-shared-model"
    assert _names(d.discover("put on some jazz"))[0] == "play_music"


@pytest.mark.parametrize(("table", "match"), [
    ('semantic-weight = -1', "semantic-weight"),
    ('embedder = "not an import path"', "embedder"),
    ('semantic = "yes please"', "semantic"),
    ('embedding-cache = 3', "embedding-cache"),
])
def test_bad_configuration_names_the_option(tmp_path: Path, table: str, match: str) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(f"[tool.toolregistry.plugins.discovery]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        ToolRegistry(config=str(cfg))


@pytest.mark.parametrize(("target", "error", "match"), [
    ("no_such_module_xyz:embed", Exception, "no_such_module_xyz"),
    ("{mod}:not_callable", TypeError, "not callable"),
])
def test_bad_embedder_path(tmp_path: Path, embedder_module: str, target: str,
                           error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(
            embedder=target.format(mod=embedder_module), cache=False))


@pytest.mark.parametrize(("target", "match"), [
    ("wrong_shape", r"one vector per text \(24 texts\): got an array of shape \(1, 2\)"),
    ("not_numbers", "not numbers"),
])
def test_embedder_returning_garbage_is_named(tmp_path: Path, embedder_module: str,
                                            target: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ToolDiscoveryTool(_registry(tmp_path), semantic=SemanticOptions(
            embedder=f"{embedder_module}:{target}", cache=False))


def test_options_checked() -> None:
    with pytest.raises(ValueError, match="weight"):
        SemanticOptions(weight=-0.5)
    with pytest.raises(ValueError, match="weight"):
        SemanticOptions(weight=float("nan"))
    with pytest.raises(TypeError, match="embedder"):
        SemanticOptions(embedder=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cache"):
        SemanticOptions(cache=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="semantic must be"):
        ToolDiscoveryTool(ToolRegistry(), semantic="yes")  # type: ignore[arg-type]


# -- the dense index -----------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "remove"]), st.integers(0, 12),
                          st.integers(0, 1000)), max_size=80))
def test_dense_index_matches_a_dict(ops: list[tuple[str, int, int]]) -> None:
    index = DenseIndex()
    ref: dict[str, Any] = {}
    for op, i, seed in ops:
        key = f"k{i}"
        if op == "set":
            vec = np.random.default_rng(seed).standard_normal((1, 4)).astype(np.float32)
            index.set([key], vec)
            ref[key] = vec[0]
        else:
            index.remove(key)
            ref.pop(key, None)
    assert len(index) == len(ref)
    q = np.ones(4, dtype=np.float32)
    sims = index.similarities(q)
    got = {index.key_of(row): float(s) for row, s in enumerate(sims)}
    assert got == pytest.approx({k: float(v @ q) for k, v in ref.items()}, abs=1e-5)
