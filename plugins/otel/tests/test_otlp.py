"""The real OTLP/HTTP exporter sends the registry's spans to a receiver on 127.0.0.1, which
decodes the protobuf payload as a collector would."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from toolregistry import ToolRegistry


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.paths.append(self.path)
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.server.requests.append(request)
        payload = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_spans_reach_an_otlp_http_receiver(receiver: Receiver, extra: list[Any]) -> None:
    port = receiver.server_address[1]
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
    extra.append(processor)
    reg = ToolRegistry()

    def lookup(city: str) -> str:
        """Look a city up."""
        if city == "nowhere":
            raise LookupError("no such city")
        return city.upper()

    reg.register(lookup)
    reg.execute_tool_calls([
        {"id": "c1", "type": "function", "function": {"name": "lookup",
                                                       "arguments": '{"city": "oslo"}'}},
        {"id": "c2", "type": "function", "function": {"name": "lookup",
                                                       "arguments": '{"city": "nowhere"}'}}])
    assert processor.force_flush(10_000)
    spans = [span for request in receiver.requests for rs in request.resource_spans
             for ss in rs.scope_spans if ss.scope.name == "toolregistry-otel"
             for span in ss.spans]
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    by_call = {}
    for span in spans:
        attrs = {a.key: a.value for a in span.attributes}
        if span.name == "execute_tool lookup":
            by_call[attrs["gen_ai.tool.call.id"].string_value] = (span, attrs)
    assert set(by_call) == {"c1", "c2"}
    ok, failed = by_call["c1"][1], by_call["c2"][1]
    assert ok["gen_ai.operation.name"].string_value == "execute_tool"
    assert "error.type" not in ok
    assert failed["error.type"].string_value == "execution"
    (batch,) = [s for s in spans if s.name == "execute_tool_batch"]
    assert {by_call[c][0].parent_span_id for c in by_call} == {batch.span_id}
    assert len({s.trace_id for s in spans}) == 1


AGENT = textwrap.dedent("""
    import sys
    from toolregistry import ToolRegistry

    registry = ToolRegistry(config=sys.argv[1])

    @registry.register
    def lookup(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        return city.upper()

    print(registry.invoke("lookup", {"city": "oslo"}, call_id="c1").text)
    registry.close()
""")


def _run_agent(tmp_path: Path, table: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "pyproject.toml"
    config.write_text(f"[tool.toolregistry.plugins.otel]\n{table}\n", "utf-8")
    script = tmp_path / "agent.py"
    script.write_text(AGENT, "utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "TOOLREGISTRY_"))}
    return subprocess.run([sys.executable, str(script), str(config)], capture_output=True,
                          text=True, timeout=120, env=env, check=True)


def test_the_table_sets_up_the_sdk_with_an_otlp_exporter(receiver: Receiver,
                                                         tmp_path: Path) -> None:
    port = receiver.server_address[1]
    proc = _run_agent(tmp_path, f'exporter = "otlp"\nendpoint = "http://127.0.0.1:{port}"\n'
                                'service-name = "my-agent"')
    assert proc.stdout == "OSLO\n"
    assert "/v1/traces" in receiver.paths and "/v1/metrics" in receiver.paths
    spans = [(rs, span) for request in receiver.requests for rs in request.resource_spans
             for ss in rs.scope_spans for span in ss.spans]
    [resource_spans] = [rs for rs, s in spans if s.name == "execute_tool lookup"]
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "my-agent"


def test_the_table_sets_up_the_sdk_with_a_console_exporter(tmp_path: Path) -> None:
    proc = _run_agent(tmp_path, 'exporter = "console"\nmetrics = false')
    assert proc.stdout == "OSLO\n"  # stdout is left alone (an MCP stdio channel)
    assert '"name": "execute_tool lookup"' in proc.stderr


def test_an_application_provider_is_kept(spans: Any, tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.otel]\nexporter = "console"\n', "utf-8")
    with ToolRegistry(config=config) as reg:
        reg.register(len, name="size")
        reg.invoke("size", {"obj": "abc"})
    assert [s.name for s in spans.get_finished_spans()] == ["execute_tool size"]
