"""Spans and metrics for one registry: calls, batches, operations, incoming context.

Nothing here runs unless an OpenTelemetry SDK (or another real provider) is installed as the
global tracer / meter provider: with the API's default proxy providers every observer method
returns after one check, and a provider set later is picked up on the next call.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import opentelemetry.metrics._internal as _metrics_api
import opentelemetry.trace as _trace_api
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolregistry.plugin import log

from ._settings import OtelSettings, capture_from_environment

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry
    from toolregistry.types import ToolCall, ToolResult

__all__ = ["Telemetry", "inject", "log_ids"]

SCOPE = "toolregistry-otel"
CONTENT_PREFIX = "content."
"""Operation attributes whose key starts with this carry user or model content: recorded
(without the prefix) only when content capture is on."""
_CLIENT_OPERATIONS = frozenset({"mcp.load", "openapi.load"})
_REMOTE_KINDS = frozenset({"mcp", "openapi", "langchain"})
_UNKNOWN = object()
# The API loads a provider named in the environment on first use of its getter.
_TRACER_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_METER_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ


class _Switch:
    """Whether a real tracer / meter provider is installed (the API's proxies are not).

    A provider is set once per process, so once found real it stays real. Until then each
    check reads the API's global (one module attribute; the public getter only when the
    environment names a provider to load, which the getter then does).
    """

    __slots__ = ("meter", "tracer")

    def __init__(self) -> None:
        self.tracer: trace.Tracer | None = None
        self.meter: metrics.Meter | None = None

    def tracing(self) -> trace.Tracer | None:
        tracer = self.tracer
        if tracer is None:
            if getattr(_trace_api, "_TRACER_PROVIDER", _UNKNOWN) is None and not _TRACER_ENV:
                return None  # the API's proxy: nobody installed a provider yet
            provider = trace.get_tracer_provider()
            if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
                return None
            tracer = self.tracer = provider.get_tracer(SCOPE, _version())
        return tracer

    def metering(self) -> metrics.Meter | None:
        meter = self.meter
        if meter is None:
            if getattr(_metrics_api, "_METER_PROVIDER", _UNKNOWN) is None and not _METER_ENV:
                return None
            provider = metrics.get_meter_provider()
            if isinstance(provider, metrics.NoOpMeterProvider) or \
                    type(provider).__name__ == "_ProxyMeterProvider":  # the API's default
                return None
            meter = self.meter = provider.get_meter(SCOPE, _version())
        return meter


_SWITCH = _Switch()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolregistry-otel")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


class _InFlight:
    """Calls in flight per (registry, tool), counted in Python and read by the SDK when it
    collects (an observable up-down counter: nothing per call goes through the SDK)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[tuple[str, str], ...], int] = {}

    def add(self, key: tuple[tuple[str, str], ...], delta: int) -> None:
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + delta

    def observe(self, options: Any) -> list[metrics.Observation]:
        with self.lock:
            items = list(self.counts.items())
        return [metrics.Observation(value, dict(key)) for key, value in items]


IN_FLIGHT = _InFlight()


class _Instruments:
    """The plugin's metrics (created once per meter). Per call only the duration histogram
    goes through the SDK: its count per (tool, outcome) is the number of calls."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.duration = meter.create_histogram(
            "toolregistry.tool.call.duration", unit="s",
            description="Duration of tool calls, by tool and outcome (ok or the error kind); "
                        "its count is the number of calls.")
        meter.create_observable_up_down_counter(
            "toolregistry.tool.calls.active", callbacks=[IN_FLIGHT.observe], unit="{call}",
            description="Tool calls in flight.")
        self.discovery = meter.create_histogram(
            "toolregistry.discovery.query.duration", unit="s",
            description="Duration of discovery queries.")


_INSTRUMENTS: dict[int, _Instruments] = {}


def _instruments() -> _Instruments | None:
    meter = _SWITCH.metering()
    if meter is None:
        return None
    found = _INSTRUMENTS.get(id(meter))
    if found is None:
        found = _INSTRUMENTS[id(meter)] = _Instruments(meter)
    return found


def inject(carrier: MutableMapping[str, str]) -> None:
    """Add the current trace context (W3C ``traceparent`` / ``tracestate``, baggage) to
    ``carrier``: the kernel's outgoing-context carrier."""
    if _SWITCH.tracing() is not None:
        propagate.inject(carrier)


def log_ids() -> Mapping[str, str]:
    """``trace_id`` / ``span_id`` of the current span for log events (empty without one)."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return {}
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


class Telemetry:
    """The plugin's state for one registry: its settings and the observers it hands out."""

    def __init__(self, registry: ToolRegistry, settings: OtelSettings) -> None:
        self.registry_name = registry.name
        self.settings = settings
        self.capture = (capture_from_environment() if settings.capture_content is None
                        else settings.capture_content)
        self.limit = settings.max_attribute_length

    # -- helpers ---------------------------------------------------------------------------
    def bound(self, text: str) -> str:
        """``text`` cut to the attribute limit, saying so."""
        if len(text) <= self.limit:
            return text
        return f"{text[: self.limit]}... [{len(text) - self.limit} more characters]"

    def json_text(self, value: Any) -> str:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr, separators=(",", ":"))
        except (TypeError, ValueError):
            text = repr(value)
        return self.bound(text)

    def attribute(self, value: Any) -> Any:
        """An attribute value OpenTelemetry accepts: primitives and lists of them; the rest as
        bounded JSON text."""
        if isinstance(value, str):
            return self.bound(value)
        if isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, bool, int, float))
                                                     for v in value):
            return [self.bound(v) if isinstance(v, str) else v for v in value][:256]
        return self.json_text(value)

    # -- observers -------------------------------------------------------------------------
    def tool_observer(self, tool: Tool) -> ToolObserver:
        return ToolObserver(self, tool)

    def batch_observer(self) -> BatchObserver | None:
        return BatchObserver(self) if self.settings.trace_batches else None

    def operation_observer(self) -> OperationObserver | None:
        return OperationObserver(self) if self.settings.trace_operations else None

    @contextlib.contextmanager
    def incoming(self, carrier: Mapping[str, str]) -> Iterator[None]:
        """Make the trace context ``carrier`` holds current for the block."""
        if _SWITCH.tracing() is None:
            yield
            return
        token = otel_context.attach(propagate.extract(dict(carrier)))
        try:
            yield
        finally:
            otel_context.detach(token)


class ToolObserver:
    """``execute_tool {gen_ai.tool.name}`` spans and the call metrics for one tool."""

    __slots__ = ("flight_key", "metric_attributes", "outcome_attributes", "span_name", "static",
                 "telemetry")

    def __init__(self, telemetry: Telemetry, tool: Tool) -> None:
        self.telemetry = telemetry
        self.span_name = f"execute_tool {tool.name}"
        kind = tool.provenance.kind
        self.static: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.type": "extension" if kind in _REMOTE_KINDS else "function",
        }
        if tool.description:
            self.static["gen_ai.tool.description"] = telemetry.bound(tool.description)
        if tool.namespace:
            self.static["toolregistry.tool.namespace"] = tool.namespace
        self.static["toolregistry.tool.source"] = kind
        self.metric_attributes = {"gen_ai.tool.name": tool.name,
                                  "toolregistry.registry": telemetry.registry_name}
        self.flight_key = tuple(self.metric_attributes.items())
        self.outcome_attributes: dict[str, dict[str, str]] = {}  # per outcome, made once

    def call_started(self, call: ToolCall) -> Any:
        tracer = _SWITCH.tracing()
        instruments = _instruments() if self.telemetry.settings.metrics else None
        if tracer is None and instruments is None:
            return None
        span = None
        if tracer is not None:
            attributes = dict(self.static)
            attributes["gen_ai.tool.call.id"] = call.id
            span = tracer.start_span(self.span_name, kind=SpanKind.INTERNAL,
                                     attributes=attributes)
            # This runs inside the call's own context: the span is current for the hooks, the
            # tool and what it calls, and goes away with the call's context.
            otel_context.attach(trace.set_span_in_context(span))
        if instruments is not None:
            IN_FLIGHT.add(self.flight_key, 1)
        return span, instruments, time.perf_counter()

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        if token is None:
            return
        span, instruments, started = token
        outcome = result.outcome
        if span is not None:
            t = self.telemetry
            if outcome != "ok":
                span.set_attribute("error.type", outcome)
                span.set_status(Status(StatusCode.ERROR, t.bound(result.text)))
            if t.capture:
                if call.arguments is not None:
                    span.set_attribute("gen_ai.tool.call.arguments", t.json_text(call.arguments))
                span.set_attribute("gen_ai.tool.call.result", t.bound(result.text))
                if call.reason:
                    span.set_attribute("toolregistry.toolcall_reason", t.bound(call.reason))
            span.end()
        if instruments is not None:
            attributes = self.outcome_attributes.get(outcome)
            if attributes is None:
                attributes = self.outcome_attributes[outcome] = {
                    **self.metric_attributes, "toolregistry.outcome": outcome}
            instruments.duration.record(time.perf_counter() - started, attributes)
            IN_FLIGHT.add(self.flight_key, -1)


class BatchObserver:
    """One parent span per batch of calls."""

    __slots__ = ("telemetry",)

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def batch_started(self, calls: Sequence[ToolCall]) -> Any:
        tracer = _SWITCH.tracing()
        if tracer is None:
            return None
        names = sorted({c.name for c in calls})
        span = tracer.start_span("execute_tool_batch", kind=SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "execute_tool",
            "toolregistry.batch.size": len(calls),
            "toolregistry.batch.tools": names[:64],
            "toolregistry.registry": self.telemetry.registry_name,
        })
        # The batch's context: every call's context is copied from it (span parenting).
        otel_context.attach(trace.set_span_in_context(span))
        return span

    def batch_finished(self, results: Sequence[ToolResult], token: Any) -> None:
        if token is None:
            return
        failed = sum(1 for r in results if r.outcome != "ok")
        token.set_attribute("toolregistry.batch.errors", failed)
        if failed:
            token.set_attribute("error.type", "tool_errors")
        token.end()


class OperationObserver:
    """Spans for loading sources and discovery queries; the discovery latency metric."""

    __slots__ = ("telemetry",)

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def _attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        t = self.telemetry
        out: dict[str, Any] = {"toolregistry.registry": t.registry_name}
        for key, value in attributes.items():
            if value is None:
                continue
            if key.startswith(CONTENT_PREFIX):
                if not t.capture:
                    continue
                key = key[len(CONTENT_PREFIX):]
            out[key] = t.attribute(value)
        return out

    def operation_started(self, name: str, attributes: dict[str, Any]) -> Any:
        tracer = _SWITCH.tracing()
        span = token = None
        if tracer is not None:
            kind = SpanKind.CLIENT if name in _CLIENT_OPERATIONS else SpanKind.INTERNAL
            span = tracer.start_span(name, kind=kind, attributes=self._attributes(attributes))
            token = otel_context.attach(trace.set_span_in_context(span))
        return span, token, time.perf_counter()

    def operation_finished(self, name: str, attributes: dict[str, Any],
                           error: BaseException | None, token: Any) -> None:
        span, attach_token, started = token
        if name == "discovery.query" and self.telemetry.settings.metrics:
            instruments = _instruments()
            if instruments is not None:
                instruments.discovery.record(
                    time.perf_counter() - started,
                    {"toolregistry.registry": self.telemetry.registry_name,
                     "error.type": type(error).__name__} if error is not None else
                    {"toolregistry.registry": self.telemetry.registry_name})
        if span is None:
            return
        try:
            span.set_attributes(self._attributes(attributes))
            if error is not None:
                span.set_attribute("error.type", type(error).__qualname__)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR,
                                       self.telemetry.bound(f"{type(error).__name__}: {error}")))
            span.end()
        finally:
            try:
                otel_context.detach(attach_token)
            except Exception as exc:  # another context (an operation split across tasks)
                log.debug("otel.detach_failed", operation=name, error=str(exc))
