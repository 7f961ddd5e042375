"""A real MCP server (the SDK's low-level Server) whose tools return each content type: audio,
embedded text and blob resources, a resource link, an image, structured content with and
without text, and all of them at once. Over stdio, or streamable HTTP with ``--http PORT``.
"""

from __future__ import annotations

import argparse
import base64
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server

WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00"
PDF = b"%PDF-1.4\n%%EOF\n"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
WEATHER = {"city": "Oslo", "temp": 21}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


AUDIO = types.AudioContent(type="audio", data=_b64(WAV), mime_type="audio/wav")
TEXT_RESOURCE = types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
    uri="file:///notes.txt", mime_type="text/plain", text="remember the milk"))
BLOB_RESOURCE = types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
    uri="file:///report.pdf", mime_type="application/pdf", blob=_b64(PDF)))
LINK = types.ResourceLink(type="resource_link", uri="file:///big.csv", name="big.csv",
                          description="a large file", mime_type="text/csv")
IMAGE = types.ImageContent(type="image", data=_b64(PNG), mime_type="image/png")

RESULTS: dict[str, types.CallToolResult] = {
    "audio": types.CallToolResult(content=[AUDIO]),
    "text_resource": types.CallToolResult(content=[TEXT_RESOURCE]),
    "blob_resource": types.CallToolResult(content=[BLOB_RESOURCE]),
    "link": types.CallToolResult(content=[LINK]),
    "structured": types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(WEATHER))],
        structured_content=WEATHER),
    "structured_only": types.CallToolResult(content=[], structured_content=WEATHER),
    "everything": types.CallToolResult(content=[
        types.TextContent(type="text", text="all of it"), IMAGE, AUDIO, TEXT_RESOURCE,
        BLOB_RESOURCE, LINK], structured_content=WEATHER),
}
OUTPUT_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"},
                                                  "temp": {"type": "number"}}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    opts = parser.parse_args()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=f"Returns {name}.",
                       input_schema={"type": "object", "properties": {}},
                       output_schema=OUTPUT_SCHEMA if result.structured_content else None)
            for name, result in RESULTS.items()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return RESULTS[params.name]

    server: Server[Any] = Server("content", version="1.0.0", on_list_tools=list_tools,
                                 on_call_tool=call_tool)
    if opts.http is None:
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options(
                    NotificationOptions()))

        anyio.run(run_stdio)
        return

    import uvicorn

    uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1",
                port=opts.http, log_level="warning")


if __name__ == "__main__":
    main()
