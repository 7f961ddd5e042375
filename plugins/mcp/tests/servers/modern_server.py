"""A real MCP server on the SDK's ``MCPServer`` for the 2026-07-28 client tests, over stdio or
streamable HTTP.

    python modern_server.py [--http PORT] [--modern-only] [--ttl-ms N]

Tools: ``add``; ``greet`` (asks the client for a name through an input request);
``grow`` (adds the tool ``extra`` and announces the changed listing); ``shrink`` (removes
``listings`` without a word); ``whoami`` (echoes the
request headers it got, one argument mirrored into ``Mcp-Param-Region``); ``listings`` (how
many ``tools/list`` requests reached the server). ``--modern-only`` refuses, over HTTP, every
request without a 2026-07-28 ``MCP-Protocol-Version`` header (HTTP 400, like a server that
speaks only that revision); ``--ttl-ms`` is the cache hint of its tool listing (``--cache-scope``: private, or public);
``--task-tool`` lists a tool ``research`` that requires task augmentation, which this server
does not offer; ``--bearer TOKEN`` answers HTTP 401 to a request without that bearer token.
With ``MODERN_MARKER`` in its environment it appends ``started`` to that file when it starts
and ``listed`` at each ``tools/list``.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Annotated, Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def build(ttl_ms: int | None, task_tool: bool = False, cache_scope: str = "private"
          ) -> tuple[MCPServer, dict[str, int]]:
    server = MCPServer("modern-server", version="2.0.0")
    seen = {"listings": 0}

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
        """Greet whoever answers."""
        return f"Hello, {who.name}!"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool 'extra'."""

        def extra() -> str:
            """A tool added at run time."""
            return "extra"

        server.add_tool(extra)
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool()
    def shrink() -> str:
        """Remove the tool 'listings' without announcing it."""
        server.remove_tool("listings")
        return "shrunk"

    @server.tool()
    def whoami(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
               ctx: Context) -> str:
        """The request headers this call arrived with."""
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()
                   if k.lower().startswith("mcp-")}
        return json.dumps({"region": region, "headers": headers}, sort_keys=True)

    @server.tool()
    def listings() -> int:
        """How many tools/list requests reached the server."""
        return seen["listings"]

    lowlevel = server._lowlevel_server
    original = lowlevel.get_request_handler("tools/list")
    assert original is not None

    async def counted(ctx: Any, params: Any) -> Any:
        seen["listings"] += 1
        _mark("listed")
        result: Any = await original.handler(ctx, params)
        if ttl_ms is not None:
            result = result.model_copy(update={"ttl_ms": ttl_ms, "cache_scope": cache_scope})
        if task_tool:
            result.tools.append(types.Tool(
                name="research", description="Only callable as a task.",
                input_schema={"type": "object", "properties": {}},
                execution=types.ToolExecution(task_support="required")))
        return result

    lowlevel.add_request_handler("tools/list", original.params_type, counted)
    return server, seen


def _mark(event: str) -> None:
    path = os.environ.get("MODERN_MARKER")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(event + "\n")


def main() -> None:
    _mark("started")
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--modern-only", action="store_true")
    parser.add_argument("--ttl-ms", type=int, default=None)
    parser.add_argument("--task-tool", action="store_true")
    parser.add_argument("--cache-scope", default="private", choices=["private", "public"])
    parser.add_argument("--bearer", default=None, help="a token every request must carry")
    opts = parser.parse_args()
    server, _ = build(opts.ttl_ms, opts.task_tool, opts.cache_scope)
    if opts.http is None:
        server.run("stdio")
        return
    import uvicorn

    app: Any = server.streamable_http_app(host="127.0.0.1")
    if opts.modern_only:
        app = _modern_only(app)
    if opts.bearer:
        app = _bearer(app, opts.bearer)
    uvicorn.run(app, host="127.0.0.1", port=opts.http, log_level="warning")


def _modern_only(app: Any) -> Any:
    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"mcp-protocol-version") != b"2026-07-28":
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": "Bad Request: Missing MCP-Protocol-Version header "
                    "(this server speaks 2026-07-28 only)"}}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return gate


def _bearer(app: Any, token: str) -> Any:
    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(
                b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"www-authenticate", b'Bearer realm="modern"')]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return gate


if __name__ == "__main__":
    main()
