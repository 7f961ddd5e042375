"""One real OpenTelemetry SDK for the session (a provider is set once per process): spans go to
an in-memory exporter, metrics to an in-memory reader; each test starts from empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Extra(SpanProcessor):
    """Span processors a test adds for its duration (the SDK cannot remove one)."""

    def __init__(self) -> None:
        self.processors: list[SpanProcessor] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        for p in list(self.processors):
            p.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for p in list(self.processors):
            p.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in list(self.processors))


EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()
EXTRA = Extra()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
PROVIDER.add_span_processor(EXTRA)
trace.set_tracer_provider(PROVIDER)
metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    READER.get_metrics_data()  # drop what earlier tests recorded (delta of cumulative: read)
    yield EXPORTER
    EXPORTER.clear()


@pytest.fixture
def extra() -> Iterator[list[SpanProcessor]]:
    """Processors added here see the test's spans; they are shut down and removed after."""
    added: list[SpanProcessor] = []
    EXTRA.processors = added
    try:
        yield added
    finally:
        EXTRA.processors = []
        for p in added:
            p.shutdown()


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return READER
