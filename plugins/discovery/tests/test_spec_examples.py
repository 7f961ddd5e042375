"""Every code example of spec/tool-discovery.zh.txt, verbatim, with the functions it leaves
undefined (``compress_file``, the email tools, ``new_tool``'s registry) defined here."""

from __future__ import annotations

import pytest

from toolregistry import ToolRegistry


def compress_file(path: str, archive: str = "out.zip") -> str:
    """Compress a file into a zip archive.

    Args:
        path: The file to compress.
        archive: Where to write the zip archive.
    """
    return archive


def test_quick_start() -> None:
    from toolregistry import ToolRegistry

    registry = ToolRegistry()

    @registry.register
    def add(a: float, b: float) -> float:
        """Add two numbers together."""
        return a + b

    @registry.register
    def read_file(path: str) -> str:
        """Read the contents of a file from the filesystem."""
        return open(path).read()

    # 启用工具发现 — 注册 "discover_tools" 为可调用工具
    registry.enable_tool_discovery()

    # LLM 在 get_schemas() 中可以看到 discover_tools 并调用它来发现工具
    schemas = registry.get_schemas(include_deferred=False)

    names = [s["function"]["name"] for s in schemas]
    assert names == ["add", "read_file", "discover_tools"]


def test_enable_at_construction() -> None:
    registry = ToolRegistry(tool_discovery=True)
    assert "discover_tools" in registry


def _spec_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register
    def add(a: float, b: float) -> float:
        """Add two numbers together."""
        return a + b

    @registry.register
    def read_file(path: str) -> str:
        """Read the contents of a file from the filesystem."""
        return open(path).read()

    @registry.register
    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email message to a recipient."""
        return "sent"

    @registry.register
    def list_emails(folder: str = "inbox") -> list[str]:
        """List the emails in a mailbox folder."""
        return []

    return registry


def test_standalone(capsys: pytest.CaptureFixture[str]) -> None:
    from toolregistry import ToolRegistry
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = ToolRegistry()
    # ... 注册工具 ...
    registry = _spec_registry()

    discoverer = ToolDiscoveryTool(registry)

    # 精确匹配 — 返回完整 schema
    results = discoverer.discover("read_file")
    print(results[0]["schema"])  # 完整工具定义

    # 模糊搜索 — BM25 排序
    results = discoverer.discover("read text file")
    print(results[0]["name"])   # "read_file"
    print(results[0]["score"])  # 1.23 (BM25 分数)

    out = capsys.readouterr().out.splitlines()
    assert "'name': 'read_file'" in out[0]
    assert out[1] == "read_file"
    assert float(out[2]) > 0


def test_result_keys_example(capsys: pytest.CaptureFixture[str]) -> None:
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = _spec_registry()
    discoverer = ToolDiscoveryTool(registry)

    results = discoverer.discover("email", top_k=3)
    for r in results:
        print(f"{r['name']}: {r['score']:.2f} — {r['description']}")
        if r.get("schema"):
            print(f"  Schema: {r['schema']}")

    out = capsys.readouterr().out
    assert {r["name"] for r in results} == {"send_email", "list_emails"}
    assert "Schema" not in out  # neither tool is deferred
    for r in results:
        assert set(r) == {"name", "description", "score", "namespace", "deferred"}


def test_progressive_disclosure() -> None:
    from toolregistry import Tool, ToolMetadata, ToolTag

    registry = ToolRegistry(tool_discovery=True)

    # 核心工具 — 始终可见
    @registry.register
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    # 延迟工具 — 按需发现
    registry.register(
        Tool.from_function(
            compress_file,
            metadata=ToolMetadata(
                defer=True,
                tags={ToolTag.FILE_SYSTEM},
            ),
        )
    )

    # 1. 非延迟工具的 schema 用于 LLM tools 参数
    schemas = registry.get_schemas(include_deferred=False)

    # 2. 延迟工具摘要用于 system prompt
    summaries = registry.get_deferred_summaries()
    # [{"name": "compress_file", "description": "Compress a file into a zip archive.", "namespace": None}]

    assert summaries == [
        {"name": "compress_file", "description": "Compress a file into a zip archive.",
         "namespace": None}
    ]
    assert [s["function"]["name"] for s in schemas] == ["discover_tools", "add"]

    summaries = registry.get_deferred_summaries()
    for s in summaries:
        print(f"- {s['name']}: {s['description']}")

    # The deferred tool is found through discover_tools, schema included.
    from toolregistry_discovery._plugin import get_discoverer

    discoverer = get_discoverer(registry)
    assert discoverer is not None
    hits = discoverer.discover("zip archive")
    assert hits[0]["name"] == "compress_file"
    assert hits[0]["deferred"] is True
    assert hits[0]["schema"]["function"]["name"] == "compress_file"


def test_search_hint() -> None:
    from toolregistry import Tool, ToolMetadata
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = ToolRegistry()

    def read_file(path: str) -> str:
        """Read the contents of a file from the filesystem."""
        return open(path).read()

    @registry.register
    def concatenate(a: str, b: str) -> str:
        """Join two strings."""
        return a + b

    registry.register(
        Tool.from_function(
            read_file,
            metadata=ToolMetadata(
                search_hint="open load text content cat",
            ),
        )
    )

    discoverer = ToolDiscoveryTool(registry)
    assert discoverer.discover("cat")[0]["name"] == "read_file"
    assert discoverer.discover("load text")[0]["name"] == "read_file"


def test_custom_field_weights() -> None:
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = _spec_registry()

    # 通过 enable_tool_discovery()
    registry.enable_tool_discovery(field_weights={
        "name": 5.0,          # 提高精确名称匹配权重
        "description": 1.0,
        "tags": 3.0,          # 提高基于标签的发现权重
        "params": 0.5,
        "search_hint": 2.0,
    })

    # 或通过独立的 ToolDiscoveryTool
    discoverer = ToolDiscoveryTool(
        registry,
        field_weights={
            "name": 5.0,
            "description": 1.0,
            "tags": 3.0,
            "params": 0.5,
            "search_hint": 2.0,
        },
    )

    assert discoverer.field_weights["name"] == 5.0
    assert discoverer.field_weights["params"] == 0.5
    from toolregistry_discovery._plugin import get_discoverer

    live = get_discoverer(registry)
    assert live is not None and live.field_weights["tags"] == 3.0


def test_rebuild_index() -> None:
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = _spec_registry()
    discoverer = ToolDiscoveryTool(registry)

    @registry.register
    def new_tool(x: int) -> int:
        """A newly added tool."""
        return x * 2

    discoverer.rebuild_index()

    results = discoverer.discover("newly added")
    assert results[0]["name"] == "new_tool"


def test_overview_chinese_query() -> None:
    from toolregistry import Tool, ToolMetadata
    from toolregistry.tool_discovery import ToolDiscoveryTool

    registry = _spec_registry()
    registry.register(Tool.from_function(
        compress_file, metadata=ToolMetadata(defer=True, search_hint="压缩文件 打包 zip")))
    discoverer = ToolDiscoveryTool(registry)
    exact = discoverer.discover("compress_file")
    assert exact[0]["score"] == 1.0 and "schema" in exact[0]
    fuzzy = discoverer.discover("压缩文件")
    assert fuzzy[0]["name"] == "compress_file"
    assert {"name", "description", "score"} <= set(fuzzy[0])
