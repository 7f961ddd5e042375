"""toolregistry-otel: what tracing costs per call (issue 21).

    python benchmarks/otel_bench.py [--quick]

``invoke`` of a trivial sync tool, interleaved in one process, medians of many batches, in
CPU time of the calling thread (the calls run inline on it):

* without a provider (the OpenTelemetry API's default): the plugin installed vs. blocked;
  target: no measurable cost (within noise, <= 1 µs);
* with the SDK's TracerProvider and MeterProvider, spans handed to a SimpleSpanProcessor whose
  exporter drops them (a no-op exporter), metrics aggregated by an in-memory reader: the
  plugin installed vs. blocked; target <= 10 µs per call.

Needs toolregistry-otel and opentelemetry-sdk installed (``nox -s bench`` has both).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from toolregistry import ToolRegistry


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


CLOCK = time.thread_time
"""This thread's CPU time: the calls run inline on it, and on a small shared machine it is
far steadier than the wall clock (other processes' load does not count)."""


def per_call(reg: ToolRegistry, calls: int) -> float:
    args = {"a": 1, "b": 2}
    t = CLOCK()
    for _ in range(calls):
        reg.invoke("add", args)
    return (CLOCK() - t) / calls


def compare(blocked: ToolRegistry, on: ToolRegistry, batches: int, calls: int
            ) -> tuple[float, float]:
    t_off: list[float] = []
    t_on: list[float] = []
    for i in range(batches):  # interleaved, the starting side alternating
        pair: Sequence[tuple[ToolRegistry, list[float]]] = (
            ((blocked, t_off), (on, t_on)) if i % 2 == 0 else ((on, t_on), (blocked, t_off)))
        for reg, sink in pair:
            sink.append(per_call(reg, calls))
    return statistics.median(t_off), statistics.median(t_on)


def registries() -> tuple[ToolRegistry, ToolRegistry]:
    blocked = ToolRegistry(disable_plugins=["otel"])
    on = ToolRegistry()
    for reg in (blocked, on):
        reg.register(add)
        reg.invoke("add", {"a": 1, "b": 2})  # plans compiled, imports done
    assert on.plugins.is_loaded("otel") and not blocked.plugins.is_loaded("otel")
    return blocked, on


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    batches, calls = (10, 500) if args.quick else (40, 2000)

    blocked, on = registries()
    no_provider = compare(blocked, on, batches, calls)

    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    blocked, on = registries()
    sdk = compare(blocked, on, batches, calls)
    # what one bare SDK span costs on this machine now: the unit the plugin's cost compares to
    tracer = trace.get_tracer("bench")
    bare: list[float] = []
    for _ in range(batches):
        t = CLOCK()
        for _ in range(calls):
            tracer.start_span("bare").end()
        bare.append((CLOCK() - t) / calls)
    spans_recorded = reader.get_metrics_data() is not None

    rows = [
        ("invoke, no provider, plugin blocked (µs)", no_provider[0], ""),
        ("invoke, no provider, plugin installed (µs)", no_provider[1], ""),
        ("  cost of the plugin without a provider (µs)", no_provider[1] - no_provider[0],
         "<= 1 (noise)"),
        ("invoke, SDK, plugin blocked (µs)", sdk[0], ""),
        ("invoke, SDK, plugin installed: span + metrics (µs)", sdk[1], ""),
        ("  cost of tracing with the SDK (µs)", sdk[1] - sdk[0], "<= 10"),
        ("one bare SDK span, start + end, for scale (µs)", statistics.median(bare), ""),
    ]
    print(f"{'measure':<56}{'value':>10}  target  result")
    for label, value, target in rows:
        verdict = ""
        if target:
            limit = float(target.split()[1])
            verdict = "PASS" if value * 1e6 <= limit else "MISS"
        print(f"{label:<56}{value * 1e6:>10.2f}  {target:<6}  {verdict}")
    print(f"CPU time of the calling thread; medians of {batches} interleaved batches of {calls} "
          f"calls; metrics collected: {spans_recorded}")


if __name__ == "__main__":
    main()
