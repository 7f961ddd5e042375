"""The execution log links each call to its OpenTelemetry span: the otel plugin puts the
span's ids on the call (the kernel's seam), the inspector records them with the batch id,
without importing OpenTelemetry itself. Run in a process of its own: the SDK's provider is
set once per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = textwrap.dedent('''
    import json, sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from toolregistry import ToolRegistry
    from toolregistry_inspector import execution_log, query_log

    registry = ToolRegistry(config=sys.argv[1])
    registry.register(lambda city: f"sunny in {city}", name="weather")
    with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
        registry.execute_tool_calls([
            {"id": f"c{i}", "type": "function",
             "function": {"name": "weather", "arguments": json.dumps({"city": "Oslo"})}}
            for i in range(2)])
    execution_log(registry).flush()
    registry.close()
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in exporter.get_finished_spans()}
    print(json.dumps({
        "turn": format(turn.get_span_context().trace_id, "032x"),
        "spans": {k: format(s.context.span_id, "016x") for k, s in spans.items() if k},
        "log": [[e.call_id, e.trace_id, e.span_id, e.batch]
                for e in query_log(sys.argv[2])],
    }))
''')


def test_the_log_has_each_calls_trace_and_span_id(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n',
                      encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(config),
                          str(tmp_path / "calls.sqlite")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    log = {call_id: (trace_id, span_id, batch) for call_id, trace_id, span_id, batch
           in found["log"]}
    assert set(log) == {"c0", "c1"}
    for call_id, (trace_id, span_id, batch) in log.items():
        assert trace_id == found["turn"]  # the agent's trace
        assert span_id == found["spans"][call_id]  # the call's own span
        assert batch == log["c0"][2] and batch is not None
