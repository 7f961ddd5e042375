"""ToolDiscoveryTool and the discover_tools tool: semantics, languages, registry integration."""

from __future__ import annotations

import gc
import json
import time
from typing import Any

import pytest

from toolregistry import Tool, ToolMetadata, ToolRegistry, ToolTag
from toolregistry.tool import Provenance
from toolregistry_discovery import DEFAULT_FIELD_WEIGHTS, ToolDiscoveryTool
from toolregistry_discovery._fields import tool_texts
from toolregistry_discovery._plugin import DISCOVER_TOOLS_DESCRIPTION, get_discoverer


def _tool(name: str, description: str, *, params: dict[str, Any] | None = None,
          **meta: Any) -> Tool:
    return Tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": params or {}},
        callable=lambda **kw: f"{name} ran",
        metadata=ToolMetadata(**meta),
    )


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(_tool("read_file", "Read the contents of a file from the filesystem.",
                       params={"path": {"type": "string", "description": "File path."}}))
    reg.register(_tool("write_file", "Write text to a file, replacing its contents.",
                       params={"path": {"type": "string"}, "text": {"type": "string"}}))
    reg.register(_tool("get_weather", "Current weather conditions for a city.",
                       params={"city": {"type": "string"}}))
    reg.register(_tool("compress_file", "Compress a file into a zip archive.", defer=True,
                       search_hint="压缩文件 打包", tags={ToolTag.FILE_SYSTEM}))
    reg.register(_tool("translate_text", "Translate text between languages.",
                       params={"source_language": {"type": "string"},
                               "target_language": {"type": "string"}}))
    reg.register(_tool("sendEmailMessage", "Deliver a message to a mailbox.", defer=True,
                       custom_tags={"mail"}))
    return reg


# -- exact and fuzzy semantics ------------------------------------------------------------

def test_exact_match_is_alone_with_full_schema(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    for name in ("read_file", "compress_file"):
        results = d.discover(name, top_k=5)
        assert len(results) == 1
        r = results[0]
        assert r["name"] == name and r["score"] == 1.0
        assert r["schema"] == registry.get_tool_schema(name)
        assert r["deferred"] is (name == "compress_file")


def test_exact_match_forgives_respelling(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    assert d.discover("  READ_FILE ")[0]["score"] == 1.0
    assert d.discover("read-file")[0]["name"] == "read_file"


def test_fuzzy_schema_only_for_deferred(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    results = d.discover("file", top_k=10)
    by_name = {r["name"]: r for r in results}
    assert {"read_file", "write_file", "compress_file"} <= set(by_name)
    assert "schema" not in by_name["read_file"]
    assert by_name["compress_file"]["schema"]["function"]["name"] == "compress_file"
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_schema_in_requested_format(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    r = d.discover("zip archive", api_format="anthropic")[0]
    assert r["name"] == "compress_file"
    assert r["schema"]["name"] == "compress_file" and "input_schema" in r["schema"]


def test_top_k_and_bad_arguments(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    assert len(d.discover("file", top_k=2)) == 2
    with pytest.raises(ValueError, match="top_k"):
        d.discover("file", top_k=0)
    with pytest.raises(TypeError, match="string"):
        d.discover(None)  # type: ignore[arg-type]


def test_no_match_is_empty(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry, semantic=False)  # the dense side finds the nearest tools
    assert d.discover("quantum chromodynamics") == []
    assert d.discover("") == []


# -- text analysis ------------------------------------------------------------------------

def test_stemming(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    assert d.discover("reading files")[0]["name"] == "read_file"
    assert d.discover("compressing archives")[0]["name"] == "compress_file"
    assert d.discover("translation of texts")[0]["name"] == "translate_text"


def test_camel_case_and_separators(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    assert d.discover("send email")[0]["name"] == "sendEmailMessage"
    assert d.discover("target language")[0]["name"] == "translate_text"  # parameter names


def test_filler_words_never_match_alone(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    assert d.discover("please help me with a tool") == []
    assert d.discover("the of and to") == []
    assert d.discover("帮我 一个 工具") == []
    # ...but they do not get in the way of a real query
    assert d.discover("please find me a tool for the weather")[0]["name"] == "get_weather"


def test_cjk_queries(registry: ToolRegistry) -> None:
    registry.register(_tool("ocr_image", "画像から文字を認識します。", defer=True))
    registry.register(_tool("kr_search", "웹 검색 결과를 가져옵니다", defer=True))
    registry.register(_tool("file_lister", "列出目录中的文件"))
    d = ToolDiscoveryTool(registry)
    assert d.discover("压缩文件")[0]["name"] == "compress_file"
    assert d.discover("帮我压缩文件")[0]["name"] == "compress_file"
    assert d.discover("文字を認識")[0]["name"] == "ocr_image"
    assert d.discover("웹 검색")[0]["name"] == "kr_search"
    assert d.discover("列出目录")[0]["name"] == "file_lister"
    # NFKC: full-width Latin letters are ordinary letters
    assert d.discover("ｗｅａｔｈｅｒ")[0]["name"] == "get_weather"


def test_param_descriptions_indexed() -> None:
    reg = ToolRegistry()
    reg.register(_tool("lookup", "Look something up.",
                       params={"q": {"type": "string", "description": "An ISBN barcode."}}))
    reg.register(_tool("other", "Unrelated."))
    assert ToolDiscoveryTool(reg).discover("isbn")[0]["name"] == "lookup"
    no_desc = ToolDiscoveryTool(reg, field_weights={"param_descriptions": 0}, semantic=False)
    assert no_desc.discover("isbn") == []


# -- field weights and explain ------------------------------------------------------------

def test_field_weights_change_ranking() -> None:
    reg = ToolRegistry()
    reg.register(_tool("cloud_storage", "Upload a photo to the cloud."))
    reg.register(_tool("photo_album", "Store a picture."))
    by_desc = ToolDiscoveryTool(reg, field_weights={"name": 0.1, "description": 5.0})
    by_name = ToolDiscoveryTool(reg, field_weights={"name": 10.0, "description": 0.1})
    assert by_desc.discover("photo")[0]["name"] == "cloud_storage"
    assert by_name.discover("photo")[0]["name"] == "photo_album"


def test_field_weights_are_checked() -> None:
    reg = ToolRegistry()
    with pytest.raises(ValueError, match="unknown discovery field"):
        ToolDiscoveryTool(reg, field_weights={"nmae": 1.0})
    with pytest.raises(ValueError, match=">= 0"):
        ToolDiscoveryTool(reg, field_weights={"name": -1.0})
    assert set(DEFAULT_FIELD_WEIGHTS) == {
        "name", "description", "search_hint", "tags", "params", "param_descriptions"}


def test_explain(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry, semantic=False)  # BM25F's own detail
    r = d.discover("read file path", explain=True)[0]
    assert r["name"] == "read_file"
    ex = r["explain"]
    assert set(ex["fields"]) >= {"name", "description", "params"}
    assert sum(ex["fields"].values()) == pytest.approx(r["score"], rel=1e-3)
    assert sum(ex["terms"].values()) == pytest.approx(r["score"], rel=1e-3)
    assert d.discover("read_file", explain=True)[0]["explain"] == {"exact_match": True}


# -- deferred and disabled ----------------------------------------------------------------

def test_disabled_tools_never_returned(registry: ToolRegistry) -> None:
    d = ToolDiscoveryTool(registry)
    registry.disable("read_file", reason="maintenance")
    # standalone index is stale, but results are checked against the live registry
    assert "read_file" not in [r["name"] for r in d.discover("read file", top_k=10)]
    assert "read_file" not in [r["name"] for r in d.discover("read_file")]
    d.rebuild_index()
    assert "read_file" not in d.index


def test_deferred_hidden_from_schemas_but_discoverable(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    visible = {s["function"]["name"] for s in registry.get_schemas(include_deferred=False)}
    assert "compress_file" not in visible and "discover_tools" in visible
    d = get_discoverer(registry)
    assert d is not None
    assert d.discover("zip")[0]["name"] == "compress_file"


# -- registry integration -----------------------------------------------------------------

def _call(registry: ToolRegistry, arguments: dict[str, Any]) -> Any:
    [result] = registry.execute_tool_calls([{
        "id": "call_1",
        "type": "function",
        "function": {"name": "discover_tools", "arguments": json.dumps(arguments)},
    }])
    assert not result.is_error, result.content
    return json.loads(str(result.content))


def test_discover_tools_through_execute_tool_calls(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    found = _call(registry, {"query": "compress a file into an archive", "top_k": 3})
    assert found[0]["name"] == "compress_file"
    assert found[0]["schema"]["type"] == "function"
    exact = _call(registry, {"query": "read_file"})
    assert exact[0]["score"] == 1.0 and exact[0]["schema"]["function"]["name"] == "read_file"
    # the discovered deferred tool can be called right away
    [res] = registry.execute_tool_calls([{
        "id": "call_2", "type": "function",
        "function": {"name": "compress_file", "arguments": "{}"}}])
    assert res.content == "compress_file ran"


def test_discover_tools_answers_in_callers_format(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    [result] = registry.execute_tool_calls([{
        "type": "tool_use", "id": "toolu_1", "name": "discover_tools",
        "input": {"query": "zip archive"}}])
    found = json.loads(str(result.content))
    assert found[0]["schema"]["name"] == "compress_file"
    assert "input_schema" in found[0]["schema"]


def test_discover_tools_validates_arguments(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    [result] = registry.execute_tool_calls([{
        "id": "c", "type": "function",
        "function": {"name": "discover_tools", "arguments": json.dumps({"top_k": 3})}}])
    assert result.is_error and result.error_kind == "invalid_arguments"


def test_enable_disable_tool_discovery(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    assert "discover_tools" in registry
    registry.disable_tool_discovery()
    assert "discover_tools" not in registry
    assert get_discoverer(registry) is None
    registry.enable_tool_discovery(field_weights={"name": 4.0})
    d = get_discoverer(registry)
    assert d is not None and d.field_weights["name"] == 4.0
    assert "discover_tools" not in d.index  # never indexes itself


def test_discover_tools_schema_constant_with_many_deferred() -> None:
    reg = ToolRegistry(tool_discovery=True)
    before = json.dumps(reg.get_schemas(include_deferred=False))
    reg.register_tools([
        _tool(f"deferred_{i}", f"Deferred tool number {i} that does thing {i}.", defer=True)
        for i in range(1000)])
    after = reg.get_schemas(include_deferred=False)
    assert json.dumps(after) == before
    discover_schema = next(s for s in after if s["function"]["name"] == "discover_tools")
    assert discover_schema["function"]["description"] == DISCOVER_TOOLS_DESCRIPTION
    assert len(json.dumps(discover_schema)) < 1500
    assert len(reg.get_deferred_summaries()) == 1000


def test_index_follows_every_change(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery(semantic=False)  # exact BM25F results, "nothing" included
    d = get_discoverer(registry)
    assert d is not None

    def names(q: str) -> list[str]:
        return [r["name"] for r in d.discover(q, top_k=10)]

    registry.register(_tool("fetch_stock", "Fetch the latest stock price for a ticker."))
    assert names("stock price")[0] == "fetch_stock"
    registry.disable("fetch_stock")
    assert "fetch_stock" not in names("stock price")
    registry.enable("fetch_stock")
    assert names("stock price")[0] == "fetch_stock"
    registry.update_tool_metadata("fetch_stock", search_hint="equities nasdaq")
    assert names("nasdaq") == ["fetch_stock"]
    registry.update_tool(_tool("fetch_stock", "Look up share quotes."))
    assert names("share quotes")[0] == "fetch_stock"
    assert names("nasdaq") == []
    moved = registry.set_namespace("fetch_stock", "finance")
    assert moved.name == "finance-fetch_stock"
    assert names("share quotes")[0] == "finance-fetch_stock"
    assert "fetch_stock" not in d.index
    registry.disable("finance")
    assert names("share quotes") == []
    registry.enable("finance")
    assert names("finance")[0] == "finance-fetch_stock"
    registry.unregister("finance-fetch_stock")
    assert names("share quotes") == []
    registry.register(_tool("replaceable", "Old words."))
    registry.register(_tool("replaceable", "New words."), replace=True)
    assert names("old") == [] and names("new") == ["replaceable"]
    registry.unregister_namespace("finance")
    assert len(d.index) == len(registry.list_tools()) - 1  # all but discover_tools


def test_incremental_registration_is_linear() -> None:
    """Registering N tools one by one indexes each tool once: O(N) in total, no rebuilds."""
    reg = ToolRegistry(tool_discovery=True)
    d = get_discoverer(reg)
    assert d is not None
    calls = {"add": 0, "rebuild": 0}
    index_add_texts = d.index.add_texts
    rebuild = d.rebuild_index

    def counting_add(docs: Any) -> None:
        docs = list(docs)
        calls["add"] += len(docs)
        index_add_texts(docs)

    def counting_rebuild() -> None:
        calls["rebuild"] += 1
        rebuild()

    d.index.add_texts = counting_add  # type: ignore[method-assign]
    d.rebuild_index = counting_rebuild  # type: ignore[method-assign]
    n = 3000
    start = time.perf_counter()
    for i in range(n):
        reg.register(_tool(f"tool_{i}", f"Tool {i} handles task {i % 97} for topic {i % 13}."))
    elapsed = time.perf_counter() - start
    assert calls == {"add": n, "rebuild": 0}
    assert len(d.index) == n
    assert elapsed < 10  # a generous bound; quadratic behaviour would take far longer
    assert d.discover("task 42 topic")[0]["name"].startswith("tool_")


# -- suggestions --------------------------------------------------------------------------

def test_unknown_tool_suggestions(registry: ToolRegistry) -> None:
    [result] = registry.execute_tool_calls([{
        "id": "c", "type": "function", "function": {"name": "raed_file", "arguments": "{}"}}])
    assert result.error_kind == "unknown_tool"
    assert "read_file" in result.content
    assert registry.suggest_names("Read-File", 3)[0] == "read_file"
    assert registry.suggest_names("weather_for_city", 3)[0] == "get_weather"
    assert len(registry.suggest_names("file", 2)) <= 2
    registry.disable("write_file")
    assert "write_file" not in registry.suggest_names("write_fiel", 3)


def test_suggestions_use_live_index_when_enabled(registry: ToolRegistry) -> None:
    registry.enable_tool_discovery()
    registry.register(_tool("convert_currency", "Convert money between currencies."))
    assert registry.suggest_names("money_converter", 3)[0] == "convert_currency"
    assert "discover_tools" not in registry.suggest_names("discover_tool", 3)


# -- lifetime and concurrency -------------------------------------------------------------

def test_registry_with_discovery_is_garbage_collected() -> None:
    import gc
    import weakref

    reg = ToolRegistry(tool_discovery=True)
    reg.register(_tool("a_tool", "Does a thing."))
    ref = weakref.ref(reg)
    del reg
    gc.collect()
    assert ref() is None  # per-registry state does not keep the registry alive


def test_search_while_registering_from_another_thread() -> None:
    import threading

    reg = ToolRegistry(tool_discovery=True)
    d = get_discoverer(reg)
    assert d is not None
    errors: list[BaseException] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(400):
                reg.register(_tool(f"t{i}", f"Task {i} about topic {i % 7}."))
                if i % 3 == 0:
                    reg.unregister(f"t{i}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    while not done.is_set():
        try:
            d.discover("topic task", top_k=3)
        except BaseException as exc:
            errors.append(exc)
            break
    thread.join()
    assert not errors
    assert len(d.index) == len([n for n in reg.list_tools() if n != "discover_tools"])


def test_enable_refuses_to_replace_a_users_discover_tools() -> None:
    from toolregistry.errors import ToolNameCollisionError

    reg = ToolRegistry()
    reg.register(_tool("discover_tools", "My own thing."))
    with pytest.raises(ToolNameCollisionError, match="discover_tools"):
        reg.enable_tool_discovery()
    assert reg["discover_tools"].description == "My own thing."
    reg.disable_tool_discovery()  # leaves a tool it did not register alone
    assert "discover_tools" in reg


def test_single_word_queries_stay_fast() -> None:
    reg = ToolRegistry()
    reg.register_tools([_tool(f"tool_{i}", f"Does task {i}.") for i in range(5000)])
    d = ToolDiscoveryTool(reg)
    d.discover("warmup")
    start = time.perf_counter()
    for _ in range(50):
        d.discover("task")
    assert (time.perf_counter() - start) / 50 < 0.02  # no per-query scan of every name
    assert d.discover("TOOL_42")[0]["name"] == "tool_42"


# -- bulk builds ---------------------------------------------------------------------------

def _bulk_tools(n: int) -> list[Tool]:
    words = ["invoice", "weather", "ticket", "report", "route", "metric", "image", "order"]
    return [Tool(name=f"tool_{i}_{words[i % 8]}",
                 description=f"{words[i % 8].capitalize()} lookup number {i} for {words[i % 5]}.",
                 parameters={"type": "object", "properties": {
                     words[(i + 1) % 8]: {"type": "string", "description": f"The {words[i % 3]}."},
                     "limit": {"type": "integer"}}},
                 callable=lambda **kw: None,
                 provenance=Provenance("manual", None, f"tools.{words[i % 8]}"
                                       if i % 2 else f"Tool{i}{words[i % 7].capitalize()}"))
            for i in range(n)]


def test_a_bulk_build_leaves_the_collector_as_the_application_set_it() -> None:
    """A rebuild of many tools never switches the host's cyclic collector off (nor on when
    the application switched it off)."""
    reg = ToolRegistry()
    reg.register_tools(_bulk_tools(512))
    d = ToolDiscoveryTool(reg)
    seen: list[bool] = []
    real_add = d.index.add_texts

    def add_texts(docs: Any) -> None:
        seen.append(gc.isenabled())
        real_add(docs)

    d.index.add_texts = add_texts  # type: ignore[method-assign]
    d.rebuild_index()
    assert seen == [True] and gc.isenabled()
    assert len(d.index) == 512
    gc.disable()
    try:
        d.rebuild_index()
        assert seen == [True, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_source_names_that_only_respell_the_name_are_not_indexed_twice() -> None:
    def names_field(name: str, original: str) -> object:
        tool = Tool(name=name, description="d", parameters={"type": "object"},
                    callable=lambda: None, provenance=Provenance("manual", None, original))
        return tool_texts(tool)[0]

    assert names_field("files_read_r1", "files.read") == "files_read_r1"
    assert names_field("read", "Files-READ") == ("read", "Files-READ")  # new words
    # camelCase adds the compound term "getweather", which "get_weather" does not have
    assert names_field("get_weather", "getWeather") == ("get_weather", "getWeather")
    assert names_field("get_weather", "get_Weather") == "get_weather"  # the same terms
    assert names_field("天气_r1", "天气") == "天气_r1"  # not ASCII: the terms decide
    assert names_field("天气", "天气预报") == ("天气", "天气预报")


def test_incremental_updates_rank_like_a_fresh_build() -> None:
    """Registering one by one, unregistering, re-registering changed tools and disabling
    leave an index whose every ranking and score is a fresh build's."""
    tools = _bulk_tools(600)
    live = ToolRegistry(tool_discovery=True)
    for tool in tools:
        live.register(tool)
    for tool in tools[::3]:
        live.unregister(tool.name)
    for tool in tools[::9]:  # back, with other words
        live.register(tool.evolve(description=f"Renamed {tool.description} archive"))
    live.register(tools[1].evolve(description="Archive every invoice."), replace=True)
    live.disable(tools[2].name)
    d = get_discoverer(live)
    assert d is not None
    fresh = ToolDiscoveryTool(live)
    assert sorted(d.index.keys()) == sorted(fresh.index.keys())
    queries = ["invoice lookup", "weather report", "archive", "route metric 17", "image order",
               "ticket for the weather", "renamed tool", "limit"]
    for q in queries:
        got = {h.key: h.score for h in d.index.search(q, 1000)}
        want = {h.key: h.score for h in fresh.index.search(q, 1000)}
        assert got == pytest.approx(want), q
        assert got, q
        # The same order but among equal scores, which keep each index's insertion order.
        assert sorted(got, key=lambda k: (-round(got[k], 9), k)) == sorted(
            want, key=lambda k: (-round(want[k], 9), k)), q


# -- cost of turning discovery on ---------------------------------------------------------
_LAZY_INDEX = """
import json, sys
from toolregistry import ToolRegistry

def read_file(path: str) -> str:
    '''Read a text file from disk.'''
    return path

registry = ToolRegistry(tool_discovery=True, load_plugins=["discovery"])
registry.register(read_file)
schemas = registry.get_schemas()
before = "numpy" in sys.modules
found = registry.invoke("discover_tools", {"query": "read a file"})
print(json.dumps({"before": before, "after": "numpy" in sys.modules,
                  "schemas": len(schemas), "found": found.text}))
"""


def test_discovery_builds_its_index_on_first_search(tmp_path: Any) -> None:
    """Turning discovery on (e.g. to list schemas) builds no index: numpy loads with the
    first search, which finds the tools registered meanwhile."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _LAZY_INDEX], capture_output=True, text=True,
                          timeout=60, check=True, cwd=tmp_path)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["before"] is False and out["after"] is True, out
    assert out["schemas"] == 2 and "read_file" in out["found"], out


def test_the_first_searches_from_several_threads_build_one_index() -> None:
    import threading

    class Slow(ToolDiscoveryTool):
        builds = 0

        def rebuild_index(self) -> None:
            Slow.builds += 1
            time.sleep(0.05)  # a build long enough for every thread to ask meanwhile
            super().rebuild_index()

    registry = ToolRegistry()
    for i in range(300):
        registry.register(_tool(f"tool_{i}", f"Tool {i} handles task {i % 17} for topic {i % 5}."))
    d = Slow(registry)
    barrier = threading.Barrier(8)
    results: list[list[str]] = []

    def search() -> None:
        barrier.wait()
        results.append([hit["name"] for hit in d.discover("task 3 topic 4", top_k=5)])

    threads = [threading.Thread(target=search) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert Slow.builds == 1
    assert len(results) == 8 and all(r == results[0] for r in results), results
    assert len(results[0]) == 5 and len(d.index) == 300
