"""Where a session lives: the background loop (default) or the application's own loop
(``session_loop="running"``); and the stdio transport's flow control."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

import toolregistry_mcp
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

SERVER = Path(__file__).parent / "servers" / "demo_server.py"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie no one reaped yet is not running
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except FileNotFoundError:
        return False


def _wait_dead(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _client(registry: ToolRegistry) -> toolregistry_mcp.MCPClient:
    return toolregistry_mcp.sources(registry)[0].client


def test_running_session_lives_on_the_callers_loop(registry: ToolRegistry, spec: Any) -> None:
    async def main() -> tuple[str, str]:
        await registry.aregister_from_mcp(spec(), include=["echo", "pid"],
                                          session_loop="running")
        client = _client(registry)
        conn = client._conn
        assert conn is not None and conn.runner is not None
        # The session's task is on this very loop: calls on it need no other thread.
        assert conn.runner.get_loop() is asyncio.get_running_loop()
        direct = await registry.ainvoke("echo", {"text": "on the loop"})
        # Another thread (blocking) and another loop reach it too, handed over to this loop.
        blocking = await asyncio.to_thread(registry.invoke, "echo", {"text": "from a thread"})

        async def elsewhere() -> Any:
            return await registry.ainvoke("echo", {"text": "from another loop"})

        other = await asyncio.to_thread(asyncio.run, elsewhere())
        assert [direct.text, blocking.text, other.text] == [
            "on the loop", "from a thread", "from another loop"]
        assert not direct.is_error and not blocking.is_error and not other.is_error
        pid = await registry.ainvoke("pid")
        return pid.text, str(conn.pid)

    pid, recorded = asyncio.run(main())
    assert pid == recorded
    # asyncio.run cancelled the session's task on its way out: the server was stopped...
    assert _wait_dead(int(pid))
    # ...and the next call opens a new session (a blocking caller: on the background loop).
    again = registry.invoke("pid")
    assert not again.is_error and again.text != pid
    conn = _client(registry)._conn
    assert conn is not None and conn.runner is not None
    from toolregistry_mcp import _loop

    assert conn.runner.get_loop() is _loop.get_loop()


def test_blocking_call_on_the_sessions_own_loop_is_refused(registry: ToolRegistry,
                                                            spec: Any) -> None:
    async def main() -> Any:
        await registry.aregister_from_mcp(spec(), include=["echo"], session_loop="running")
        started = time.monotonic()
        result = registry.invoke("echo", {"text": "would wait for itself"})
        assert time.monotonic() - started < 2
        return result

    result = asyncio.run(main())
    assert result.is_error and result.error_kind == "execution"
    assert "session_loop='running'" in result.text and "ainvoke" in result.text


def test_blocked_session_loop_is_reported_not_waited_for(tmp_path: Path, spec: Any,
                                                         no_orphans: None) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n"
                      "session-loop = \"running\"\n", encoding="utf-8")
    registry = ToolRegistry(config=config)
    loaded = threading.Event()
    release = threading.Event()
    results: list[Any] = []

    async def owner() -> None:
        await registry.aregister_from_mcp(spec(), include=["echo"])
        # Short only once connected: a loaded machine may take longer than 1 s to start it.
        toolregistry_mcp.sources(registry)[0].client.connect_timeout = 1
        loaded.set()
        release.wait(30)  # the loop's thread blocks: the session cannot take calls
        results.append(await registry.ainvoke("echo", {"text": "after"}))

    thread = threading.Thread(target=asyncio.run, args=(owner(),))
    thread.start()
    try:
        assert loaded.wait(30)
        started = time.monotonic()
        blocked = registry.invoke("echo", {"text": "anyone there?"})
        assert time.monotonic() - started < 10
        assert blocked.is_error and "did not take the call within 1s" in blocked.text
    finally:
        release.set()
        thread.join(30)
    assert results and results[0].text == "after"
    registry.close()


def test_loop_closed_without_cleanup_still_ends_the_server(registry: ToolRegistry,
                                                            spec: Any) -> None:
    loop = asyncio.new_event_loop()
    loop.run_until_complete(registry.aregister_from_mcp(spec(), include=["pid"],
                                                        session_loop="running"))
    pid = int(loop.run_until_complete(registry.ainvoke("pid")).text)
    loop.close()  # the session's task is never cancelled nor run again
    assert _alive(pid)
    registry.close()  # ends the server's process group from here
    assert _wait_dead(pid)
    assert _client(registry).closed


def test_session_loop_setting_is_checked(tmp_path: Path, spec: Any) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.mcp]\nsession-loop = "elsewhere"\n',
                      encoding="utf-8")
    with pytest.raises(ConfigError, match="session-loop"):  # when the configuration loads
        ToolRegistry(config=config)
    with pytest.raises(ValueError, match="session_loop must be one of"):
        toolregistry_mcp.MCPClient(spec(), session_loop="elsewhere")


def test_flood_of_notifications_is_read_with_flow_control(registry: ToolRegistry,
                                                          spec: Any) -> None:
    # 2000 log notifications (over 400 KB) before the answer: far past the transport's
    # high-water mark, so it pauses and resumes reading the pipe many times.
    registry.register_from_mcp(spec(), include=["chatty", "echo"])
    with structlog.testing.capture_logs() as logs:
        result = registry.invoke("chatty", {"n": 2000}, timeout=60)
    assert not result.is_error and result.text == "sent 2000"
    # The session is healthy afterwards, and concurrent calls interleave fine.
    results = registry.execute_tool_calls(
        [{"name": "echo", "arguments": {"text": str(i)}} for i in range(20)]
        + [{"name": "chatty", "arguments": {"n": 300}}])
    assert [r.text for r in results[:20]] == [str(i) for i in range(20)]
    assert results[20].text == "sent 300"
    assert not [e for e in logs if e.get("log_level") in ("warning", "error")]


LOOP_THREAD_SCRIPT = """
import asyncio, sys, threading, time
from toolregistry import ToolRegistry

def loop_threads():
    return [t for t in threading.enumerate() if t.name == "toolregistry-mcp"]

def gone():
    deadline = time.monotonic() + 10
    while loop_threads():
        assert time.monotonic() < deadline, "the MCP loop thread outlived the last client"
        time.sleep(0.01)

spec = {"command": sys.executable, "args": [sys.argv[1]]}
for round in range(2):  # after it stopped, the next client starts a new one
    with ToolRegistry(config=sys.argv[2]) as reg:
        reg.register_from_mcp(spec, namespace="a", include=["echo"])
        reg.register_from_mcp(spec, namespace="b", include=["echo"])
        assert reg.invoke("a-echo", {"text": "x"}).content == "x"
        assert len(loop_threads()) == 1
        reg.unregister("a-echo")
    gone()

async def main():
    reg = ToolRegistry(config=sys.argv[2])
    await reg.aregister_from_mcp(spec, include=["echo"])
    assert (await reg.ainvoke("echo", {"text": "y"})).content == "y"
    await reg.aclose()

asyncio.run(main())
gone()
# A registry dropped without close(): its finalizer closes the client, and the loop stops.
reg = ToolRegistry(config=sys.argv[2])
reg.register_from_mcp(spec, include=["echo"])
assert reg.invoke("echo", {"text": "z"}).content == "z"
del reg
import gc; gc.collect()
gone()
print("ok")
"""


def test_loop_thread_ends_with_the_last_client(tmp_path: Path, no_orphans: None) -> None:
    # Issue 16.16: the background loop thread stayed alive after every client had closed.
    import subprocess
    import sys

    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n",
                      encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", LOOP_THREAD_SCRIPT, str(SERVER), str(config)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_call_past_the_kernel_deadline_leaves_the_session_usable(registry: ToolRegistry,
                                                                  spec: Any) -> None:
    # An MCP tool declares it ends when cancelled: the async API awaits it in the caller's
    # task, cancels that task at the deadline and takes the cancellation back.
    async def main() -> tuple[Any, Any, int]:
        await registry.aregister_from_mcp(spec(), include=["slow", "echo"],
                                          session_loop="running")
        assert registry.get_tool("slow").ends_on_cancel  # type: ignore[union-attr]
        late = await registry.ainvoke("slow", {"seconds": 30}, timeout=0.3)
        after = await registry.ainvoke("echo", {"text": "still here"})
        task = asyncio.current_task()
        assert task is not None
        return late, after, task.cancelling()

    late, after, cancelling = asyncio.run(main())
    assert late.error_kind == "timeout"
    assert not after.is_error and after.text == "still here"
    assert cancelling == 0
