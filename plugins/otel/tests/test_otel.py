"""Spans, metrics, context and logs through the real OpenTelemetry SDK (see conftest.py)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from structlog.testing import capture_logs

from toolregistry import ToolRegistry
from toolregistry.plugin import continuing, operation, outgoing_context
from toolregistry.testing import PluginContract

tracer = trace.get_tracer("tests")


class TestOtelContract(PluginContract):
    plugin_name = "otel"


def chat(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return a + b


def fail(message: str) -> str:
    """Always fails."""
    raise RuntimeError(message)


def current_trace() -> dict[str, Any]:
    """The trace and span ids the tool sees, and the thread it runs on."""
    ctx = trace.get_current_span().get_span_context()
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x"),
            "thread": threading.current_thread().name,
            "tenant": baggage.get_baggage("tenant")}


async def acurrent_trace() -> dict[str, Any]:
    """The trace the async tool sees."""
    return current_trace()


def by_name(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def make_registry(**options: Any) -> ToolRegistry:
    reg = ToolRegistry(**options)
    for fn in (add, fail, current_trace, acurrent_trace):
        reg.register(fn)
    return reg


def test_execute_tool_span_follows_the_genai_conventions(spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    assert reg.invoke("add", {"a": 1, "b": 2}, call_id="call-1").text == "3"
    (span,) = spans.get_finished_spans()
    assert span.name == "execute_tool add" and span.kind is SpanKind.INTERNAL
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "add"
    assert attrs["gen_ai.tool.call.id"] == "call-1"
    assert attrs["gen_ai.tool.type"] == "function"
    assert attrs["gen_ai.tool.description"].startswith("Add two numbers.")
    assert "error.type" not in attrs
    # content capture is off by default
    assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
    assert span.status.status_code is StatusCode.UNSET


def test_failures_set_error_type_and_status(spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    reg.invoke("fail", {"message": "boom"})
    reg.invoke("add", {"a": "not a number", "b": 2})
    reg.invoke("nope", {})  # unknown: a span of its own too
    failed, invalid, unknown = spans.get_finished_spans()
    assert failed.attributes["error.type"] == "execution"
    assert failed.status.status_code is StatusCode.ERROR and "boom" in failed.status.description
    assert invalid.attributes["error.type"] == "invalid_arguments"
    assert unknown.name == "execute_tool nope"
    assert unknown.attributes["error.type"] == "unknown_tool"


def config(tmp_path: Path, table: str) -> str:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.toolregistry.plugins.otel]\n{table}\n", "utf-8")
    return str(path)


def test_content_capture_is_opt_in_and_bounded(spans: InMemorySpanExporter,
                                               tmp_path: Path) -> None:
    reg = make_registry(config=config(tmp_path, "capture-content = true\n"
                                                "max-attribute-length = 64"))

    def echo(text: str) -> str:
        """Echo the text."""
        return text

    reg.register(echo)
    reg.invoke("echo", {"text": "x" * 500})
    reg.invoke("add", {"a": 1, "b": 2})
    echo_span, add_span = spans.get_finished_spans()
    result = echo_span.attributes["gen_ai.tool.call.result"]
    assert result.startswith("x" * 64) and result.endswith("[436 more characters]")
    assert json.loads(add_span.attributes["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert add_span.attributes["gen_ai.tool.call.result"] == "3"


def test_one_parent_span_per_batch_and_context_in_every_path(
        spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    calls = [chat("current_trace", {}, "1"), chat("acurrent_trace", {}, "2"),
             chat("add", {"a": 1, "b": 1}, "3"), chat("fail", {"message": "x"}, "4")]
    with tracer.start_as_current_span("agent turn") as root:
        sync_results = reg.execute_tool_calls(calls)
        async_results = asyncio.run(reg.aexecute_tool_calls(calls))
    finished = spans.get_finished_spans()
    batches = by_name(finished, "execute_tool_batch")
    assert len(batches) == 2
    root_ctx = root.get_span_context()
    for batch, results in zip(batches, (sync_results, async_results)):
        assert batch.parent is not None and batch.parent.span_id == root_ctx.span_id
        assert batch.attributes["toolregistry.batch.size"] == 4
        assert batch.attributes["toolregistry.batch.errors"] == 1
        children = [s for s in finished if s.parent is not None
                    and s.parent.span_id == batch.context.span_id]
        assert sorted(s.name for s in children) == [
            "execute_tool acurrent_trace", "execute_tool add", "execute_tool current_trace",
            "execute_tool fail"]
        # inside the tools, the current span is the tool's own execute_tool span
        for result in results[:2]:
            seen = result.value
            assert seen["trace_id"] == format(root_ctx.trace_id, "032x")
            own = [s for s in children if s.context.span_id == int(seen["span_id"], 16)]
            assert own and own[0].name.startswith("execute_tool ")


def test_calls_refused_before_validation_are_spans_and_counted(
        spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    broken = {"id": "2", "type": "function",
              "function": {"name": "add", "arguments": '{"a": 1,'}}  # malformed JSON
    calls = [chat("add", {"a": 1, "b": 1}, "1"), broken, chat("nope", {}, "3")]
    for run in (reg.execute_tool_calls, lambda c: asyncio.run(reg.aexecute_tool_calls(c))):
        spans.clear()
        results = run(calls)
        assert [r.outcome for r in results] == ["ok", "malformed_arguments", "unknown_tool"]
        finished = spans.get_finished_spans()
        [batch] = by_name(finished, "execute_tool_batch")
        assert batch.attributes["toolregistry.batch.size"] == 3
        assert batch.attributes["toolregistry.batch.errors"] == 2
        children = {s.attributes["gen_ai.tool.call.id"]: s for s in finished
                    if s.parent is not None and s.parent.span_id == batch.context.span_id}
        assert sorted(children) == ["1", "2", "3"]
        assert children["2"].name == "execute_tool add"
        assert children["2"].attributes["error.type"] == "malformed_arguments"
        assert children["3"].name == "execute_tool nope"
        assert children["3"].attributes["error.type"] == "unknown_tool"
        assert children["3"].status.status_code is StatusCode.ERROR
    spans.clear()
    assert reg.invoke("nope", {}, call_id="4").outcome == "unknown_tool"
    assert reg.invoke("add", '{"a":', call_id="5").outcome == "malformed_arguments"
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in spans.get_finished_spans()) \
        == ["4", "5"]
    from toolregistry_otel._telemetry import IN_FLIGHT

    assert not any(dict(key)["gen_ai.tool.name"] == "nope" for key in IN_FLIGHT.calls)
    reg.close()


def test_process_isolated_tools_continue_the_callers_trace(spans: InMemorySpanExporter
                                                            ) -> None:
    from toolregistry import ToolMetadata

    with ToolRegistry() as reg:
        reg.register(current_trace, name="isolated",
                     metadata=ToolMetadata(isolation="process"))
        with tracer.start_as_current_span("agent turn") as root:
            [sync] = reg.execute_tool_calls([chat("isolated", {}, "p1")])
            asynced = asyncio.run(reg.ainvoke("isolated", {}, call_id="p2"))
        own = {s.attributes["gen_ai.tool.call.id"]: s for s in spans.get_finished_spans()
               if s.name == "execute_tool isolated"}
    for result, call_id in ((sync, "p1"), (asynced, "p2")):
        seen = result.value
        assert seen["trace_id"] == format(root.get_span_context().trace_id, "032x")
        assert seen["span_id"] == format(own[call_id].context.span_id, "016x")


def test_caller_context_reaches_worker_threads_and_the_private_loop(
        spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    ctx = baggage.set_baggage("tenant", "acme")
    token = otel_context.attach(ctx)
    try:
        with tracer.start_as_current_span("request") as root:
            out: dict[str, Any] = {}

            def from_thread() -> None:  # invoke off the main thread: the worker pool path
                out["thread"] = reg.invoke("current_trace", {}, timeout=5).value

            # an application thread that carries the request's context (a new thread starts
            # with an empty one), then the registry's worker thread
            worker = threading.Thread(target=contextvars.copy_context().run, args=(from_thread,))
            worker.start()
            worker.join()
            out["async"] = reg.invoke("acurrent_trace", {}).value  # the private loop
    finally:
        otel_context.detach(token)
    for path, seen in out.items():
        assert (path, seen["trace_id"]) == (path, format(root.get_span_context().trace_id, "032x"))
        assert seen["trace_id"] == format(root.get_span_context().trace_id, "032x")
        assert seen["tenant"] == "acme"
    assert out["thread"]["thread"] != threading.current_thread().name
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing leaked to the caller


def test_metrics_duration_calls_by_outcome_and_in_flight(
        spans: InMemorySpanExporter, reader: InMemoryMetricReader) -> None:
    reg = make_registry()
    reg.invoke("add", {"a": 1, "b": 2})
    reg.invoke("add", {"a": 1, "b": 2})
    reg.invoke("fail", {"message": "x"})
    in_flight: dict[str, Any] = {}

    def slow() -> str:
        """Reports the calls in flight while it runs."""
        in_flight.update(_points(reader.get_metrics_data()))
        return "done"

    reg.register(slow)
    slow_result = reg.invoke("slow", {})
    points = _points(reader.get_metrics_data())
    # the duration recorded is the one the registry measured (ToolResult.duration)
    slow_points = [p for p in points["toolregistry.tool.call.duration"]
                   if dict(p.attributes)["gen_ai.tool.name"] == "slow"]
    assert [(p.count, p.sum) for p in slow_points] == [(1, slow_result.duration)]
    # calls by tool and outcome: the duration histogram's count
    calls = {(dict(p.attributes)["gen_ai.tool.name"], dict(p.attributes)["toolregistry.outcome"]):
             p.count for p in points["toolregistry.tool.call.duration"]}
    assert calls[("add", "ok")] >= 2 and calls[("fail", "execution")] >= 1
    assert all(p.sum >= 0 for p in points["toolregistry.tool.call.duration"])
    during = {dict(p.attributes)["gen_ai.tool.name"]: p.value
              for p in in_flight["toolregistry.tool.calls.active"]}
    assert during["slow"] == 1
    after = {dict(p.attributes)["gen_ai.tool.name"]: p.value
             for p in points["toolregistry.tool.calls.active"]}
    assert after["slow"] == 0 and after["add"] == 0


def _points(data: Any) -> dict[str, list[Any]]:
    points: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            if sm.scope.name != "toolregistry-otel":
                continue
            for metric in sm.metrics:
                points[metric.name] = list(metric.data.data_points)
    return points


def test_operations_become_spans_with_content_opt_in(spans: InMemorySpanExporter,
                                                      reader: InMemoryMetricReader) -> None:
    reg = make_registry()
    with operation(reg, "discovery.query", {"content.discovery.query.text": "weather",
                                            "discovery.top_k": 5}) as attrs:
        attrs["discovery.hits"] = 2
    with pytest.raises(ConnectionError), operation(reg, "mcp.load",
                                                   {"server.address": "127.0.0.1"}):
        raise ConnectionError("refused")
    query, connect = spans.get_finished_spans()
    assert query.name == "discovery.query" and query.kind is SpanKind.INTERNAL
    assert query.attributes["discovery.hits"] == 2
    assert "discovery.query.text" not in query.attributes  # content: off by default
    assert connect.kind is SpanKind.CLIENT
    assert connect.attributes["error.type"] == "ConnectionError"
    assert connect.status.status_code is StatusCode.ERROR
    assert connect.events[0].name == "exception"
    names = [m.name for rm in reader.get_metrics_data().resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics]
    assert "toolregistry.discovery.query.duration" in names


def test_outgoing_and_incoming_context_round_trip(spans: InMemorySpanExporter) -> None:
    reg = make_registry()

    def headers() -> dict[str, str]:
        """What an outgoing request made by this tool carries."""
        return outgoing_context()

    reg.register(headers)
    with tracer.start_as_current_span("client") as client:
        carried = reg.invoke("headers", {}).value
    trace_hex = format(client.get_span_context().trace_id, "032x")
    assert carried["traceparent"].split("-")[1] == trace_hex
    tool_span = by_name(spans.get_finished_spans(), "execute_tool headers")[0]
    # the header names the tool's own span as the parent of what the service does
    assert carried["traceparent"].split("-")[2] == format(tool_span.context.span_id, "016x")

    # a served request continues the caller's trace
    with continuing(reg, carried):
        served = reg.invoke("current_trace", {}).value
    assert served["trace_id"] == trace_hex
    served_span = by_name(spans.get_finished_spans(), "execute_tool current_trace")[0]
    assert served_span.parent is not None
    assert served_span.parent.span_id == tool_span.context.span_id
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_log_events_carry_trace_and_span_ids(spans: InMemorySpanExporter) -> None:
    reg = make_registry()
    with capture_logs() as logs:
        with tracer.start_as_current_span("turn") as span:
            reg.invoke("fail", {"message": "logged"})
        reg.invoke("fail", {"message": "no span"})
    failures = [e for e in logs if e.get("tool") == "fail"]
    assert failures, logs
    inside = failures[0]
    assert inside["trace_id"] == format(span.get_span_context().trace_id, "032x")
    # the span id is the tool call's own span (a child of "turn")
    assert int(inside["span_id"], 16) != 0
    outside = failures[-1]
    assert outside["trace_id"] != inside["trace_id"]  # the call's own trace


def test_a_failing_exporter_never_fails_a_call(spans: InMemorySpanExporter,
                                              extra: list[Any]) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

    class Broken(SpanExporter):
        def export(self, spans: Any) -> Any:
            raise OSError("collector unreachable")

    extra.append(SimpleSpanProcessor(Broken()))
    reg = make_registry()
    results = reg.execute_tool_calls([chat("add", {"a": 2, "b": 2}, "1")] * 3)
    assert [r.text for r in results] == ["4", "4", "4"]
    assert len(spans.get_finished_spans()) == 4  # 3 calls + the batch, still exported here


def test_bad_settings_are_refused_naming_the_option(tmp_path: Path) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match=r"max.attribute.length"):
        ToolRegistry(config=config(tmp_path, "max-attribute-length = 3"))
    with pytest.warns(UserWarning, match=r"capture.contents.*did you mean 'capture-content'"):
        ToolRegistry(config=config(tmp_path, "capture-contents = true"))
    with pytest.raises(ConfigError, match=r"capture.contents"):
        ToolRegistry(config=config(tmp_path, "capture-contents = true"), strict_plugins=True)


NO_PROVIDER_SCRIPT = '''
import json
from opentelemetry import metrics, trace
from toolregistry import ToolRegistry
from toolregistry_otel import _telemetry


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


reg = ToolRegistry()
reg.register(add)
batch = [{"id": "1", "type": "function",
          "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 2})}}]
out = {"value": reg.invoke("add", {"a": 1, "b": 2}).value,
       "batch": [r.value for r in reg.execute_tool_calls(batch)],
       "tracer": _telemetry._SWITCH.tracer is not None,
       "instruments": _telemetry._SWITCH.instruments is not None}
gate = reg._get_executor().pipeline._plans["add"].hooks.gate  # asked before each call
out["wanted"] = bool(gate())
if out["tracer"]:  # a provider named in the environment was loaded by the first call
    out["provider"] = type(trace.get_tracer_provider()).__module__
else:  # none yet: one set now is used from the next call on
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    out["wanted after"] = bool(gate())
    reg.invoke("add", {"a": 1, "b": 2})
    reg.execute_tool_calls(batch)
    out["spans"] = [s.name for s in exporter.get_finished_spans()]
    out["instruments after"] = _telemetry._SWITCH.instruments is not None
print(json.dumps(out))
'''


@pytest.mark.parametrize("environment", ["none", "named"])
def test_without_a_provider_nothing_is_recorded_until_one_is_set(environment: str) -> None:
    """A fresh process (the session's conftest set providers in this one): with the API's
    default providers the plugin makes nothing; a provider set later, or one the environment
    names (the API loads it on first use), is used from the next call on."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_PYTHON_")}
    if environment == "named":
        env["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"
    done = subprocess.run([sys.executable, "-c", NO_PROVIDER_SCRIPT], env=env, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if environment == "none":
        assert out == {"value": 3, "batch": [4], "tracer": False, "instruments": False,
                       "wanted": False, "wanted after": True,
                       "spans": ["execute_tool add", "execute_tool add", "execute_tool_batch"],
                       "instruments after": False}
    else:
        assert out == {"value": 3, "batch": [4], "tracer": True, "instruments": False,
                       "wanted": True, "provider": "opentelemetry.sdk.trace"}


def test_the_private_fast_path_names_still_exist() -> None:
    """The no-provider check reads the API's module globals ``_TRACER_PROVIDER`` /
    ``_METER_PROVIDER`` (the public getters cost more than the rest of the check: see
    benchmarks/otel_bench.py, "provider check"). Without them it falls back to the public
    getters, correct but slower: this test says so when an API release renames them."""
    import opentelemetry.metrics._internal as metrics_internal
    import opentelemetry.trace as trace_module

    assert hasattr(trace_module, "_TRACER_PROVIDER")
    assert hasattr(metrics_internal, "_METER_PROVIDER")


def test_spans_keep_no_argument_value_or_url_secret(spans: InMemorySpanExporter,
                                                    tmp_path: Path) -> None:
    secret = "hunter2-secret"
    reg = make_registry()
    assert secret in reg.invoke("add", {"a": secret, "b": 2}).text  # the model is told
    url = "http://bob:pa55word@127.0.0.1:9/mcp?access_token=tok-123&x=1"
    with pytest.raises(ConnectionError), operation(reg, "mcp.load", {}):
        try:
            raise OSError(f"connect to {url} refused")
        except OSError as exc:
            raise ConnectionError(f"cannot load the MCP server {url}") from exc
    invalid, load = spans.get_finished_spans()
    assert invalid.status.status_code is StatusCode.ERROR
    assert secret not in (invalid.status.description or "")
    assert "<str, 14 chars>" in (invalid.status.description or "")
    texts = [load.status.description or ""] + [str(v) for e in load.events
                                                for v in (e.attributes or {}).values()]
    assert load.events[0].name == "exception"
    assert "http://127.0.0.1:9/mcp" in load.events[0].attributes["exception.message"]
    for text in texts:
        assert "pa55word" not in text and "tok-123" not in text, text
    # With content capture on, the span says what the model read.
    spans.clear()
    captured = make_registry(config=config(tmp_path, "capture-content = true"))
    captured.invoke("add", {"a": secret, "b": 2})
    (span,) = spans.get_finished_spans()
    assert secret in (span.status.description or "")
