"""The tools the official MCP conformance suite's server scenarios call, as a toolregistry
served over streamable HTTP on 127.0.0.1:argv[1] (the scenarios for features a tool registry
does not offer -- prompts, resources, sampling, elicitation, completion -- have no tools here)."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Annotated, Any

from toolregistry import (
    Audio,
    EmbeddedResource,
    Image,
    Injected,
    Tool,
    ToolContext,
    ToolRegistry,
)
from toolregistry_mcp import serve

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")

registry = ToolRegistry(name="conformance")
log = logging.getLogger("conformance")


@registry.register
def test_simple_text() -> str:
    """Returns simple text."""
    return "This is a simple text response for testing."


@registry.register
def test_image_content() -> Image:
    """Returns a 1x1 PNG."""
    return Image.from_bytes(PNG, "image/png")


@registry.register
def test_multiple_content_types() -> tuple[str, Image, EmbeddedResource]:
    """Returns text, an image and an embedded resource."""
    return ("Multiple content types test:", Image.from_bytes(PNG, "image/png"),
            EmbeddedResource.from_text("test://mixed-content-resource",
                                       '{"test":"data","value":123}', "application/json"))


# A minimal WAV: the RIFF header of a mono 8 kHz 8-bit stream and four samples.
WAV = (b"RIFF(\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00"
       b"@\x1f\x00\x00\x01\x00\x08\x00data\x04\x00\x00\x00\x80\x80\x80\x80")


@registry.register
def test_audio_content() -> Audio:
    """Returns a short WAV clip."""
    return Audio.from_bytes(WAV)


@registry.register
def test_embedded_resource() -> EmbeddedResource:
    """Returns a text resource inline."""
    return EmbeddedResource.from_text("test://embedded-resource",
                                      "This is an embedded resource content.", "text/plain")


@registry.register
async def test_tool_with_logging() -> str:
    """Logs three messages while it runs."""
    log.info("Tool execution started")
    await asyncio.sleep(0.05)
    log.info("Tool processing data")
    await asyncio.sleep(0.05)
    log.info("Tool execution completed")
    return "Tool with logging executed successfully"


@registry.register
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@registry.register
async def test_tool_with_progress(ctx: ToolContext) -> str:
    """Reports 0, 50 and 100 of 100."""
    ctx.report_progress(0, 100)
    await asyncio.sleep(0.05)
    ctx.report_progress(50, 100)
    await asyncio.sleep(0.05)
    ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@registry.register
async def test_reconnection(request: Annotated[Any, Injected("mcp_request")]) -> str:
    """Closes its SSE stream mid-call; the client reconnects and still gets the result."""
    await asyncio.sleep(0.05)
    if request.close_sse_stream is not None:
        await request.close_sse_stream()
    await asyncio.sleep(0.3)
    return "Reconnection test completed"


def _describe(name: str, address: dict[str, str] | None = None) -> str:
    return f"{name} at {address}" if address else name


# A schema-first tool: its JSON Schema 2020-12 keywords must reach the client unchanged.
registry.register(Tool(
    name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    callable=_describe))


if __name__ == "__main__":
    serve(registry, "streamable-http", port=int(sys.argv[1]))
