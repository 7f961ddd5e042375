"""The spool plugin end to end: opt-in, preview, reader, files, retention, paths, threads."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolregistry_spool as ts
from toolregistry import Image, Tool, ToolMetadata, ToolRegistry, ToolResult, hookimpl
from toolregistry.tool import Provenance
from toolregistry_spool._store import HANDLE_PATTERN

MakeRegistry = Callable[..., ToolRegistry]

SPOOL = ToolMetadata(too_long_to_file=True)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def lines(n: int, width: int = 40) -> str:
    return "".join(f"line {i:07d} {'x' * width}\n" for i in range(n))


def call(name: str, args: str, call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def register_big(registry: ToolRegistry, text: str, name: str = "big",
                 metadata: ToolMetadata = SPOOL) -> None:
    def big() -> str:
        """Return a long text."""
        return text

    registry.register(big, name=name, metadata=metadata)


def read(registry: ToolRegistry, **args: Any) -> ToolResult:
    return registry.invoke("read_tool_output", args)


# -- opting in ----------------------------------------------------------------------------

def test_opted_in_tool_over_threshold_is_spooled(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    text = lines(2000)
    register_big(registry, text)
    result = registry.invoke("big", {}, call_id="abc")
    assert result.ok
    info = result.metadata["spool"]
    assert re.fullmatch(HANDLE_PATTERN, info["handle"])
    assert info["size"] == len(text.encode())
    assert info["tokens"] == ts.estimate_tokens(text)
    assert Path(info["path"]).read_text(encoding="utf-8") == text
    content = result.content
    assert isinstance(content, str)
    assert ts.estimate_tokens(content) <= 1000
    assert content.startswith("line 0000000 ")
    assert "line 0001999 " in content  # the tail is kept too
    notice = content.splitlines()[-1]
    assert info["handle"] in notice and "read_tool_output(handle=" in notice
    assert result.call_id == "abc" and result.name == "big" and result.value == text


def test_short_output_and_opted_out_tools_are_untouched(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, "short", name="small")
    register_big(registry, lines(2000), name="plain", metadata=ToolMetadata())
    register_big(registry, lines(2000), name="never", metadata=ToolMetadata(too_long_to_file=False))
    assert registry.invoke("small", {}).content == "short"
    for name in ("plain", "never"):
        result = registry.invoke(name, {})
        assert "spool" not in result.metadata and result.content == lines(2000)


def test_all_tools_configuration(make_registry: MakeRegistry) -> None:
    registry = make_registry(all_tools=True)
    register_big(registry, lines(2000), name="plain", metadata=ToolMetadata())
    register_big(registry, lines(2000), name="never", metadata=ToolMetadata(too_long_to_file=False))
    assert "spool" in registry.invoke("plain", {}).metadata
    assert "spool" not in registry.invoke("never", {}).metadata
    assert "read_tool_output" in registry


def test_only_tools_that_may_spool_reach_the_plugin(make_registry: MakeRegistry) -> None:
    """The plugin declares (``call_hooks``) that its post_invoke concerns only tools that may
    spool: the compiled call plan of any other tool has no post_invoke at all."""
    for all_tools, concerned in ((False, {"big"}), (True, {"big", "plain"})):
        registry = make_registry(all_tools=all_tools)
        register_big(registry, lines(10), name="big")
        register_big(registry, lines(10), name="plain", metadata=ToolMetadata())
        register_big(registry, lines(10), name="never",
                     metadata=ToolMetadata(too_long_to_file=False))
        hooks = registry.plugins.hooks
        planned = {n for n in ("big", "plain", "never")
                   if hooks.for_tool(registry, registry[n]).post_invoke is not None}
        assert planned == concerned
        registry.update_tool_metadata("never", too_long_to_file=True)  # opting in later works
        result = registry.invoke("never", {})
        assert result.ok and result.content == lines(10)
        assert hooks.for_tool(registry, registry["never"]).post_invoke is not None


def test_threshold_configurable(make_registry: MakeRegistry) -> None:
    text = lines(2000)  # ~27,000 tokens
    registry = make_registry(threshold_tokens=30_000)
    register_big(registry, text)
    assert "spool" not in registry.invoke("big", {}).metadata
    ts.configure(registry, threshold_tokens=5000)
    result = registry.invoke("big", {})
    assert "spool" in result.metadata
    assert 4000 < ts.estimate_tokens(result.text) <= 5000


def test_default_threshold_is_20000(make_registry: MakeRegistry) -> None:
    with make_registry(threshold_tokens=None) as registry:
        assert ts.configure(registry).threshold_tokens == 20_000
        register_big(registry, "a" * 79_000, name="under")   # ~19,750 tokens
        register_big(registry, "a" * 81_000, name="over")    # ~20,250 tokens
        assert "spool" not in registry.invoke("under", {}).metadata
        result = registry.invoke("over", {})
        assert "spool" in result.metadata
        assert ts.estimate_tokens(result.text) <= 20_000


def test_bad_configuration_names_the_option(make_registry: MakeRegistry) -> None:
    from toolregistry.errors import ConfigError

    registry = make_registry()
    with pytest.raises(ConfigError, match="threshold_tokens"):
        ts.configure(registry, threshold_tokens=-5)
    with pytest.raises(ConfigError, match="token-counter"):
        ts.configure(registry, token_counter="no_such_module_xyz:count")


# -- token counting -----------------------------------------------------------------------

def test_cjk_estimate() -> None:
    assert ts.estimate_tokens("") == 0
    assert ts.estimate_tokens("a" * 4000) == 1000
    assert ts.estimate_tokens("中" * 1000) == 1000          # one token per CJK character
    assert ts.estimate_tokens("日本語のテキスト" * 100) == 800  # kana and kanji alike
    assert ts.estimate_tokens("한국어" * 100) == 300
    mixed = "abcd" * 500 + "中文" * 500                      # 500 + 1000
    assert ts.estimate_tokens(mixed) == 1500
    russian = ts.estimate_tokens("привет" * 100)              # 600 two-byte characters
    assert 300 <= russian <= 450
    assert ts.estimate_tokens("😀" * 100) == 150


def test_cjk_output_uses_cjk_estimate(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, "汉" * 1500, name="cjk")       # 1500 tokens: over 1000
    register_big(registry, "a" * 3000, name="ascii")      # 750 tokens: under
    result = registry.invoke("cjk", {})
    assert "spool" in result.metadata
    assert ts.estimate_tokens(result.text) <= 1000
    assert "spool" not in registry.invoke("ascii", {}).metadata


def test_exact_counter_plugged_in(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, "word " * 500)  # 625 estimated tokens: not spooled
    assert "spool" not in registry.invoke("big", {}).metadata
    ts.set_token_counter(registry, lambda text: len(text.split()) * 3)  # 1500 "tokens"
    result = registry.invoke("big", {})
    assert result.metadata["spool"]["tokens"] == 1500
    assert len(result.text.split()) * 3 <= 1000
    assert "~" not in result.text.splitlines()[-1]  # exact, not estimated
    ts.set_token_counter(registry, None)
    assert "spool" not in registry.invoke("big", {}).metadata


def test_a_short_text_is_spooled_once_the_counter_or_threshold_says_so(
        make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, "a" * 500)  # too short to be over 1000 tokens by any estimate
    assert "spool" not in registry.invoke("big", {}).metadata
    ts.set_token_counter(registry, lambda text: 5000)
    assert registry.invoke("big", {}).metadata["spool"]["tokens"] == 5000
    ts.set_token_counter(registry, None)
    assert "spool" not in registry.invoke("big", {}).metadata
    ts.configure(registry, threshold_tokens=100)
    assert "spool" in registry.invoke("big", {}).metadata


def test_counter_from_configuration(make_registry: MakeRegistry) -> None:
    registry = make_registry(token_counter="builtins:len")  # one "token" per character
    register_big(registry, "a" * 1500)
    result = registry.invoke("big", {})
    assert result.metadata["spool"]["tokens"] == 1500
    assert len(result.text) <= 1000


# -- results of every shape and source ------------------------------------------------------

def test_multimodal_keeps_images(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    text = lines(2000)

    @registry.register(metadata=SPOOL)
    def shot() -> list[Any]:
        """A screenshot and its long OCR text."""
        return [Image.from_bytes(PNG), text, Image.from_bytes(PNG, "image/png")]

    result = registry.invoke("shot", {})
    assert isinstance(result.content, list)
    kinds = [p["type"] for p in result.content]
    assert kinds == ["image", "text", "image"]
    assert len(result.images) == 2 and result.images[0].data == PNG
    assert "spool" in result.metadata
    assert Path(result.metadata["spool"]["path"]).read_text(encoding="utf-8") == text


def test_schema_first_tools_from_other_sources(make_registry: MakeRegistry) -> None:
    """What the MCP, OpenAPI and LangChain loaders register: schema-first tools with their
    provenance, returning text or a ready ToolResult, sync or async."""
    registry = make_registry()
    text = lines(2000)

    async def mcp_call(**kwargs: Any) -> ToolResult:
        return ToolResult(call_id=None, name="", content=[{"type": "text", "text": text}],
                          artifact={"structured": True})

    def openapi_call(**kwargs: Any) -> dict[str, Any]:
        return {"items": [text]}

    registry.register_tools([
        Tool(name="srv/list..files", parameters={"type": "object", "properties": {}},
             callable=mcp_call, metadata=SPOOL,
             provenance=Provenance("mcp", "stdio server", "list/files", plugin="mcp")),
        Tool(name="get_items", callable=openapi_call, metadata=SPOOL,
             provenance=Provenance("openapi", "GET /items", "getItems", plugin="openapi")),
    ])
    names = registry.list_tools()
    results = registry.execute_tool_calls([call(names[0], "{}", "a"), call("get_items", "{}", "b")])
    for result in results:
        assert result.ok and "spool" in result.metadata, result.content
    assert results[0].artifact == {"structured": True}
    assert results[1].value == {"items": [text]}


def test_error_results_are_spooled_too(make_registry: MakeRegistry) -> None:
    registry = make_registry()

    @registry.register(metadata=SPOOL)
    def failing() -> str:
        """Fails with a huge message."""
        raise RuntimeError(lines(2000))

    result = registry.invoke("failing", {})
    assert result.is_error and result.error_kind == "execution"
    assert "spool" in result.metadata and ts.estimate_tokens(result.text) <= 1000


# -- sync and async paths -----------------------------------------------------------------

def test_sync_and_async_paths(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    text = lines(2000)

    @registry.register(metadata=SPOOL)
    def sync_big() -> str:
        """Sync."""
        return text

    @registry.register(metadata=SPOOL)
    async def async_big() -> str:
        """Async."""
        await asyncio.sleep(0)
        return text

    results = [registry.invoke("sync_big", {}), registry.invoke("async_big", {})]
    results += registry.execute_tool_calls([call("sync_big", "{}", "1"),
                                            call("async_big", "{}", "2")])

    async def main() -> list[ToolResult]:
        out = [await registry.ainvoke("sync_big", {}), await registry.ainvoke("async_big", {})]
        out += await registry.aexecute_tool_calls([call("sync_big", "{}", "3"),
                                                   call("async_big", "{}", "4")])
        return out

    results += asyncio.run(main())
    handles = {r.metadata["spool"]["handle"] for r in results}
    assert len(handles) == 8
    for r in results:
        assert Path(r.metadata["spool"]["path"]).read_text(encoding="utf-8") == text


# -- the reader tool ----------------------------------------------------------------------

def test_reader_registered_with_first_opted_in_tool(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, "x", name="plain", metadata=ToolMetadata())
    assert "read_tool_output" not in registry
    register_big(registry, "x", name="long")
    assert "read_tool_output" in registry
    schema = registry.get_tool_schema("read_tool_output")
    props = schema["function"]["parameters"]["properties"]
    assert set(props) == {"handle", "offset", "limit", "tail", "grep"}
    assert ts.reader_name(registry) == "read_tool_output"


def test_reader_registered_on_metadata_change(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(2000), name="plain", metadata=ToolMetadata())
    assert "read_tool_output" not in registry
    registry.update_tool_metadata("plain", too_long_to_file=True)
    assert "read_tool_output" in registry


def test_reader_name_taken_and_renamed(make_registry: MakeRegistry) -> None:
    registry = make_registry()

    @registry.register
    def read_tool_output() -> str:
        """The application's own tool of that name."""
        return "mine"

    register_big(registry, lines(2000))
    assert ts.reader_name(registry) == "read_tool_output_spool"
    result = registry.invoke("big", {})
    assert "read_tool_output_spool(handle=" in result.text
    registry.rename("read_tool_output_spool", "page_output")
    assert ts.reader_name(registry) == "page_output"
    result = registry.invoke("big", {})
    assert "page_output(handle=" in result.text
    assert registry.invoke("read_tool_output", {}).content == "mine"


def test_reader_comes_back_if_unregistered(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    registry.unregister("read_tool_output")
    result = registry.invoke("big", {})
    assert "read_tool_output" in registry
    handle = result.metadata["spool"]["handle"]
    assert read(registry, handle=handle, limit=1).ok


def test_reader_pages_through_execute_tool_calls(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    text = lines(5000)
    register_big(registry, text)
    first = registry.execute_tool_calls([call("big", "{}")])[0]
    handle = first.metadata["spool"]["handle"]
    resume = int(re.search(r"offset=(\d+)", first.text.splitlines()[-1]).group(1))  # type: ignore[union-attr]
    assert f"line {resume:07d}" not in first.text.split("[...")[0]  # resumes after the head
    assert f"line {resume - 1:07d}" in first.text
    got: list[str] = []
    offset = 0
    while True:
        args = f'{{"handle": "{handle}", "offset": {offset}, "limit": 400}}'
        page = registry.execute_tool_calls([call("read_tool_output", args, "r")])[0]
        assert page.ok, page.content
        assert ts.estimate_tokens(page.text) <= 1000
        body = page.text.splitlines()
        got.extend(body[1:-1])
        found = re.search(r"offset=(\d+)", body[-1])
        if found is None:
            assert body[-1] == "[end of output]"
            break
        offset = int(found.group(1))
    assert "\n".join(got) + "\n" == text


def test_reader_accepts_null_for_optional_arguments(make_registry: MakeRegistry) -> None:
    """Models (and OpenAI strict mode) send null for "not given"."""
    registry = make_registry()
    register_big(registry, lines(2000))
    handle = registry.invoke("big", {}).metadata["spool"]["handle"]
    args = json.dumps({"handle": handle, "offset": None, "limit": None, "tail": None,
                       "grep": None})
    page = registry.execute_tool_calls([call("read_tool_output", args)])[0]
    assert page.ok, page.content
    assert page.text.splitlines()[1].startswith("line 0000000")
    strict = registry.get_tool_schema("read_tool_output", strict=True)
    assert strict["function"]["parameters"]["properties"]["tail"]["type"] == ["integer", "null"]


def test_reader_tail_and_grep(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(5000) + "ERROR: disk full\nWarning: slow\n")
    handle = registry.invoke("big", {}).metadata["spool"]["handle"]
    tail = read(registry, handle=handle, tail=2).text.splitlines()
    assert tail[1:3] == ["ERROR: disk full", "Warning: slow"] and tail[-1] == "[end of output]"
    grep = read(registry, handle=handle, grep="error|WARNING").text.splitlines()
    assert grep[1:3] == ["5000: ERROR: disk full", "5001: Warning: slow"]
    many = read(registry, handle=handle, grep="line 0001", limit=5).text.splitlines()
    assert [ln.split(":")[0] for ln in many[1:6]] == ["1000", "1001", "1002", "1003", "1004"]
    assert "offset=1005" in many[-1]
    last = read(registry, handle=handle, grep="line", tail=1).text.splitlines()
    assert last[1].startswith("4999: line 0004999")
    none = read(registry, handle=handle, grep="no such text").text
    assert "no line" in none
    # grep is literal: regex syntax cannot make it backtrack
    assert read(registry, handle=handle, grep="(a+)+$").ok


def test_reader_output_stays_within_threshold(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(3000, width=1500))
    handle = registry.invoke("big", {}).metadata["spool"]["handle"]
    page = read(registry, handle=handle, limit=2000)
    assert ts.estimate_tokens(page.text) <= 1000
    assert "stopped at the size limit; continue with offset=" in page.text


def test_long_single_line_is_paged_without_splitting_characters(
        make_registry: MakeRegistry) -> None:
    registry = make_registry(wrap_bytes=1000)
    text = "[" + ",".join(f'"值{i}"' for i in range(100_000)) + "]"  # one line, ~1 MB
    register_big(registry, text)
    result = registry.invoke("big", {})
    handle = result.metadata["spool"]["handle"]
    pieces: list[str] = []
    offset = 0
    while True:
        page = read(registry, handle=handle, offset=offset, limit=2000).text.splitlines()
        pieces.extend(page[1:-1])
        found = re.search(r"offset=(\d+)", page[-1])
        if found is None:
            break
        offset = int(found.group(1))
    assert "\ufffd" not in "".join(pieces)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 1003 for p in pieces)


# -- hostile names and handles ---------------------------------------------------------------

HOSTILE_HANDLES = [
    "../../../../etc/passwd",
    "/etc/passwd",
    "sp_../../etc/passwd",
    "sp_0123456789abcdef/../../x",
    "sp_0123456789abcdef\n",
    "sp_0123456789ABCDEF",
    "sp_0123456789abcdef.txt",
    "sp_0123456789abcde",
    "sp_0123456789abcdef",      # well formed but never written
    "..",
    "",
    "sp_\u0660123456789abcdef",  # Arabic-Indic digit: \d would match it, [0-9] does not
]


@pytest.mark.parametrize("handle", HOSTILE_HANDLES)
def test_hostile_handles_through_the_model_api(make_registry: MakeRegistry, handle: str,
                                               tmp_path: Path) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    registry.invoke("big", {})
    args = json.dumps({"handle": handle})
    result = registry.execute_tool_calls([call("read_tool_output", args)])[0]
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "root:" not in result.text
    # ... and through the application API, which skips the schema
    from toolregistry.errors import ToolCallError

    with pytest.raises(ToolCallError):
        ts.read_output(registry, handle)


def test_handle_of_a_registry_with_another_directory_is_refused(
        make_registry: MakeRegistry, tmp_path: Path) -> None:
    one, two = make_registry(), make_registry()
    elsewhere = make_registry(directory=str(tmp_path / "elsewhere"))
    for registry in (one, two, elsewhere):
        register_big(registry, lines(2000))
    handle = one.invoke("big", {}).metadata["spool"]["handle"]
    two.invoke("big", {})
    elsewhere.invoke("big", {})
    assert read(two, handle=handle, limit=1).ok  # same spool directory: readable
    result = read(elsewhere, handle=handle)
    assert result.is_error and "no spooled output" in result.text


def test_swapped_file_is_not_followed(make_registry: MakeRegistry, tmp_path: Path) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    info = registry.invoke("big", {}).metadata["spool"]
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    os.unlink(info["path"])
    os.symlink(secret, info["path"])
    result = read(registry, handle=info["handle"])
    assert result.is_error and "TOP SECRET" not in result.text
    os.unlink(info["path"])
    os.link(secret, info["path"])  # a hard link: same name, another file
    result = read(registry, handle=info["handle"])
    assert result.is_error and "TOP SECRET" not in result.text


@pytest.mark.parametrize("name", ["../../etc/x", "a/b/../../c", "..", "工具/读取", "ツール", "\u202eevil"])
def test_hostile_tool_names_never_reach_the_file_system(make_registry: MakeRegistry,
                                                        name: str, tmp_path: Path) -> None:
    registry = make_registry()
    text = lines(2000)
    registry.register_tools([Tool(name=name, callable=lambda: text, metadata=SPOOL)])
    registered = next(n for n in registry.list_tools() if n != "read_tool_output")
    result = registry.invoke(registered, {})
    info = result.metadata["spool"]
    directory = ts.spool_directory(registry)
    assert directory is not None and Path(info["path"]).parent == directory
    assert directory.parent == tmp_path / "spool"
    assert [p.name for p in directory.iterdir()] == [f"{info['handle']}.txt"]
    assert {p.name for p in tmp_path.iterdir()} <= {"spool", "cfg1"}


# -- files, permissions, retention, close -----------------------------------------------------

def test_permissions(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    old = os.umask(0)  # even a permissive umask gives private files
    try:
        path = Path(registry.invoke("big", {}).metadata["spool"]["path"])
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_keep_set_after_the_first_spool(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    path = Path(registry.invoke("big", {}).metadata["spool"]["path"])
    ts.configure(registry, keep=True)
    assert (path.parent / ".keep").exists()  # a later process's sweep leaves it alone
    registry.close()
    assert path.exists()


def test_close_removes_files_unless_kept(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    register_big(registry, lines(2000))
    path = Path(registry.invoke("big", {}).metadata["spool"]["path"])
    directory = path.parent
    registry.close()
    assert not directory.exists()

    kept = make_registry(keep=True)
    register_big(kept, lines(2000))
    path = Path(kept.invoke("big", {}).metadata["spool"]["path"])
    kept.close()
    assert path.exists()


def test_no_directory_until_needed(make_registry: MakeRegistry, tmp_path: Path) -> None:
    registry = make_registry()
    register_big(registry, "short")
    registry.invoke("big", {})
    assert ts.spool_directory(registry) is None
    assert not (tmp_path / "spool").exists()


def test_retention_by_total_size(make_registry: MakeRegistry) -> None:
    text = lines(2000)  # ~108 kB
    size = len(text.encode())
    registry = make_registry(max_total_bytes=int(size * 2.5))
    register_big(registry, text)
    infos = [registry.invoke("big", {}).metadata["spool"] for _ in range(4)]
    assert [Path(i["path"]).exists() for i in infos] == [False, False, True, True]
    gone = read(registry, handle=infos[0]["handle"])
    assert gone.is_error and "retention" in gone.text
    assert read(registry, handle=infos[3]["handle"]).ok


def test_newest_output_kept_even_over_the_size_limit(make_registry: MakeRegistry) -> None:
    registry = make_registry(max_total_bytes=1000)
    register_big(registry, lines(2000))
    info = registry.invoke("big", {}).metadata["spool"]
    assert read(registry, handle=info["handle"], limit=1).ok


def test_retention_by_age(make_registry: MakeRegistry) -> None:
    registry = make_registry(max_age_seconds=0.3)
    register_big(registry, lines(2000))
    first = registry.invoke("big", {}).metadata["spool"]
    assert read(registry, handle=first["handle"], limit=1).ok
    time.sleep(0.4)
    expired = read(registry, handle=first["handle"])
    assert expired.is_error and "older than" in expired.text
    assert not Path(first["path"]).exists()
    second = registry.invoke("big", {}).metadata["spool"]
    assert Path(second["path"]).exists()


def test_stale_folders_of_dead_processes_are_swept(make_registry: MakeRegistry,
                                                   tmp_path: Path) -> None:
    base = tmp_path / "spool"
    base.mkdir()
    stale, kept, foreign, fresh = (base / "spool-abc123xy", base / "spool-keep12ab",
                                   base / "mine", base / "spool-fresh1ab")
    for folder in (stale, kept, foreign, fresh):
        folder.mkdir()
        (folder / "sp_0123456789abcdef.txt").write_text("old")
    (kept / ".keep").touch()
    past = time.time() - 10 * 86_400
    for folder in (stale, kept, foreign):
        os.utime(folder, (past, past))
    registry = make_registry()
    register_big(registry, lines(2000))
    registry.invoke("big", {})
    assert not stale.exists()
    assert kept.exists() and foreign.exists() and fresh.exists()


def test_folder_removed_behind_our_back_is_made_again(make_registry: MakeRegistry) -> None:
    import shutil

    registry = make_registry()
    register_big(registry, lines(2000))
    first = registry.invoke("big", {}).metadata["spool"]
    shutil.rmtree(Path(first["path"]).parent)
    second = registry.invoke("big", {}).metadata["spool"]
    assert second["handle"] and Path(second["path"]).exists()
    assert read(registry, handle=second["handle"], limit=1).ok
    assert read(registry, handle=first["handle"]).is_error


def test_write_failure_still_truncates(make_registry: MakeRegistry, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the spool folder should be")
    registry = make_registry(directory=str(blocker))
    register_big(registry, lines(2000))
    result = registry.invoke("big", {})
    assert result.ok
    assert "could not be saved" in result.text and ts.estimate_tokens(result.text) <= 1000
    assert result.metadata["spool"]["handle"] is None


def test_reader_disabled_gives_the_path(make_registry: MakeRegistry) -> None:
    registry = make_registry(reader=False)
    register_big(registry, lines(2000))
    result = registry.invoke("big", {})
    assert "read_tool_output" not in registry
    assert result.metadata["spool"]["path"] in result.text


# -- scale and concurrency ----------------------------------------------------------------

def test_fifty_megabyte_output(make_registry: MakeRegistry) -> None:
    registry = make_registry(threshold_tokens=20_000)
    text = lines(800_000, width=52)  # 800,000 lines of 66 bytes: 52.8 MB
    assert len(text) > 50_000_000
    register_big(registry, text)
    started = time.perf_counter()
    result = registry.invoke("big", {})
    elapsed = time.perf_counter() - started
    info = result.metadata["spool"]
    assert info["size"] == len(text)
    assert os.path.getsize(info["path"]) == len(text)
    assert ts.estimate_tokens(result.text) <= 20_000
    assert elapsed < 10, elapsed
    handle = info["handle"]
    page = read(registry, handle=handle, offset=654_321, limit=2).text.splitlines()
    assert page[1].startswith("line 0654321 ") and page[2].startswith("line 0654322 ")
    assert read(registry, handle=handle, tail=1).text.splitlines()[1].startswith("line 0799999")
    grep = read(registry, handle=handle, grep="line 0777777").text.splitlines()
    assert grep[1].startswith("777777: line 0777777")
    del text


def test_concurrent_spooling_from_many_threads(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    texts = {i: f"thread {i}\n" + lines(1500) for i in range(32)}

    @registry.register(metadata=SPOOL)
    def numbered(i: int) -> str:
        """Long output that names its caller."""
        return texts[i]

    results: dict[int, ToolResult] = {}
    barrier = threading.Barrier(32)

    def worker(i: int) -> None:
        barrier.wait()
        results[i] = registry.invoke("numbered", {"i": i})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batch = registry.execute_tool_calls([call("numbered", f'{{"i": {i}}}', str(i))
                                         for i in range(32)])
    handles = set()
    for i, result in [*results.items(), *enumerate(batch)]:
        info = result.metadata["spool"]
        handles.add(info["handle"])
        assert Path(info["path"]).read_text(encoding="utf-8") == texts[i]
        assert result.text.startswith(f"thread {i}\n")
        first = read(registry, handle=info["handle"], limit=1).text.splitlines()[1]
        assert first == f"thread {i}"
    assert len(handles) == 64
    assert len(list(ts.spool_directory(registry).iterdir())) == 64  # type: ignore[union-attr]


# -- ordering with other plugins --------------------------------------------------------------

class _Shouter:
    """Another plugin whose post_invoke replaces the result (and would win a firstresult)."""

    @hookimpl
    def post_invoke(self, registry: Any, tool: Any, call: Any, result: ToolResult
                    ) -> ToolResult | None:
        if tool.name != "big":
            return None
        return ToolResult(call_id=result.call_id, name=result.name,
                          content=result.text.upper(), value=result.value)


def test_spooling_runs_after_other_post_invoke_hooks(make_registry: MakeRegistry) -> None:
    registry = make_registry(plugins=(_Shouter(),))
    register_big(registry, lines(2000))
    result = registry.invoke("big", {})
    assert "spool" in result.metadata
    assert result.text.startswith("LINE 0000000 ")
    assert Path(result.metadata["spool"]["path"]).read_text().startswith("LINE 0000000 ")


def test_a_bad_spool_table_is_refused_when_the_configuration_loads(tmp_path: Path) -> None:
    """It used to surface only at the first register(); now before anything runs."""
    import subprocess
    import sys

    from toolregistry.errors import ConfigError

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.spool]\nthreshold-tokens = "lots"\n',
                      encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[tool.toolregistry.plugins.spool\] \(.*pyproject"
                                          r"\.toml\): invalid option: threshold-tokens"):
        ToolRegistry(config=config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    proc = subprocess.run([str(Path(sys.executable).parent / "toolregistry"), "--config",
                           str(config), "schemas"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "threshold-tokens" in proc.stderr


def test_what_docs_configuration_md_says_about_the_spool_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The message it quotes is the one given, and its accessor example prints 8000."""
    from toolregistry.errors import ConfigError

    page = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
    if not page.exists():  # the plugin tested outside this repository
        pytest.skip(f"{page} not present")
    text = page.read_text(encoding="utf-8")
    (message,) = re.findall(r"`(\[tool\.toolregistry\.plugins\.spool\][^`]*)`", text)
    monkeypatch.chdir(tmp_path)
    Path("pyproject.toml").write_text(
        '[tool.toolregistry.plugins.spool]\nthreshold-tokens = "lots"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        ToolRegistry(config="pyproject.toml")
    assert str(info.value).replace(str(tmp_path), "/path/to") == message
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                  if "plugin_settings" in b]
    Path("pyproject.toml").write_text(
        "[tool.toolregistry.plugins.spool]\nthreshold-tokens = 8000\n", encoding="utf-8")
    with ToolRegistry(config="pyproject.toml") as registry:
        exec(compile(example, "configuration.md:plugin_settings", "exec"),
             {"registry": registry})
    assert capsys.readouterr().out == "8000\n"


def test_the_directory_is_relative_to_the_file_and_may_name_a_variable(
        make_registry: MakeRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("SPOOL_SUB", "spooled")
    registry = make_registry(directory="${SPOOL_SUB}/here")  # in tmp_path/cfg1
    registry.register_tools([Tool(name="big", callable=lambda: lines(2000), metadata=SPOOL)])
    assert registry.invoke("big", {}).metadata["spool"]
    directory = ts.spool_directory(registry)
    assert directory is not None and directory.parent == tmp_path / "cfg1" / "spooled" / "here"
    assert list(work.iterdir()) == []
