"""Servers that fail: at start, mid-call, by hanging, by flooding, by lying about schemas.

Each must end in a clear error result or event within bounded time, and leave no process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import structlog

import toolregistry_mcp
from toolregistry import ToolRegistry
from toolregistry_mcp import MCPConnectError

RAW_SERVER = Path(__file__).parent / "servers" / "raw_server.py"
SERVER = Path(__file__).parent / "servers" / "demo_server.py"


def _pids_of(marker: Path, word: str) -> int:
    return marker.read_text(encoding="utf-8").split().count(word)


def _wait_for(predicate: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_server_failing_at_start(registry: ToolRegistry, spec: Any) -> None:
    started = time.monotonic()
    with pytest.raises(MCPConnectError) as info:
        registry.register_from_mcp(spec("--fail-at-start"))
    assert time.monotonic() - started < 20
    message = str(info.value)
    assert "demo_server.py" in message and "failed to start" in message
    assert "DATABASE_URL is not set" in message  # the server's own stderr, for the user
    assert len(registry) == 0 and toolregistry_mcp.sources(registry) == []


def test_command_not_found(registry: ToolRegistry) -> None:
    with pytest.raises(MCPConnectError, match="was not found"):
        registry.register_from_mcp({"command": "/nonexistent/mcp-server", "args": []})


def test_server_hanging_at_start(registry: ToolRegistry, spec: Any) -> None:
    started = time.monotonic()
    with pytest.raises(MCPConnectError, match="did not complete the MCP handshake within 2s"):
        registry.register_from_mcp(spec("--hang-at-start"), connect_timeout=2)
    assert time.monotonic() - started < 12


def test_server_dying_mid_call(registry: ToolRegistry, spec: Any, marker: Path) -> None:
    registry.register_from_mcp(spec("--marker", str(marker)))
    pid_before = registry.invoke("pid", {}).text
    result = registry.invoke("die", {})
    assert result.is_error and result.error_kind == "remote"
    assert "lost the connection" in result.text and "not retried" in result.text
    # Reconnected on the next call: a new server process.
    pid_after = registry.invoke("pid", {}).text
    assert pid_after.isdigit() and pid_after != pid_before
    assert not psutil.pid_exists(int(pid_before)) or psutil.Process(
        int(pid_before)).status() == psutil.STATUS_ZOMBIE
    # The failed call was sent exactly once.
    assert _pids_of(marker, "dying") == 1


def test_server_dying_while_idle_is_restarted_transparently(registry: ToolRegistry,
                                                            spec: Any) -> None:
    registry.register_from_mcp(spec())
    pid = int(registry.invoke("pid", {}).text)
    psutil.Process(pid).kill()
    psutil.Process(pid).wait(5) if psutil.pid_exists(pid) else None
    _wait_for(lambda: not psutil.pid_exists(pid) or
              psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    time.sleep(0.2)  # let the session notice the end of its stdout
    result = registry.invoke("echo", {"text": "still here"})
    assert result.ok, result.text
    assert result.content == "still here"


def test_hanging_call_times_out_and_is_cancelled(registry: ToolRegistry, spec: Any,
                                                 marker: Path) -> None:
    registry.register_from_mcp(spec("--marker", str(marker)), timeout=1)
    started = time.monotonic()
    result = registry.invoke("slow", {"seconds": 60})
    assert time.monotonic() - started < 5
    assert result.is_error and result.error_kind == "timeout"
    assert "did not answer within 1s" in result.text
    # The server received notifications/cancelled and stopped the handler.
    _wait_for(lambda: "cancelled slow" in marker.read_text(encoding="utf-8"))
    assert registry.invoke("echo", {"text": "ok"}).content == "ok"  # session still usable


def test_registry_timeout_cancels_the_mcp_request(registry: ToolRegistry, spec: Any,
                                                  marker: Path) -> None:
    registry.register_from_mcp(spec("--marker", str(marker)), timeout=60)
    started = time.monotonic()
    result = registry.invoke("slow", {"seconds": 60}, timeout=1)
    assert time.monotonic() - started < 5
    assert result.is_error and result.error_kind == "timeout"
    _wait_for(lambda: "cancelled slow" in marker.read_text(encoding="utf-8"))


def test_fifty_megabyte_result_is_truncated(registry: ToolRegistry, spec: Any) -> None:
    registry.register_from_mcp(spec(), include=["big", "echo"])
    started = time.monotonic()
    result = registry.invoke("big", {"mb": 50})
    assert time.monotonic() - started < 20
    assert result.ok
    assert len(result.text) < 101_000
    if registry.plugins.is_loaded("spool"):  # the integration environment: spooled whole
        assert result.metadata["spool"]["handle"]
    else:
        assert "[truncated by toolregistry-mcp: the result had 52,428,800 characters" \
            in result.text


@pytest.mark.parametrize(("answer", "length"), [(None, 1024 * 1024), (2000, 2000)],
                         ids=["whole", "shorter"])
def test_the_output_limits_seam_decides_where_results_are_cut(
        tmp_path: Path, spec: Any, no_orphans: None, answer: int | None, length: int) -> None:
    """A plugin that keeps long output whole (or wants it shorter) says so through the
    kernel's ``output_limits`` seam; the MCP plugin asks it and names no other plugin."""
    from toolregistry.plugin import hookimpl
    from toolregistry.types import OutputLimits

    class Limits:
        @hookimpl
        def output_limits(self, registry: ToolRegistry, tool: Any) -> OutputLimits | None:
            return OutputLimits(answer) if tool.name == "big" else None

    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n",
                      encoding="utf-8")
    with ToolRegistry(config=config, load_plugins=["mcp"], plugins=[Limits()]) as registry:
        registry.register_from_mcp(spec(), include=["big"])
        text = registry.invoke("big", {"mb": 1}).text
    if answer is None:
        assert len(text) == length and "[truncated" not in text
    else:
        assert text.startswith("x" * length + "\n")
        assert f"the result had {1024 * 1024:,} characters" in text
        assert len(text) < length + 400


def test_message_over_the_bound_is_an_error_then_recovers(tmp_path: Path, spec: Any,
                                                          no_orphans: None) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nmax-message-bytes = 1000000\n"
                      "shutdown-grace = 0.3\n", encoding="utf-8")
    with ToolRegistry(config=config) as reg:
        reg.register_from_mcp(spec(), include=["big", "echo"])
        started = time.monotonic()
        result = reg.invoke("big", {"mb": 5})
        assert time.monotonic() - started < 15
        assert result.is_error and result.error_kind == "remote"
        assert "1,000,000-byte limit" in result.text
        assert "max-message-bytes in [tool.toolregistry.plugins.mcp]" in result.text
        assert reg.invoke("echo", {"text": "back"}).content == "back"


def test_broken_schemas_are_skipped_with_an_event(registry: ToolRegistry) -> None:
    # A hand-written server: the SDK's own server refuses to send broken definitions.
    with structlog.testing.capture_logs() as logs:
        tools = registry.register_from_mcp(str(RAW_SERVER))
    assert [t.name for t in tools] == ["good"]
    skipped = {e["tool"]: e["reason"] for e in logs if e["event"] == "mcp.tool_skipped"}
    assert "'properties' is a int" in skipped["broken"]
    assert "type 'string'" in skipped["not_object"]
    assert "not a valid JSON Schema" in skipped["bad_ref"]
    assert "malformed (inputSchema: Field required)" in skipped["no_schema"]
    source = toolregistry_mcp.sources(registry)[0]
    assert set(source.skipped) == {"broken", "not_object", "bad_ref", "no_schema"}
    assert registry.invoke("good", {"q": "fine"}).content == '{"q": "fine"}'
    assert toolregistry_mcp.refresh(registry)["skipped"] == []  # reported once


def test_unknown_option_is_named(registry: ToolRegistry, spec: Any) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'namespace'"):
        registry.register_from_mcp(spec(), namspace="x")


def test_bad_server_spec(registry: ToolRegistry) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match="http\\(s\\) URL"):
        registry.register_from_mcp("not-a-server")
    with pytest.raises(ConfigError, match="needs 'command'"):
        registry.register_from_mcp({"args": ["x"]})
    with pytest.raises(ConfigError, match="does not exist"):
        registry.register_from_mcp("/nowhere/server.py")


EXIT_SCRIPT = """
import sys
from toolregistry import ToolRegistry
registry = ToolRegistry(config=sys.argv[2])
registry.register_from_mcp(sys.argv[1], include=["pid"])
print(registry.invoke("pid", {}).text, flush=True)
if sys.argv[3] == "raise":
    raise RuntimeError("the application crashed without closing anything")
"""


@pytest.mark.parametrize("how", ["exit", "raise"])
def test_no_orphans_when_the_application_forgets_to_close(tmp_path: Path, how: str,
                                                          no_orphans: None) -> None:
    import subprocess
    import sys

    script = tmp_path / "app.py"
    script.write_text(EXIT_SCRIPT, encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n", encoding="utf-8")
    server = Path(__file__).parent / "servers" / "demo_server.py"
    done = subprocess.run([sys.executable, str(script), str(server), str(config), how],
                          capture_output=True, text=True, timeout=60, check=False)
    pid = int(done.stdout.split()[0])
    _wait_for(lambda: not psutil.pid_exists(pid)
              or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, timeout=10)


def test_dropped_registry_ends_its_servers(spec: Any, no_orphans: None) -> None:
    import gc

    def use() -> int:
        reg = ToolRegistry(config=Path(__file__).parent / "servers" / "empty.toml")
        reg.register_from_mcp(spec(), include=["pid"])
        return int(reg.invoke("pid", {}).text)

    pid = use()
    gc.collect()
    _wait_for(lambda: not psutil.pid_exists(pid)
              or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, timeout=10)


def test_spool_opt_out_falls_back_to_truncation(registry: ToolRegistry, spec: Any) -> None:
    if not registry.plugins.is_loaded("spool"):
        pytest.skip("needs the spool plugin (the integration environment)")
    registry.register_from_mcp(spec(), include=["big"])
    assert registry["big"].metadata.too_long_to_file is True
    registry.update_tool_metadata("big", too_long_to_file=False)
    result = registry.invoke("big", {"mb": 1})
    assert "[truncated by toolregistry-mcp" in result.text


def test_stray_output_on_stdout_is_reported_and_skipped(tmp_path: Path,
                                                        registry: ToolRegistry) -> None:
    # Servers that print() their own chatter to stdout are common: each line that is not a
    # JSON-RPC message is reported as an event and skipped; the session carries on.
    script = tmp_path / "noisy.py"
    script.write_text(
        "import os, sys\n"
        "print('starting up, please wait...', flush=True)\n"
        "print('{\"not\": \"json-rpc\"}', flush=True)\n"
        f"os.execv(sys.executable, [sys.executable, {str(SERVER)!r}])\n", encoding="utf-8")
    with structlog.testing.capture_logs() as logs:
        registry.register_from_mcp(str(script), include=["echo"])
        assert registry.invoke("echo", {"text": "still fine"}).content == "still fine"
    errors = [e for e in logs if e["event"] == "mcp.transport_error"]
    assert len(errors) == 2
    assert all("ValidationError" in e["error"] for e in errors)


def test_result_breaking_the_mcp_schema_is_an_error_for_that_call_only(
        registry: ToolRegistry) -> None:
    # Issue 15.9: was "lost the connection", and the server was restarted on every call.
    import sys

    registry.register_from_mcp({"command": sys.executable,
                                "args": [str(RAW_SERVER), "--bad-results"]})
    pid = registry.invoke("pid", {}).text
    for tool, expected in (("unknown_block", "content"), ("content_not_list", "content"),
                           ("wrong_structure", "structured content")):
        with structlog.testing.capture_logs() as logs:
            result = registry.invoke(tool, {})
        assert result.is_error and result.error_kind == "remote", result.text
        assert f"'{tool}'" in result.text and expected in result.text
        assert "does not follow" in result.text or "Invalid structured content" in result.text
        assert "lost the connection" not in result.text
        assert not [e for e in logs if e["event"] in ("mcp.call_failed", "mcp.disconnected")]
        assert registry.invoke("pid", {}).text == pid  # the same session, no restart


def test_http_message_over_the_bound_names_the_limit_and_option(tmp_path: Path,
                                                                 procs: Any) -> None:
    import sys

    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nmax-message-bytes = 1000000\n",
                      encoding="utf-8")
    port = procs.free_port()
    with (procs.listening([sys.executable, str(SERVER), "--http", str(port)], port, "/mcp")
          as url, ToolRegistry(config=config) as reg):
        reg.register_from_mcp(url, include=["big", "echo"])
        result = reg.invoke("big", {"mb": 5})
        assert result.is_error and result.error_kind == "remote"
        assert "1,000,000-byte limit" in result.text
        assert "max-message-bytes in [tool.toolregistry.plugins.mcp]" in result.text
        assert reg.invoke("echo", {"text": "back"}).content == "back"


def test_max_message_bytes_per_source_bounds_a_line_read_whole(registry: ToolRegistry,
                                                               spec: Any) -> None:
    # A line that arrives within one pipe read was not checked against the bound.
    registry.register_from_mcp(spec(), include=["big", "echo"], max_message_bytes=4000)
    result = registry.invoke("big", {"mb": 0.01})
    assert result.is_error and "4,000-byte limit" in result.text
    assert registry.invoke("echo", {"text": "ok"}).content == "ok"
