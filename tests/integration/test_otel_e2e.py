"""One trace from the agent through the registry into the MCP server and the HTTP service that
did the work (issue 21): the OpenTelemetry SDK in this process and in the served registry's
process, a real MCP server over stdio and over streamable HTTP, and the demo HTTP service
behind an OpenAPI source (which records the headers it received)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolregistry import ToolRegistry

from .conftest import free_port, listening

EXPORTER = InMemorySpanExporter()
if not isinstance(trace.get_tracer_provider(), TracerProvider):
    _provider = TracerProvider()
    _provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(_provider)
tracer = trace.get_tracer("agent")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The served registry: its own SDK (a provider in that process), one tool that answers what
# trace it runs in, as the server process sees it.
SERVED = textwrap.dedent('''
    import sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from toolregistry import ToolRegistry
    from toolregistry_mcp import serve

    registry = ToolRegistry(name="served")

    @registry.register
    def seen_trace() -> dict:
        """The trace this call runs in, as the server sees it."""
        span = trace.get_current_span()
        ctx = span.get_span_context()
        parent = getattr(span, "parent", None)
        return {"trace_id": format(ctx.trace_id, "032x"),
                "parent_span_id": format(parent.span_id, "016x") if parent else None,
                "span_name": getattr(span, "name", None)}

    @registry.register
    def server_spans() -> list:
        """The spans this process finished: name, kind, id, parent id."""
        return [{"name": s.name, "kind": s.kind.name,
                 "span_id": format(s.context.span_id, "016x"),
                 "parent_span_id": format(s.parent.span_id, "016x") if s.parent else None}
                for s in exporter.get_finished_spans()]

    if sys.argv[1:2] == ["--http"]:
        serve(registry, "streamable-http", port=int(sys.argv[2]))
    else:
        serve(registry)
''')


@pytest.fixture(scope="module")
def served_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("otel") / "served_otel.py"
    path.write_text(SERVED, "utf-8")
    return path


@pytest.fixture
def http_server(served_script: Path) -> Iterator[str]:
    port = free_port()
    with listening([sys.executable, str(served_script), "--http", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


def _check_continuity(registry: ToolRegistry, tool: str) -> None:
    EXPORTER.clear()
    with tracer.start_as_current_span("agent turn") as turn:
        result = registry.invoke(tool, {})
    assert result.ok, result.text
    seen = result.value if isinstance(result.value, dict) else json.loads(result.text)
    here = {s.name: s for s in EXPORTER.get_finished_spans()}
    client_span = here[f"execute_tool {tool}"]
    assert client_span.parent is not None
    assert client_span.parent.span_id == turn.get_span_context().span_id
    # the server's own execute_tool span continues the agent's trace, under our tool span:
    # directly, or under the MCP SDK's own client span ("MCP send tools/call ...", which
    # recent SDKs emit as a child of the current span, ours)
    assert seen["trace_id"] == format(turn.get_span_context().trace_id, "032x")
    assert seen["span_name"] == "execute_tool seen_trace"
    # ... as a child of the MCP SDK's own SERVER span of the request (its middleware, on by
    # default), which continues the caller's trace itself
    served = registry.invoke(tool.replace("seen_trace", "server_spans"), {})
    assert served.ok, served.text
    listed = served.value if isinstance(served.value, list) else json.loads(served.text)
    server = {s["span_id"]: s for s in listed}
    sdk_span = server[seen["parent_span_id"]]
    assert sdk_span["kind"] == "SERVER" and sdk_span["name"].startswith("tools/call"), sdk_span
    # whose parent is ours: directly, or the MCP SDK's own client span ("MCP send tools/call
    # ...", which recent SDKs emit as a child of the current span, ours)
    spans = {format(s.context.span_id, "016x"): s for s in EXPORTER.get_finished_spans()}
    parent = spans[sdk_span["parent_span_id"]]
    if parent is not client_span:
        assert parent.parent is not None, parent.name
        assert parent.parent.span_id == client_span.context.span_id, parent.name


def test_trace_continues_into_an_mcp_server_over_stdio(served_script: Path) -> None:
    registry = ToolRegistry()
    try:
        registry.register_from_mcp({"command": sys.executable, "args": [str(served_script)]},
                                   namespace="srv")
        load = [s for s in EXPORTER.get_finished_spans() if s.name == "mcp.load"]
        assert load and load[-1].attributes["mcp.transport"] == "stdio"
        assert load[-1].attributes["toolregistry.tools"] == 2
        assert load[-1].kind is trace.SpanKind.CLIENT
        _check_continuity(registry, "srv-seen_trace")
    finally:
        registry.close()


def test_trace_continues_into_an_mcp_server_over_http(http_server: str) -> None:
    registry = ToolRegistry()
    try:
        registry.register_from_mcp(http_server, namespace="srv")
        _check_continuity(registry, "srv-seen_trace")
    finally:
        registry.close()


def test_openapi_calls_carry_traceparent_to_the_http_service(api_url: str) -> None:
    from demo_api import RECEIVED_HEADERS  # the demo service records what it received

    registry = ToolRegistry()
    try:
        EXPORTER.clear()
        registry.register_from_openapi(str(EXAMPLES / "demo_api.yaml"), base_url=api_url,
                                       namespace="pets")
        (load,) = [s for s in EXPORTER.get_finished_spans() if s.name == "openapi.load"]
        assert load.attributes["toolregistry.tools"] >= 1
        assert load.attributes["openapi.spec"] == "demo_api.yaml"
        name = next(n for n in registry.list_tools()
                    if registry[n].provenance.original_name == "listPets")
        RECEIVED_HEADERS.clear()
        with tracer.start_as_current_span("agent turn") as turn:
            result = registry.invoke(name, {})
        assert result.ok, result.text
        tool_span = next(s for s in EXPORTER.get_finished_spans()
                         if s.name == f"execute_tool {name}")
        sent = [h for h in RECEIVED_HEADERS if "traceparent" in h]
        assert sent, RECEIVED_HEADERS
        _, trace_id, parent_id, _flags = sent[-1]["traceparent"].split("-")
        assert trace_id == format(turn.get_span_context().trace_id, "032x")
        assert parent_id == format(tool_span.context.span_id, "016x")
    finally:
        registry.close()


def test_discovery_queries_become_spans(api_url: str) -> None:
    registry = ToolRegistry(tool_discovery=True)

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return city

    registry.register(get_weather)
    EXPORTER.clear()
    result = registry.invoke("discover_tools", {"query": "weather in a city"})
    assert result.ok, result.text
    (query,) = [s for s in EXPORTER.get_finished_spans() if s.name == "discovery.query"]
    assert query.attributes["discovery.hits"] >= 1
    assert "discovery.query.text" not in query.attributes  # content capture is off
    call = next(s for s in EXPORTER.get_finished_spans()
                if s.name == "execute_tool discover_tools")
    assert query.parent is not None and query.parent.span_id == call.context.span_id


def test_toolcall_reason_is_stripped_before_the_span_records_arguments(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    registry = ToolRegistry(think_augment=True)

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    registry.register(add)
    EXPORTER.clear()
    (result,) = registry.execute_tool_calls([{
        "id": "c1", "type": "function", "function": {"name": "add", "arguments": json.dumps(
            {"a": 1, "b": 2, "toolcall_reason": "the user asked for a sum"})}}])
    assert result.text == "3"
    span = next(s for s in EXPORTER.get_finished_spans() if s.name == "execute_tool add")
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert span.attributes["toolregistry.toolcall_reason"] == "the user asked for a sum"


@pytest.fixture
def refusing_server() -> Iterator[int]:
    """A real HTTP server on 127.0.0.1 that answers every request 401."""
    import http.server
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("content-length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_failed_loads_keep_url_credentials_off_their_spans(refusing_server: int) -> None:
    port = refusing_server
    registry = ToolRegistry()
    EXPORTER.clear()
    try:
        with pytest.raises(Exception, match="401"):
            registry.register_from_openapi(
                f"http://bob:pa55word@127.0.0.1:{port}/openapi.json?token=tok-123")
        with pytest.raises(Exception, match="401"):
            registry.register_from_mcp({"url": f"http://bob:pa55word@127.0.0.1:{port}/mcp"
                                               "?token=tok-123"})
    finally:
        registry.close()
    loads = [s for s in EXPORTER.get_finished_spans() if s.name in ("openapi.load", "mcp.load")]
    assert sorted(s.name for s in loads) == ["mcp.load", "openapi.load"]
    for span in loads:
        texts = [span.status.description or ""] + [
            str(v) for e in span.events for v in (e.attributes or {}).values()]
        assert any(f"127.0.0.1:{port}/" in t for t in texts), texts  # still says where
        for text in texts:
            assert "pa55word" not in text and "tok-123" not in text, (span.name, text)
