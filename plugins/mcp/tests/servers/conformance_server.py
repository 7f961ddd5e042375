"""The tools the official MCP conformance suite's server scenarios call, as a toolregistry
served over streamable HTTP on 127.0.0.1:argv[1] (the scenarios for features a tool registry
does not offer -- prompts, resources, completion -- have no tools here). At 2026-07-28 the
``test_input_required_result_*`` tools ask their client for input with the SDK's
``InputRequiredResult`` and read the answers from their injected MCP request."""

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
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                       "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                       "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}},
               "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    callable=lambda **kw: _describe(str(kw.get("name")), kw.get("address"))))


def _region(region: str, query: str = "") -> str:
    return f"{query} in {region}"


# A parameter the client must also send as an Mcp-Param-Region header (2026-07-28).
registry.register(Tool(
    name="test_custom_header", description="Looks something up in a region",
    parameters={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"}}, "required": ["region"]},
    callable=_region))

Request = Annotated[Any, Injected("mcp_request")]


def _ask(asks: dict[str, Any], state: str | None = None) -> Any:
    """An InputRequiredResult asking the client for ``asks``, each one it can answer."""
    import mcp_types as types

    return types.InputRequiredResult.model_validate(
        {"inputRequests": asks, **({"requestState": state} if state else {})})


def _answers(request: Request) -> tuple[dict[str, Any], str | None]:
    params = request.params or {}
    answers = params.get("inputResponses")
    return (answers if isinstance(answers, dict) else {}), params.get("requestState")


def _elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {
            "type": "object", "properties": {field: {"type": kind}}, "required": [field]}}}


def _sample(text: str, tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def _content(answer: Any, key: str) -> Any:
    return (answer.get("content") or {}).get(key) if isinstance(answer, dict) else None


@registry.register
def test_input_required_result_elicitation(request: Request) -> Any:
    """Asks the user's name, then greets them."""
    answers, _ = _answers(request)
    name = _content(answers.get("user_name"), "name")
    if not isinstance(name, str):
        return _ask({"user_name": _elicit("What is your name?", "name")})
    return f"Hello, {name}!"


@registry.register
def test_input_required_result_sampling(request: Request) -> Any:
    """Asks the client's model a question."""
    answers, _ = _answers(request)
    answer = answers.get("capital_question")
    if not isinstance(answer, dict):
        return _ask({"capital_question": _sample("What is the capital of France?", 100)})
    return f"The model said: {(answer.get('content') or {}).get('text')}"


@registry.register
def test_input_required_result_list_roots(request: Request) -> Any:
    """Asks the client for its roots."""
    answers, _ = _answers(request)
    answer = answers.get("client_roots")
    if not isinstance(answer, dict) or not isinstance(answer.get("roots"), list):
        return _ask({"client_roots": ROOTS})
    return "Roots: " + ", ".join(str(r.get("uri")) for r in answer["roots"])


def _confirmed(request: Request, state_sent: str, done: str) -> Any:
    """Asks for a confirmation with ``state_sent``; ``done`` once it comes back with it."""
    answers, state = _answers(request)
    if "confirm" not in answers or state != state_sent:
        return _ask({"confirm": _elicit("Please confirm", "ok", "boolean")}, state_sent)
    return done


@registry.register
def test_input_required_result_request_state(request: Request) -> Any:
    """Asks for a confirmation, with state it gets back."""
    return _confirmed(request, "confirm-1", "Confirmed: state-ok")


@registry.register
def test_input_required_result_multiple_inputs(request: Request) -> Any:
    """Asks for a name, a greeting and the roots at once."""
    answers, state = _answers(request)
    keys = {"user_name", "greeting", "client_roots"}
    if not keys <= set(answers) or state != "multi-1":
        return _ask({"user_name": _elicit("What is your name?", "name"),
                     "greeting": _sample("Generate a greeting", 50),
                     "client_roots": ROOTS}, "multi-1")
    return f"Hello, {_content(answers['user_name'], 'name')}: all inputs received"


@registry.register
def test_input_required_result_multi_round(request: Request) -> Any:
    """Asks a name, then a colour."""
    answers, state = _answers(request)
    if state == "round-2" and "step2" in answers:
        return f"Done: {_content(answers['step2'], 'color')}"
    if state == "round-1" and "step1" in answers:
        return _ask({"step2": _elicit("Step 2: What is your favorite color?", "color")},
                    "round-2")
    return _ask({"step1": _elicit("Step 1: What is your name?", "name")}, "round-1")


@registry.register
def test_input_required_result_tampered_state(request: Request) -> Any:
    """Asks a confirmation; its state is sealed by the server (a changed one is refused)."""
    return _confirmed(request, "sealed-1", "state-ok")


@registry.register
def test_input_required_result_capabilities(request: Request) -> Any:
    """Asks for what the client declared it can answer (elicitation, sampling, roots)."""
    answers, _ = _answers(request)
    declared = request.session.client_capabilities
    asks = {}
    if getattr(declared, "elicitation", None) is not None:
        asks["user_name"] = _elicit("What is your name?", "name")
    if getattr(declared, "sampling", None) is not None:
        asks["greeting"] = _sample("Generate a greeting", 50)
    if getattr(declared, "roots", None) is not None:
        asks["client_roots"] = ROOTS
    if not asks or set(asks) <= set(answers):
        return "capabilities respected"
    return _ask(asks)


@registry.register
def test_streaming_elicitation(request: Request) -> Any:
    """Asks the user something: in the call's answer, never as a request of its own."""
    answers, _ = _answers(request)
    if "answer" not in answers:
        return _ask({"answer": _elicit("Anything to add?", "text")})
    return "streamed"


@registry.register
async def test_logging_tool() -> str:
    """Logs; the client hears it only when it asked for a log level."""
    log.info("Tool execution started")
    return "logged"


@registry.register
def test_trigger_tool_change() -> str:
    """Changes the tool list (a tool comes or goes): listeners hear of it."""
    if registry.get_tool("changing_tool") is None:
        registry.register(lambda: "here", name="changing_tool", description="Comes and goes.")
    else:
        registry.unregister("changing_tool")
    return "tools changed"


@registry.register
def test_missing_capability(request: Request) -> Any:
    """Needs the client's sampling: refused (-32021) when the client did not declare it."""
    from mcp.shared.exceptions import MCPError

    declared = request.session.client_capabilities
    if getattr(declared, "sampling", None) is None:
        return MCPError(code=-32021, message="Missing required client capability: sampling",
                        data={"requiredCapabilities": {"sampling": {}}})
    return "the client can sample"


if __name__ == "__main__":
    serve(registry, "streamable-http", port=int(sys.argv[1]),
          cache_hints={"tools/list": {"ttl-ms": 30000, "cache-scope": "public"}})
