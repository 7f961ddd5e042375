"""A registry leaves its host's interpreter as it found it: with default settings no API, with
every plugin installed, changes the switch interval, switches the cyclic collector off, freezes
the heap or changes the CPU affinity of a thread it did not create.

Besides the values before and after, the process-wide setters are observed while the work runs
(each recorded, then called as given) and a tool reads the values while it runs, so a change
put back before the API returns is seen too. The default hand-off pinning (``"auto"``) may
change the affinity of the pool's own worker threads, and of nothing else: each
``os.sched_setaffinity`` is recorded with the name of the thread it changes. The test runs on
the machine as it is and on one made to look idle (``/proc/loadavg`` read from a file), where
the workers are pinned for sure.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from toolregistry import Tool, ToolRegistry


def _state() -> tuple[float, bool, int, frozenset[int] | None]:
    affinity = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return sys.getswitchinterval(), gc.isenabled(), gc.get_freeze_count(), affinity


_SETTERS = [(sys, "setswitchinterval"), (gc, "disable"), (gc, "freeze"),
            (os, "sched_setaffinity")]


def _thread_name(native: int) -> str:
    return next((t.name for t in threading.enumerate() if t.native_id == native), "?")


@pytest.fixture
def changes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call of a process-wide setter while the test runs (``module.name``; for
    ``os.sched_setaffinity`` also the name of the thread it changes: ``[name]``)."""
    seen: list[str] = []

    def recording(module: Any, name: str) -> Callable[..., Any]:
        real = getattr(module, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "sched_setaffinity":
                target = args[0] or threading.get_native_id()
                seen.append(f"os.sched_setaffinity[{_thread_name(target)}]")
            else:
                seen.append(f"{module.__name__}.{name}")
            return real(*args, **kwargs)

        return call

    for module, name in _SETTERS:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, recording(module, name))
    yield seen


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


class Burner:
    """Tools that keep a CPU busy (the pool marks them CPU-bound) and report what they see."""

    def burn(self, seconds: float = 0.15) -> str:
        """Keep a CPU busy, then tell the host's state."""
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass
        return json.dumps(_state()[:3])

    def look(self) -> str:
        """Tell the host's state."""
        return json.dumps(_state()[:3])


@pytest.fixture(params=["as it is", "idle"])
def machine(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """The machine as it is, or made to look idle to the hand-off pinning."""
    if request.param != "idle" or not hasattr(os, "sched_setaffinity"):
        yield request.param
        return
    from toolregistry._execution._affinity import _load

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.01 0.02 0.03 1/90 4242\n")
    saved = _load.fd
    _load.fd, _load.looked = os.open(loadavg, os.O_RDONLY), -1.0
    try:
        yield request.param
    finally:
        os.close(_load.fd)
        _load.fd, _load.looked = saved, -1.0


def test_the_default_leaves_the_interpreter_as_it_found_it(changes: list[str],
                                                           machine: str) -> None:
    from toolregistry_mcp import aserve

    before = _state()
    expected = json.dumps(before[:3])
    reg = ToolRegistry(tool_discovery=True)
    assert {r["name"] for r in reg.plugins.report() if r["status"] == "loaded"} >= {
        "discovery", "mcp", "spool", "think"}
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    # Register many: at once, one by one, and a class.
    reg.register_tools(Tool(name=f"bulk_{i}", description=f"Look up item {i}.",
                            parameters=params, callable=lambda **kw: kw) for i in range(600))
    for i in range(300):
        reg.register(Tool(name=f"one_{i}", description="One more.", parameters=params,
                          callable=lambda **kw: kw))
    reg.register_from_class(Burner, namespace=True)
    # Emit schemas in every format (cold), and the discovery index build through a search.
    for fmt in reg.formats.names("schemas"):
        assert len(reg.get_schemas(api_format=fmt)) >= 900
    found = reg.invoke("discover_tools", {"query": "look up item 7"})
    assert found.ok, found.content
    # Invoke: sync, CPU-bound, batches that crowd the pool, async.
    assert reg.invoke("Burner-look", {}).content == expected
    assert reg.invoke("Burner-burn", {"seconds": 0.3}).content == expected
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "Burner-burn", "arguments": "{}"}} for i in range(6)]
    assert [r.content for r in reg.execute_tool_calls(calls)] == [expected] * 6

    async def on_a_loop() -> list[Any]:
        one = await reg.ainvoke("Burner-burn", {})
        return [one, *await reg.aexecute_tool_calls(calls)]

    assert [r.content for r in asyncio.run(on_a_loop())] == [expected] * 7
    # Serve in this process (the mcp plugin's aserve, as an application would).
    port = _free_port()
    loop = asyncio.new_event_loop()
    task = loop.create_task(aserve(reg, "streamable-http", port=port))

    def serving() -> None:
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=serving, daemon=True)
    thread.start()
    try:
        _wait_for_port(port)
        with ToolRegistry(load_plugins=["mcp"]) as client:
            client.register_from_mcp(f"http://127.0.0.1:{port}/mcp", namespace="srv")
            served = client.invoke("srv-Burner-look", {})
            assert served.ok, served.content
            assert served.content == expected  # read while the server serves
    finally:
        loop.call_soon_threadsafe(task.cancel)
        thread.join(30)
        loop.close()
    reg.close()
    assert not thread.is_alive()
    # Only the pool's own workers' affinity, pinned and put back around their wake-ups.
    own = "os.sched_setaffinity[toolregistry-worker]"
    assert [c for c in changes if c != own] == []
    if machine == "idle" and len(before[3] or ()) > 1:
        assert own in changes
    assert _state() == before
