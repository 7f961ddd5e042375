"""A registry served as an MCP server (stdio or streamable HTTP).

Every enabled tool is listed from ``registry.get_schemas(api_format="mcp")`` (so
``schema_transform`` hooks, think-augment included, apply) and called through
``registry.ainvoke`` (so validation, ``pre_invoke`` / ``post_invoke`` and timeouts apply);
error results become ``isError`` results. Registry changes are announced to connected
clients with ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

from toolregistry.plugin import log

from ._convert import to_call_result

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolregistry import ToolRegistry
    from toolregistry.events import ChangeEvent

__all__ = ["ServeOptions", "aserve", "build_server", "main", "serve"]

ServeTransport = Literal["stdio", "streamable-http"]


@frozen(kw_only=True)
class ServeOptions:
    """How :func:`serve` exposes a registry (also the ``toolregistry serve`` options)."""

    transport: ServeTransport = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    name: str | None = None
    include_deferred: bool = False
    json_response: bool = False
    stateless: bool = False


def build_server(registry: ToolRegistry, *, name: str | None = None,
                 include_deferred: bool = False, instructions: str | None = None) -> Server[Any]:
    """The SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call`` from
    ``registry``. Use it to mount the registry into your own MCP application."""
    import mcp_types as types

    sessions: weakref.WeakSet[Any] = weakref.WeakSet()
    loop_ref: dict[str, asyncio.AbstractEventLoop] = {}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        sessions.add(ctx.session)
        loop_ref["loop"] = asyncio.get_running_loop()
        schemas = registry.get_schemas(api_format="mcp", include_deferred=include_deferred)
        return types.ListToolsResult(tools=[types.Tool.model_validate(s) for s in schemas])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        sessions.add(ctx.session)
        loop_ref["loop"] = asyncio.get_running_loop()
        result = await registry.ainvoke(params.name, dict(params.arguments or {}))
        tool = registry.get_tool(params.name)
        wants_structured = tool is not None and tool.output_schema is not None
        out = to_call_result(result)
        if wants_structured and out.structured_content is None and not result.is_error:
            # A tool with an outputSchema must send structuredContent; its text is JSON.
            try:
                parsed = json.loads(result.text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                out.structured_content = parsed
        return out

    async def announce() -> None:
        for session in list(sessions):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a client that went away
                log.debug("mcp.notify_failed", error=f"{type(exc).__name__}: {exc}")

    def changed(event: ChangeEvent) -> None:
        if event.kind == "metadata" and not event.details.get("schema_changed"):
            return
        loop = loop_ref.get("loop")
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: loop.create_task(announce()))

    registry.on_change(changed)
    return _server_class()(
        name or getattr(registry, "name", None) or "toolregistry",
        version=_version(),
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@functools.cache
def _server_class() -> type[Server[Any]]:
    """The SDK's ``Server``, advertising ``tools.listChanged`` by default.

    The registry announces every change, on every transport. The SDK's streamable-HTTP
    session manager builds each session's ``initialize`` answer from
    ``create_initialization_options()`` with no arguments, so the default is where the
    capability must be said (issue 15.5: HTTP advertised ``listChanged: false``).
    """
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.models import InitializationOptions

    class RegistryServer(Server[Any]):
        def create_initialization_options(
            self, notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> InitializationOptions:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities, extensions)

    return RegistryServer


async def aserve(registry: ToolRegistry, transport: ServeTransport = "stdio", *,
                 host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp",
                 name: str | None = None, include_deferred: bool = False,
                 json_response: bool = False, stateless: bool = False) -> None:
    """Async :func:`serve` (runs until cancelled, or until stdin closes for stdio)."""
    server = build_server(registry, name=name, include_deferred=include_deferred)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        log.info("mcp.serving", transport="stdio", tools=len(registry))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    if transport != "streamable-http":
        raise ValueError(f"serve(transport={transport!r}): use 'stdio' or 'streamable-http'")
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host,
                                     json_response=json_response, stateless_http=stateless)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    log.info("mcp.serving", transport="streamable-http", url=f"http://{host}:{port}{path}",
             tools=len(registry))
    await uvicorn.Server(config).serve()


def serve(registry: ToolRegistry, transport: ServeTransport = "stdio", *,
          host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp",
          name: str | None = None, include_deferred: bool = False,
          json_response: bool = False, stateless: bool = False) -> None:
    """Serve every tool of ``registry`` as an MCP server; blocks until the server stops.

    ``transport="stdio"`` speaks MCP on stdin/stdout (nothing else may write to stdout);
    ``"streamable-http"`` listens on ``http://host:port{path}`` (loopback by default, with
    the SDK's DNS-rebinding protection). Deferred tools are hidden unless
    ``include_deferred=True`` (discovery finds them).
    """
    import anyio

    anyio.run(lambda: aserve(registry, transport, host=host, port=port, path=path, name=name,
                             include_deferred=include_deferred, json_response=json_response,
                             stateless=stateless))


def main(argv: list[str] | None = None) -> int:
    """``python -m toolregistry_mcp serve``: serve the registry of ``[tool.toolregistry]``
    (the same options as ``toolregistry serve``)."""
    import argparse

    from toolregistry.plugin import CommandContext

    from . import _cli

    parser = argparse.ArgumentParser(prog="python -m toolregistry_mcp",
                                     description="Serve a toolregistry over MCP.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help=_cli.HELP)
    p.add_argument("--config", help="pyproject.toml with [tool.toolregistry] (default: nearest)")
    _cli.arguments(p)
    args = parser.parse_args(argv)
    context = CommandContext(args, args.config)
    try:
        return _cli.run(context)
    finally:
        context.close()


def _version() -> str:
    from ._client import _version as v

    return v()
