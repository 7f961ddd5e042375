"""The tools/list cache: a source whose list is fresh in the cache registers its tools without
starting its server (the server writes ``started`` to a marker file when it starts, ``listed``
at each listing); the session starts on the first call."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

import toolregistry_mcp
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

from .conftest import TEST_CONFIG, free_port, listening, stdio_spec

MODERN = Path(__file__).parent / "servers" / "modern_server.py"


def spec(marker: Path, script: Path = MODERN, *args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(script), *args],
            "env": {"MODERN_MARKER": str(marker)}}


def events(marker: Path) -> list[str]:
    return marker.read_text(encoding="utf-8").split() if marker.exists() else []


def entries(folder: Path) -> list[Path]:
    return sorted((folder / "toolregistry" / "mcp-tools").glob("*.json"))


@pytest.fixture
def new_registry(tmp_path: Path, no_orphans: None) -> Iterator[Any]:
    """Makes registries on the test configuration (``top`` added to ``[tool.toolregistry]``,
    ``extra`` to the plugin's table); closes them all."""
    made: list[ToolRegistry] = []

    def make(extra: str = "", top: str = "") -> ToolRegistry:
        config = tmp_path / f"pyproject-{len(made)}.toml"
        config.write_text(TEST_CONFIG.replace("[tool.toolregistry]\n",
                                              "[tool.toolregistry]\n" + top) + extra,
                          encoding="utf-8")
        made.append(ToolRegistry(config=config))
        return made[-1]

    yield make
    for registry in made:
        registry.close()


def test_a_cached_list_registers_the_tools_without_starting_the_server(
        new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    first = new_registry()
    first.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    schemas = first.get_schemas()
    first.close()
    assert events(marker) == ["started", "listed"]

    second = new_registry()
    second.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert second.get_schemas() == schemas
    assert events(marker) == ["started", "listed"]  # not started again
    assert second["m-add"].metadata.extra["mcp_server_name"] == "modern-server"
    # The first call starts the session, and the tools are listed live once.
    assert second.invoke("m-add", {"a": 2, "b": 3}).content == "5"
    deadline = time.monotonic() + 20
    while events(marker).count("listed") < 2:
        assert time.monotonic() < deadline, "the live list was not checked"
        time.sleep(0.05)
    assert events(marker)[:3] == ["started", "listed", "started"]
    # The live list is the cached one: nothing is reported as changed.
    assert not second["m-add"].metadata.extra["changed_since_registration"]


def test_cached_definitions_are_the_same_versions_as_the_servers(no_orphans: None) -> None:
    # Titles, annotations, output schemas: a cached tool and the served one have one
    # fingerprint, so the live listing after a cache hit flags nothing for review.
    from toolregistry_mcp._listed import ListedTool, tool_json
    from toolregistry_mcp._screen import strip_invisible
    from toolregistry_mcp._source import _fingerprint

    with toolregistry_mcp.MCPClient(stdio_spec()) as client:
        tools = client.list_tools()
    assert any(t.annotations is not None for t in tools)
    for tool in tools:
        cached = ListedTool(json.loads(json.dumps(tool_json(tool))))
        assert _fingerprint(cached) == _fingerprint(tool), tool.name
        assert _fingerprint(strip_invisible(cached)) == _fingerprint(strip_invisible(tool))


def test_a_refresh_of_a_cached_source_lists_once(new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    new_registry().register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    registry = new_registry()
    registry.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert toolregistry_mcp.refresh(registry)["added"] == []
    time.sleep(0.5)  # a second listing, had one been started, would have reached the server
    assert events(marker) == ["started", "listed"] * 2


def test_namespace_true_takes_the_cached_server_name(new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    new_registry().register_from_mcp(spec(marker), namespace=True, list_cache=3600)
    second = new_registry()
    second.register_from_mcp(spec(marker), namespace=True, list_cache=3600)
    assert "modern-server-add" in second and events(marker) == ["started", "listed"]


def test_without_a_hint_or_an_option_nothing_is_kept(new_registry: Any, tmp_path: Path,
                                                     private_cache: Path) -> None:
    marker = tmp_path / "marker"
    new_registry().register_from_mcp(spec(marker), namespace="m")
    new_registry().register_from_mcp(spec(marker), namespace="m")
    assert events(marker) == ["started", "listed"] * 2
    assert entries(private_cache) == []


def test_the_servers_cache_hint_decides_how_long_and_a_stale_entry_is_listed_again(
        new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    server = spec(marker, MODERN, "--ttl-ms", "1500")
    new_registry().register_from_mcp(server, namespace="m")  # list-cache = "auto"
    started = time.monotonic()
    new_registry().register_from_mcp(server, namespace="m")
    if time.monotonic() - started < 1.0:  # the hint's 1.5 s had not passed (load tolerant)
        assert events(marker) == ["started", "listed"]
    time.sleep(1.6)
    new_registry().register_from_mcp(server, namespace="m")
    assert events(marker)[-2:] == ["started", "listed"]
    assert events(marker).count("started") >= 2


def test_a_changed_script_is_a_new_server(new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    script = tmp_path / "server.py"
    shutil.copy(MODERN, script)
    new_registry().register_from_mcp(spec(marker, script), namespace="m", list_cache="1h")
    with script.open("a", encoding="utf-8") as out:
        out.write("\n# edited\n")
    new_registry().register_from_mcp(spec(marker, script), namespace="m", list_cache="1h")
    assert events(marker) == ["started", "listed"] * 2


def test_list_changed_replaces_the_cached_list(new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    first = new_registry()
    first.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert first.invoke("m-grow", {}).content == "grown"
    deadline = time.monotonic() + 20
    while "m-extra" not in first:
        assert time.monotonic() < deadline, "the changed tool list was not applied"
        time.sleep(0.05)
    first.close()
    second = new_registry()
    second.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert "m-extra" in second
    assert events(marker).count("started") == 1


def _add_vanished_tool(path: Path) -> None:
    """Make the cached listing hold a tool the server does not have."""
    entry = json.loads(path.read_text(encoding="utf-8"))
    gone = dict(next(t for t in entry["tools"] if t["name"] == "add"), name="vanished")
    entry["tools"].append(gone)
    path.write_text(json.dumps(entry), encoding="utf-8")


def test_the_live_list_after_a_cache_hit_updates_the_registry(
        new_registry: Any, tmp_path: Path, private_cache: Path) -> None:
    marker = tmp_path / "marker"
    new_registry().register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    [path] = entries(private_cache)
    _add_vanished_tool(path)
    registry = new_registry()
    registry.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert "m-vanished" in registry
    assert registry.invoke("m-add", {"a": 1, "b": 2}).content == "3"  # the session starts
    deadline = time.monotonic() + 20
    while "m-vanished" in registry:  # the live list went through the usual refresh
        assert time.monotonic() < deadline, "the live list was not applied"
        time.sleep(0.05)
    assert "vanished" not in path.read_text(encoding="utf-8")


def test_a_call_to_a_tool_the_server_no_longer_has_lists_again(
        new_registry: Any, tmp_path: Path, private_cache: Path) -> None:
    registry = new_registry()
    registry.register_from_mcp(spec(tmp_path / "marker"), namespace="m", list_cache="1h")
    assert registry.invoke("m-shrink", {}).content == "shrunk"  # no list_changed sent
    result = registry.invoke("m-listings", {})
    assert result.is_error and "listings" in result.text
    assert "m-listings" not in registry  # listed again: the registry's change events said so
    [path] = entries(private_cache)
    assert "listings" not in [t["name"] for t in json.loads(path.read_text())["tools"]]


def test_a_corrupt_entry_is_ignored_with_a_debug_event(
        new_registry: Any, tmp_path: Path, private_cache: Path) -> None:
    marker = tmp_path / "marker"
    new_registry().register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    [path] = entries(private_cache)
    path.write_text('{"format": 1, "tools": [{"na', encoding="utf-8")
    with structlog.testing.capture_logs() as logs:
        registry = new_registry()
        registry.register_from_mcp(spec(marker), namespace="m", list_cache="1h")
    assert "m-add" in registry and events(marker) == ["started", "listed"] * 2
    corrupt = [e for e in logs if e["event"] == "mcp.list_cache_corrupt"]
    assert corrupt and corrupt[0]["log_level"] == "debug"
    json.loads(path.read_text(encoding="utf-8"))  # written again, whole


@pytest.fixture
def bearer_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    marker = tmp_path / "http-marker"
    with listening([sys.executable, str(MODERN), "--http", str(port), "--ttl-ms", "60000",
                    "--bearer", "s3cret-token-value"], port, "/mcp",
                   env={**os.environ, "MODERN_MARKER": str(marker)}) as url:
        yield url, marker


def test_http_cache_hit_never_reaches_the_server_and_keeps_no_secret(
        new_registry: Any, bearer_http: tuple[str, Path], private_cache: Path,
        tmp_path: Path) -> None:
    url, marker = bearer_http
    headers = {"Authorization": "Bearer s3cret-token-value"}
    new_registry().register_from_mcp(url, headers=headers, namespace="h")
    assert events(marker).count("listed") == 1
    registry = new_registry()
    registry.register_from_mcp(url, headers=headers, namespace="h")
    assert "h-add" in registry and events(marker).count("listed") == 1
    # Other credentials are another partition of a private listing.
    new_registry().register_from_mcp(url, headers={**headers, "X-Tenant": "b"}, namespace="h")
    assert events(marker).count("listed") == 2
    # A stdio server's environment values stay out of it too.
    new_registry().register_from_mcp(
        {**spec(tmp_path / "marker"), "env": {"MODERN_MARKER": str(tmp_path / "marker"),
                                              "API_KEY": "s3cret-env-value"}},
        namespace="s", list_cache="1h")
    folder = private_cache / "toolregistry" / "mcp-tools"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = entries(private_cache)
    assert len(files) == 3
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text(encoding="utf-8")
        assert "s3cret" not in text and "Bearer" not in text and "API_KEY" not in text


def test_a_public_listing_serves_every_set_of_credentials(new_registry: Any,
                                                          tmp_path: Path) -> None:
    port = free_port()
    marker = tmp_path / "http-marker"
    with listening([sys.executable, str(MODERN), "--http", str(port), "--ttl-ms", "60000",
                    "--cache-scope", "public"], port, "/mcp",
                   env={**os.environ, "MODERN_MARKER": str(marker)}) as url:
        new_registry().register_from_mcp(url, headers={"X-Tenant": "a"}, namespace="h")
        registry = new_registry()
        registry.register_from_mcp(url, headers={"X-Tenant": "b"}, namespace="h")
        assert "h-add" in registry and events(marker).count("listed") == 1


def test_bad_list_cache_values_are_refused_before_a_server_starts(
        new_registry: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(ConfigError, match="list_cache must be 'auto', 'off'"):
        new_registry().register_from_mcp(spec(marker), list_cache="soon")
    with pytest.raises(ConfigError, match="list-cache"):
        new_registry('list-cache = "forever"\n')
    assert events(marker) == []
    registry = new_registry('list-cache = "off"\n')
    registry.register_from_mcp(spec(marker), namespace="m")
    assert toolregistry_mcp.sources(registry)[0].client.list_cache is None


SHARED = """
import json, sys
from toolregistry import ToolRegistry
registry = ToolRegistry(config=sys.argv[1])
registry.register_from_mcp(json.loads(sys.argv[2]), namespace="m", list_cache="1h")
print(json.dumps({"tools": registry.list_tools(), "mcp": "mcp" in sys.modules}))
registry.close()
"""


@pytest.mark.parametrize("where", ["cache folder", "store"])
def test_two_processes_share_the_cache(tmp_path: Path, where: str, no_orphans: None) -> None:
    marker = tmp_path / "marker"
    config = tmp_path / "pyproject.toml"
    store = f'store = "sqlite:///{tmp_path / "state.sqlite"}"\n' if where == "store" else ""
    config.write_text(TEST_CONFIG.replace("[tool.toolregistry]\n",
                                          "[tool.toolregistry]\n" + store), encoding="utf-8")
    outs = []
    for n in (1, 2):
        # With a store, each process has a cache folder of its own: the store is shared.
        home = tmp_path / (f"cache-{n}" if store else "cache")
        proc = subprocess.run([sys.executable, "-c", SHARED, str(config),
                               json.dumps(spec(marker))], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(home)})
        assert proc.returncode == 0, proc.stderr
        outs.append(json.loads(proc.stdout.splitlines()[-1]))
    assert outs[0]["tools"] == outs[1]["tools"] and "m-add" in outs[1]["tools"]
    assert events(marker) == ["started", "listed"]
    assert outs[0]["mcp"] and not outs[1]["mcp"]  # the second never imported the SDK
    if store:
        assert not (tmp_path / "cache-1" / "toolregistry").exists()
