"""Third-party servers from the package registries: mcp-server-time and mcp-server-git (PyPI,
installed with this plugin's ``test`` extra) and the reference ``everything`` server (npm)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ToolNameCollisionError

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"



def _mcp_tools(registry: ToolRegistry) -> list[str]:
    """The registry's MCP tools (other plugins, e.g. spool's reader, may add their own)."""
    return sorted(n for n in registry.list_tools() if registry[n].provenance.kind == "mcp")

def _module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install 'toolregistry-mcp[test]')")


def test_mcp_server_time(registry: ToolRegistry) -> None:
    _module("mcp_server_time")
    tools = registry.register_from_mcp(
        {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        namespace=True,
    )
    names = {t.name for t in tools}
    assert {"mcp-time-get_current_time", "mcp-time-convert_time"} <= names
    now = registry.invoke("mcp-time-get_current_time", {"timezone": "Asia/Tokyo"})
    assert now.ok, now.text
    assert json.loads(now.text)["timezone"] == "Asia/Tokyo"
    converted = registry.invoke("mcp-time-convert_time", {
        "source_timezone": "Europe/London", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    assert converted.ok and "Asia/Tokyo" in converted.text
    # Validated here before sending: the schema requires 'timezone'.
    missing = registry.invoke("mcp-time-get_current_time", {})
    assert missing.is_error and missing.error_kind == "invalid_arguments"
    # The server's own error (an unknown zone) comes back as an error result.
    bad = registry.invoke("mcp-time-get_current_time", {"timezone": "Mars/Olympus"})
    assert bad.is_error and bad.error_kind == "remote"


def test_mcp_server_git(registry: ToolRegistry, tmp_path: Path) -> None:
    _module("mcp_server_git")
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    (repo / "hello.txt").write_text("hello\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "hello.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "first commit"], check=True,
                   env=env)
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    registry.register_from_mcp(
        {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
        namespace="git", include=["git_status", "git_log", "git_show"],
    )
    assert _mcp_tools(registry) == ["git-git_log", "git-git_show", "git-git_status"]
    status = registry.invoke("git-git_status", {"repo_path": str(repo)})
    assert status.ok and "new.txt" in status.text
    log = registry.invoke("git-git_log", {"repo_path": str(repo), "max_count": 5})
    assert log.ok and "first commit" in log.text


def test_time_and_git_share_a_registry(registry: ToolRegistry, tmp_path: Path) -> None:
    _module("mcp_server_time")
    _module("mcp_server_git")
    registry.register_from_mcp({"command": sys.executable, "args": ["-m", "mcp_server_time"]})
    registry.register_from_mcp({"command": sys.executable, "args": ["-m", "mcp_server_git"]},
                               include=["git_status"])
    assert _mcp_tools(registry) == ["convert_time", "get_current_time", "git_status"]


# --------------------------------------------------------------------------- npm
def _npx_spec() -> dict[str, Any]:
    if shutil.which("npx") is None:
        pytest.skip("needs npx")
    return {"command": "npx", "args": ["-y", EVERYTHING, "stdio"]}


@pytest.mark.npm
def test_everything_over_npx_stdio(registry: ToolRegistry,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    tools = registry.register_from_mcp(_npx_spec(), namespace=True, connect_timeout=180)
    ns = "mcp-servers_everything"
    names = {t.name for t in tools}
    assert {f"{ns}-echo", f"{ns}-get-sum", f"{ns}-get-tiny-image"} <= names
    assert registry.invoke(f"{ns}-echo", {"message": "hi"}).text == "Echo: hi"
    total = registry.invoke(f"{ns}-get-sum", {"a": 2, "b": 40})
    assert total.ok and "42" in total.text
    image = registry.invoke(f"{ns}-get-tiny-image", {})
    assert image.ok and image.images and image.images[0].media_type == "image/png"
    ref = registry.invoke(f"{ns}-get-resource-reference",
                          {"resourceType": "Text", "resourceId": 1})
    assert ref.ok and "demo://resource/dynamic/text/1" in ref.text
    env = registry.invoke(f"{ns}-get-env", {})
    assert env.ok and "sk-ant-secret" not in env.text and "ANTHROPIC_API_KEY" not in env.text
    weather = registry.invoke(f"{ns}-get-structured-content", {"location": "New York"})
    assert weather.ok and "temperature" in weather.text
    bad = registry.invoke(f"{ns}-get-sum", {"a": "two", "b": 1})
    assert bad.is_error and bad.error_kind == "invalid_arguments"


@pytest.mark.npm
def test_everything_and_our_server_collide_on_echo(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), include=["echo"])
    with pytest.raises(ToolNameCollisionError, match="namespace"):
        registry.register_from_mcp(_npx_spec(), include=["echo"], connect_timeout=180)
    registry.register_from_mcp(_npx_spec(), include=["echo"], namespace="every",
                               connect_timeout=180)
    assert registry.invoke("every-echo", {"message": "x"}).text == "Echo: x"
    assert registry.invoke("echo", {"text": "x"}).text == "x"


@pytest.mark.npm
def test_everything_over_streamable_http(registry: ToolRegistry, everything_http: str) -> None:
    registry.register_from_mcp(everything_http, namespace="e")
    assert registry.invoke("e-echo", {"message": "http"}).text == "Echo: http"
    image = registry.invoke("e-get-tiny-image", {})
    assert image.ok and image.images


@pytest.mark.npm
def test_everything_over_sse(registry: ToolRegistry, everything_sse: str) -> None:
    from toolregistry_mcp import sources

    registry.register_from_mcp(everything_sse, namespace="sse")
    assert sources(registry)[0].client.spec.transport == "sse"
    assert registry.invoke("sse-echo", {"message": "sse"}).text == "Echo: sse"
    total = registry.invoke("sse-get-sum", {"a": 1, "b": 2})
    assert total.ok and "3" in total.text


@pytest.mark.npm
def test_js_script_path_runs_with_node(registry: ToolRegistry, everything_js: Path) -> None:
    registry.register_from_mcp(str(everything_js), include=["echo"])  # stdio by default
    assert registry["echo"].provenance.detail == "index.js"
    assert registry.invoke("echo", {"message": "node"}).text == "Echo: node"
