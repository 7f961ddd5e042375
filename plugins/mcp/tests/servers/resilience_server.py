"""A real MCP server on the SDK's ``MCPServer`` for the reconnect and timeout tests, over stdio
or streamable HTTP.

    python resilience_server.py --marker FILE [--http PORT] [--legacy]

Every call appends a line to ``--marker`` (``count <tag>``, ``peek <tag>``, ``cancelled
<tool>``), so a test sees what the server ran, across restarts. ``count`` is an ordinary
(non-idempotent) tool, ``peek`` is read-only and idempotent; with ``die=true`` either exits
the process in the middle of the call (``peek`` only the first time: a ``FILE.died`` file
remembers it). ``progress`` reports progress every ``every`` seconds for ``seconds``;
``silent`` sleeps; ``endless`` reports progress forever.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer


def build(marker: Path) -> MCPServer:
    server = MCPServer("resilience-server", version="1.0.0")

    def mark(line: str) -> None:
        with marker.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    @server.tool()
    def count(tag: str, die: bool = False) -> str:
        """Count a call (not idempotent); die=true exits mid-call."""
        mark(f"count {tag}")
        if die:
            os._exit(17)
        return f"counted {tag}"

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def peek(tag: str, die: bool = False) -> str:
        """Read-only: die=true exits mid-call the first time only."""
        mark(f"peek {tag}")
        died = marker.with_suffix(".died")
        if die and not died.exists():
            died.write_text("1", encoding="utf-8")
            os._exit(17)
        return f"peeked {tag}"

    async def guarded(name: str, body: Any) -> str:
        try:
            await body()
        except anyio.get_cancelled_exc_class():
            mark(f"cancelled {name}")
            raise
        return "done"

    @server.tool()
    async def progress(seconds: float, every: float, ctx: Context) -> str:
        """Report progress every `every` seconds for `seconds`, then answer."""
        async def body() -> None:
            steps = int(seconds / every)
            for i in range(steps):
                await anyio.sleep(every)
                await ctx.report_progress(i + 1, steps)

        return await guarded("progress", body)

    @server.tool()
    async def silent(seconds: float) -> str:
        """Sleep without a word."""
        return await guarded("silent", lambda: anyio.sleep(seconds))

    @server.tool()
    async def endless(every: float, ctx: Context) -> str:
        """Report progress forever."""
        async def body() -> None:
            i = 0
            while True:
                await anyio.sleep(every)
                i += 1
                await ctx.report_progress(i)

        return await guarded("endless", body)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--marker", required=True)
    opts = parser.parse_args()
    server = build(Path(opts.marker))
    if opts.http is None:
        server.run("stdio")
        return
    import uvicorn

    app: Any = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=opts.http, log_level="warning")


if __name__ == "__main__":
    main()
