"""A served tool's progress (``ToolContext.report_progress``) and log records reach the MCP
client that called it, in order and before the result; ``logging/setLevel`` (handshake
protocols) and the per-request log level (2026-07-28) decide which records. Real SDK clients
over streamable HTTP and stdio against a real served registry."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

SERVED = Path(__file__).parent / "servers" / "served_registry.py"


@pytest.fixture
def url(web: Any, procs: Any) -> Iterator[str]:
    with web.served({}, procs) as (host, port):
        yield f"http://{host}:{port}/mcp"


class Seen:
    """What the client received, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append(("progress", progress, total, message))

    async def log(self, params: Any) -> None:
        self.events.append(("log", params.level, params.logger, params.data))

    def logs(self) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == "log"]

    def progresses(self) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == "progress"]


def _run(server: Any, steps: list[tuple[str, Any]], seen: Seen, **client: Any) -> list[Any]:
    from mcp import Client

    async def main() -> list[Any]:
        out = []
        async with Client(server, logging_callback=seen.log, **client) as c:
            for what, arg in steps:
                if what == "level":
                    from mcp.shared.exceptions import MCPDeprecationWarning

                    with warnings.catch_warnings():  # logging/setLevel: handshake protocols
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await c.set_logging_level(arg)
                else:
                    name, arguments = arg
                    result = await c.call_tool(name, arguments, progress_callback=seen.progress)
                    seen.events.append(("result", result.content[0].text))
                    out.append(result)
        return out

    return anyio.run(main)


def test_progress_and_logs_over_streamable_http(url: str) -> None:
    seen = Seen()
    _run(url, [("call", ("work", {"steps": 3}))], seen, mode="legacy")
    assert seen.progresses() == [("progress", 1.0, 3.0, "step 1"), ("progress", 2.0, 3.0, "step 2"),
                                 ("progress", 3.0, 3.0, "step 3")] or \
        seen.progresses()[-1] == ("progress", 3.0, 3.0, "step 3")  # bursts may be coalesced
    assert seen.logs() == [
        ("log", "info", "served.tools", "step 1 of 3"),
        ("log", "info", "served.tools", "step 2 of 3"),
        ("log", "info", "served.tools", "step 3 of 3"),
        ("log", "warning", "served.tools", "done with 3 steps"),
    ]
    # Everything the tool said came before its result.
    assert seen.events[-1] == ("result", "worked 3 steps")


def test_set_level_changes_what_is_forwarded(url: str) -> None:
    seen = Seen()
    _run(url, [("level", "warning"), ("call", ("work", {"steps": 2})),
               ("level", "debug"), ("call", ("work", {"steps": 1}))], seen, mode="legacy")
    logs = seen.logs()
    assert logs[0] == ("log", "warning", "served.tools", "done with 2 steps")
    assert [e[1] for e in logs[1:]] == ["debug", "info", "warning"]
    assert logs[1][3] == "step 1 of 1 (debug)"


def test_an_async_tool_reports_too(url: str) -> None:
    seen = Seen()
    _run(url, [("call", ("awork", {"steps": 2}))], seen, mode="legacy")
    assert seen.progresses()[-1] == ("progress", 2.0, 2.0, None)
    assert [e[3] for e in seen.logs()] == ["async step 1", "async step 2"]
    assert seen.events[-1] == ("result", "async worked 2 steps")


def test_no_progress_token_no_progress(url: str) -> None:
    from mcp import Client

    async def main() -> str:
        async with Client(url, mode="legacy") as c:
            result = await c.call_tool("work", {"steps": 2})
            return str(result.content[0].text)

    assert anyio.run(main) == "worked 2 steps"


def test_modern_protocol_log_level_per_request(url: str) -> None:
    seen = Seen()
    _run(url, [("call", ("work", {"steps": 1}))], seen, log_level="warning")
    assert seen.logs() == [("log", "warning", "served.tools", "done with 1 steps")]
    assert seen.progresses()[-1][:3] == ("progress", 1.0, 1.0)
    seen = Seen()
    _run(url, [("call", ("work", {"steps": 1}))], seen)  # no opt-in: no logs
    assert seen.logs() == []


def test_progress_and_logs_over_stdio() -> None:
    from mcp import StdioServerParameters

    seen = Seen()
    params = StdioServerParameters(command=sys.executable, args=[str(SERVED), "--stdio"],
                                   cwd=str(SERVED.parent))
    _run(params, [("call", ("work", {"steps": 2}))], seen, mode="legacy")
    assert [e[3] for e in seen.logs()] == ["step 1 of 2", "step 2 of 2", "done with 2 steps"]
    assert seen.progresses()[-1] == ("progress", 2.0, 2.0, "step 2")
    assert seen.events[-1] == ("result", "worked 2 steps")


def test_progress_from_an_mcp_source_reaches_the_application(url: str, registry: Any) -> None:
    from toolregistry.types import reporting_progress

    registry.register_from_mcp(url, namespace="srv")
    seen: list[tuple[float, float | None, str | None]] = []
    with reporting_progress(lambda p, t, m: seen.append((p, t, m))):
        result = registry.invoke("srv-work", {"steps": 3})
    assert result.content == "worked 3 steps"
    assert seen and seen[-1] == (3.0, 3.0, "step 3")
    assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)

    async def main() -> tuple[Any, list[Any]]:
        got: list[Any] = []
        with reporting_progress(lambda p, t, m: got.append((p, t, m))):
            out = await registry.ainvoke("srv-awork", {"steps": 2})
        return out, got

    out, got = anyio.run(main)
    assert out.content == "async worked 2 steps" and got[-1] == (2.0, 2.0, None)
    # No reporter: no progress token is sent, the call is as before.
    assert registry.invoke("srv-work", {"steps": 1}).content == "worked 1 steps"


def test_progress_passes_through_two_served_registries(web: Any, procs: Any, url: str,
                                                       tmp_path: Path, registry: Any) -> None:
    # A registry that serves an MCP source of its own: progress travels both hops.
    import textwrap

    script = tmp_path / "relay.py"
    script.write_text(textwrap.dedent(f'''
        import sys
        from toolregistry import ToolRegistry
        from toolregistry_mcp import serve

        registry = ToolRegistry(name="relay")
        registry.register_from_mcp({url!r}, namespace="inner")
        serve(registry)
    '''), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    registry.register_from_mcp({"command": sys.executable, "args": [str(script)],
                                "cwd": str(tmp_path)}, namespace="relay")
    from toolregistry.types import reporting_progress

    seen: list[Any] = []
    with reporting_progress(lambda p, t, m: seen.append((p, t, m))):
        result = registry.invoke("relay-inner-work", {"steps": 2})
    assert result.content == "worked 2 steps"
    assert seen and seen[-1] == (2.0, 2.0, "step 2")
