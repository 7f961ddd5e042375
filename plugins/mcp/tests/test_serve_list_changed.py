"""A served registry announces ``notifications/tools/list_changed`` to every connected client,
including one that is idle (no request of its own in flight) when the registry changes: a
change the application makes on its own (a timer, a source refresh), a change another client's
call makes. Real servers in subprocesses over stdio and streamable HTTP, real clients; and the
SDK's in-process client for what must be counted (one announcement per connection and change).
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest

from toolregistry import Injected, ToolRegistry

SERVED = textwrap.dedent('''
    import sys
    import threading
    import time
    from pathlib import Path

    from toolregistry import ToolRegistry
    from toolregistry_mcp import serve

    registry = ToolRegistry(name="served")


    def later_tool(name):
        def later(x: int) -> int:
            """Arrived while nobody was calling."""
            return x * 2
        registry.register(later, name=name)


    def watch(path):
        # The application's own change: each new content of the file registers a tool, from
        # a thread of the server process, with no request of any client in flight.
        seen = ""
        while True:
            try:
                text = path.read_text(encoding="utf-8").strip()
            except OSError:
                text = ""
            if text and text != seen:
                seen = text
                later_tool(f"later_{text}")
            time.sleep(0.02)


    @registry.register
    def arm(path: str) -> str:
        """From now on, register a tool each time the file at ``path`` changes (after this
        call has returned)."""
        threading.Thread(target=watch, args=(Path(path),), daemon=True).start()
        return "armed"


    @registry.register
    def grow(name: str) -> str:
        """Register the tool ``name`` now, during this call."""
        later_tool(name)
        return "grown"


    if sys.argv[1:2] == ["--http"]:
        serve(registry, "streamable-http", port=int(sys.argv[2]))
    else:
        serve(registry)
''')

DEADLINE = 30.0  # generous: the machine is shared


@pytest.fixture
def served_script(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    script = tmp_path / "served.py"
    script.write_text(SERVED, encoding="utf-8")
    return script


@pytest.fixture
def http_url(served_script: Path, procs: Any) -> Iterator[str]:
    port = procs.free_port()
    with procs.listening([sys.executable, str(served_script), "--http", str(port)], port,
                         "/mcp", cwd=served_script.parent) as url:
        yield url


def until_seen(registry: ToolRegistry, prefix: str, change: Callable[[int], None]) -> str:
    """Make change 1, 2, ... on the server (every 2 s) until ``registry`` — a client making no
    request meanwhile — holds a tool named ``prefix``*: it heard a list_changed. Repeated
    because over HTTP the announcement travels on the client's standalone (GET) stream, which
    the client opens concurrently with its first requests: a change made before that stream
    is open reaches nobody (the SDK keeps no backlog without an event store)."""
    deadline = time.monotonic() + DEADLINE
    attempt = 0
    while time.monotonic() < deadline:
        attempt += 1
        change(attempt)
        step = min(deadline, time.monotonic() + 2.0)
        while time.monotonic() < step:
            found = sorted(n for n in registry.list_tools() if n.startswith(prefix))
            if found:
                return found[0]
            time.sleep(0.02)
    raise AssertionError(f"no tools/list_changed reached the idle client in {DEADLINE} s "
                         f"({attempt} changes made; it has {registry.list_tools()})")


def armed(registry: ToolRegistry, name: str, marker: Path) -> Callable[[int], None]:
    """Arm the served watcher through ``name`` (a call that returns at once); the returned
    function makes the n-th change by writing the marker file (no request in flight)."""
    assert registry.invoke(name, {"path": str(marker)}).content == "armed"

    def change(n: int) -> None:
        marker.write_text(str(n), encoding="utf-8")

    return change


def test_an_idle_stdio_client_hears_a_change_made_after_its_call(
        registry: ToolRegistry, served_script: Path, tmp_path: Path) -> None:
    registry.register_from_mcp({"command": sys.executable, "args": [str(served_script)],
                                "cwd": str(tmp_path)}, namespace="s")
    change = armed(registry, "s-arm", tmp_path / "marker.txt")
    name = until_seen(registry, "s-later_", change)
    assert registry.invoke(name, {"x": 21}).content == "42"


def test_an_idle_http_client_hears_a_change_made_after_its_call(
        registry: ToolRegistry, http_url: str, tmp_path: Path) -> None:
    registry.register_from_mcp(http_url, namespace="h")
    change = armed(registry, "h-arm", tmp_path / "marker.txt")
    name = until_seen(registry, "h-later_", change)
    assert registry.invoke(name, {"x": 4}).content == "8"
    registry.close()  # while the server still runs


def _call(url: str, name: str, arguments: dict[str, Any]) -> str:
    """One call by another client (the SDK's), which then leaves."""
    from mcp import Client

    async def main() -> str:
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool(name, arguments)
            return str(result.content[0].text)

    return anyio.run(main)


def test_an_idle_http_client_hears_another_clients_change(registry: ToolRegistry,
                                                          http_url: str) -> None:
    # The change happens inside the other client's call; this client has nothing in flight.
    registry.register_from_mcp(http_url, namespace="a")

    def change(n: int) -> None:
        assert _call(http_url, "grow", {"name": f"from_b_{n}"}) == "grown"

    name = until_seen(registry, "a-from_b_", change)
    assert registry.invoke(name, {"x": 1}).content == "2"
    registry.close()


def test_a_client_that_left_does_not_stop_the_announcement(registry: ToolRegistry,
                                                           http_url: str,
                                                           tmp_path: Path) -> None:
    from mcp import Client

    registry.register_from_mcp(http_url, namespace="a")
    change = armed(registry, "a-arm", tmp_path / "marker.txt")

    async def visit() -> None:  # another client: lists, then closes its session
        async with Client(http_url, mode="legacy") as client:
            await client.list_tools()

    anyio.run(visit)
    name = until_seen(registry, "a-later_", change)
    assert registry.invoke(name, {"x": 3}).content == "6"
    registry.close()


# ----------------------------------------------------------------------------- in process
def _in_process_registry() -> ToolRegistry:
    return ToolRegistry(config=Path(__file__).parent / "servers" / "empty.toml")


def test_one_announcement_per_connection_and_change() -> None:
    """Two requests of one connection in flight at the change: one notification, not two;
    then none in flight: still one."""
    from mcp import Client

    from toolregistry_mcp import build_server

    reg = _in_process_registry()
    gate = threading.Event()
    entered = threading.Semaphore(0)

    def hold() -> str:
        """Wait for the test."""
        entered.release()
        gate.wait(DEADLINE)
        return "held"

    def extra(x: int) -> int:
        """Registered by the test."""
        return x

    reg.register(hold)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            heard.append(message.method)

    async def heard_more_than(count: int) -> bool:
        with anyio.move_on_after(DEADLINE):
            while len(heard) <= count:
                await anyio.sleep(0.01)
            return True
        return False

    async def main() -> list[Any]:
        seen: list[Any] = []
        async with Client(build_server(reg), mode="legacy", message_handler=on_message) as c:
            await c.list_tools()
            async with anyio.create_task_group() as tg:
                tg.start_soon(c.call_tool, "hold", {})
                tg.start_soon(c.call_tool, "hold", {})
                for _ in range(2):
                    with anyio.fail_after(DEADLINE):
                        while not entered.acquire(blocking=False):
                            await anyio.sleep(0.01)
                reg.register(extra, name="extra_1")  # two requests of this client in flight
                await heard_more_than(0)
                gate.set()
            # Both calls were answered after the announcement had been sent: a second copy of
            # it, had there been one, came before their answers and this round trip.
            await c.list_tools(cache_mode="bypass")
            seen.append(len(heard))
            reg.register(extra, name="extra_2")  # nothing in flight
            seen.append(await heard_more_than(seen[0]))
            await c.list_tools(cache_mode="bypass")
            seen.append(len(heard))
            seen.append(sorted(t.name for t in (await c.list_tools(cache_mode="bypass")).tools))
        return seen

    try:
        once, heard_second, total, names = anyio.run(main)
    finally:
        gate.set()
        reg.close()
    assert once == 1, f"one change, two requests of one client in flight: {once} announcements"
    assert heard_second, "a change with no request in flight was not announced"
    assert total == 2
    assert names == ["extra_1", "extra_2", "hold"]


def test_a_closed_connection_is_forgotten() -> None:
    """The server keeps its clients' connections weakly: one that closed is not kept alive
    for announcements."""
    import gc
    import weakref

    from mcp import Client

    from toolregistry_mcp import build_server

    reg = _in_process_registry()
    kept: list[weakref.ref[Any]] = []

    def remember(request: Annotated[Any, Injected("mcp_request")]) -> str:
        """Note this call's connection."""
        kept.append(weakref.ref(request.session._connection))
        return "noted"

    reg.register(remember)
    server = build_server(reg)

    async def main() -> None:
        async with Client(server, mode="legacy") as c:
            await c.list_tools()
            assert (await c.call_tool("remember", {})).content[0].text == "noted"
            assert kept[0]() is not None
        await anyio.sleep(0)

    try:
        anyio.run(main)
        gc.collect()
        assert kept and kept[0]() is None
    finally:
        reg.close()


def test_modern_stdio_connection_gets_no_bare_list_changed(served_script: Path,
                                                           tmp_path: Path) -> None:
    """At 2026-07-28 change notifications travel only on ``subscriptions/listen`` streams;
    the SDK drops a bare one on the shared channel, and the server does not get around that
    (nor does it advertise ``listChanged`` there)."""
    from mcp import Client, StdioServerParameters

    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(message, "method", message))

    params = StdioServerParameters(command=sys.executable, args=[str(served_script)],
                                   cwd=str(tmp_path))

    async def main() -> tuple[Any, list[str]]:
        async with Client(params, mode="2026-07-28", message_handler=on_message) as c:
            assert (await c.call_tool("grow", {"name": "modern"})).content[0].text == "grown"
            await c.call_tool("grow", {"name": "modern_2"})  # the first announcement is done
            names = sorted(t.name for t in (await c.list_tools(cache_mode="bypass")).tools)
            return c.server_capabilities, names

    capabilities, names = anyio.run(main)
    assert "modern" in names and "modern_2" in names
    assert "notifications/tools/list_changed" not in heard
    assert capabilities is None or capabilities.tools is None or \
        not capabilities.tools.list_changed
