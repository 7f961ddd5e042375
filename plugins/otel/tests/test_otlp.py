"""The real OTLP/HTTP exporter sends the registry's spans to a receiver on 127.0.0.1, which
decodes the protobuf payload as a collector would."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
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
