"""Spans and metrics for one registry: calls, batches, operations, incoming context.

Nothing here runs unless an OpenTelemetry SDK (or another real provider) is installed as the
global tracer / meter provider: with the API's default proxy providers every observer method
returns after one check, and a provider set later is picked up on the next call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import opentelemetry.metrics._internal as _metrics_api
import opentelemetry.trace as _trace_api
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.context import attach, get_current
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from toolregistry.plugin import UNOBSERVED, log

from ._settings import OtelSettings, capture_from_environment

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry
    from toolregistry.types import ToolCall, ToolResult

__all__ = ["Telemetry", "continue_carrier", "inject", "log_ids"]

SCOPE = "toolregistry-otel"
CONTENT_PREFIX = "content."
"""Operation attributes whose key starts with this carry user or model content: recorded
(without the prefix) only when content capture is on."""
_CLIENT_OPERATIONS = frozenset({"mcp.load", "openapi.load"})
_REMOTE_KINDS = frozenset({"mcp", "openapi", "langchain"})
_UNKNOWN = object()
_INTERNAL = SpanKind.INTERNAL
# The API loads a provider named in the environment on first use of its getter.
_TRACER_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_METER_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ
# A call's no-provider check reads the API's globals as they are when it has them and the
# environment names no provider for its getters to load (else _Switch's methods decide).
_GLOBALS = (hasattr(_trace_api, "_TRACER_PROVIDER") and hasattr(_metrics_api, "_METER_PROVIDER")
            and not _TRACER_ENV and not _METER_ENV)


class _Switch:
    """Whether a real tracer / meter provider is installed (the API's proxies are not), and
    what the plugin then uses: its tracer, its instruments.

    A provider is set once per process, so once found real it stays real: the tracer and the
    instruments are kept, and a call reads them from here. Until then each check reads the
    API's module globals ``opentelemetry.trace._TRACER_PROVIDER`` and
    ``opentelemetry.metrics._internal._METER_PROVIDER`` (private names) and goes on to the
    public getters only when one is set, or when the environment names a provider for the API
    to load (which the getter then does). Why not the public getters on every call: while no
    provider is set, each also looks ``OTEL_PYTHON_*_PROVIDER`` up in ``os.environ`` (a
    failed lookup raises and catches ``KeyError`` twice), many times the cost of reading
    the globals and more than the rest of what the plugin adds to a call
    (``benchmarks/otel_bench.py``, "provider check"). The API has no public, cheaper way to
    ask (its proxy tracer answers a ``start_span`` with a non-recording span, costlier still).
    The globals are read through ``getattr`` with a default here, and as they are by a
    call's check only when the API had them at import (``_GLOBALS``), so an API release
    without them takes the public getters: correct, only slower (a test names the globals so
    that such a release is noticed).
    """

    __slots__ = ("instruments", "lock", "meter", "tracer")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tracer: trace.Tracer | None = None
        self.meter: metrics.Meter | None = None
        self.instruments: _Instruments | None = None

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

    def metering(self) -> _Instruments | None:
        instruments = self.instruments
        if instruments is None:
            if getattr(_metrics_api, "_METER_PROVIDER", _UNKNOWN) is None and not _METER_ENV:
                return None
            provider = metrics.get_meter_provider()
            if isinstance(provider, metrics.NoOpMeterProvider) or \
                    type(provider).__name__ == "_ProxyMeterProvider":  # the API's default
                return None
            with self.lock:  # made once: a second observable counter would count twice
                instruments = self.instruments
                if instruments is None:
                    self.meter = provider.get_meter(SCOPE, _version())
                    instruments = self.instruments = _Instruments(self.meter)
        return instruments


_SWITCH = _Switch()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolregistry-otel")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


class _InFlight:
    """Calls in flight per (registry, tool), kept in Python and read by the SDK when it
    collects (an observable up-down counter: nothing per call goes through the SDK).

    Each key has a set of the ids of its running calls' tokens (a token lives until its call
    finishes, so its id is unique meanwhile): adding and discarding one is a single atomic
    operation, no lock per call, and a count never drifts.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[tuple[tuple[str, str], ...], set[int]] = {}

    def running(self, key: tuple[tuple[str, str], ...]) -> set[int]:
        """The set of running calls of ``key`` (made once; shared by the key's observers)."""
        with self.lock:
            return self.calls.setdefault(key, set())

    def observe(self, options: Any) -> list[metrics.Observation]:
        with self.lock:
            items = list(self.calls.items())
        return [metrics.Observation(len(calls), dict(key)) for key, calls in items]


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


_URL = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^\s/?#'\"<>]*@)?"
                  r"(?P<rest>[^\s?#'\"<>]*)(?P<query>\?[^\s#'\"<>]*)?(?:#[^\s'\"<>]*)?")


def without_secrets(text: str) -> str:
    """``text`` with every URL in it cut to scheme, host, port and path: no ``user:password@``,
    no query string (tokens travel there), no fragment."""
    return _URL.sub(lambda m: m["scheme"] + m["rest"], text)


def inject(carrier: MutableMapping[str, str]) -> None:
    """Add the current trace context (W3C ``traceparent`` / ``tracestate``, baggage) to
    ``carrier``: the kernel's outgoing-context carrier."""
    if _SWITCH.tracing() is not None:
        propagate.inject(carrier)


@contextlib.contextmanager
def continue_carrier(carrier: Mapping[str, str]) -> Iterator[None]:
    """The trace context ``carrier`` holds made current for the block (in a process a call
    was shipped to, which may have no provider: the span is the caller's, not recording)."""
    token = otel_context.attach(propagate.extract(dict(carrier)))
    try:
        yield
    finally:
        otel_context.detach(token)


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
    def tool_observer(self, tool: Tool, *, registered: bool = True) -> ToolObserver:
        return ToolObserver(self, tool, registered)

    def batch_observer(self) -> BatchObserver | None:
        return BatchObserver(self) if self.settings.trace_batches else None

    def operation_observer(self) -> OperationObserver | None:
        return OperationObserver(self) if self.settings.trace_operations else None

    @contextlib.contextmanager
    def incoming(self, carrier: Mapping[str, str]) -> Iterator[None]:
        """Make the trace context ``carrier`` holds current for the block -- unless the
        server already continues that trace in a span of its own (the MCP SDK's SERVER span
        of the request): then that span stays the parent, with the carrier's baggage."""
        if _SWITCH.tracing() is None:
            yield
            return
        current = trace.get_current_span()
        here = current.get_span_context()
        if here.is_valid:
            extracted = propagate.extract(dict(carrier))
            sent = trace.get_current_span(extracted).get_span_context()
            if sent.is_valid and sent.trace_id == here.trace_id:
                token = otel_context.attach(set_span_in_context(current, extracted))
                try:
                    yield
                finally:
                    otel_context.detach(token)
                return
        with continue_carrier(carrier):
            yield


class ToolObserver:
    """``execute_tool {gen_ai.tool.name}`` spans and the call metrics for one tool.

    What does not change between calls is made here once: the span name, the span's
    attributes but the call id, the metric attributes per outcome, the tool's set of running
    calls. Without a provider ``wants_calls`` says so before the call (the kernel then neither
    starts the observer nor copies the call's context for it), and ``call_started``, when
    asked, answers ``UNOBSERVED``. With one, per call: one provider check, one dict
    copy, the SDK's span (made current in the call's own context, which the kernel copied for
    it and drops after it: nothing to detach), and at the end one histogram record of the
    kernel's measured duration.
    """

    __slots__ = ("capture", "metric_attributes", "metrics", "ok_attributes",
                 "outcome_attributes", "running", "span_name", "static", "telemetry")

    def __init__(self, telemetry: Telemetry, tool: Tool, registered: bool = True) -> None:
        self.telemetry = telemetry
        self.capture = telemetry.capture
        # A call naming no registered tool is a span, not a metric series: the name is the
        # model's, and metric attributes must stay few.
        self.metrics = telemetry.settings.metrics and registered
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
        self.running = (IN_FLIGHT.running(tuple(self.metric_attributes.items()))
                        if self.metrics else set())
        self.ok_attributes = {**self.metric_attributes, "toolregistry.outcome": "ok"}
        self.outcome_attributes: dict[str, dict[str, str]] = {}  # the error kinds, made once

    def wants_calls(self) -> bool:
        """Whether a provider may be installed: the no-provider check of ``call_started``,
        asked by the kernel before the call (a provider set later is used from the next
        call on)."""
        if _SWITCH.tracer is not None or not _GLOBALS or _trace_api._TRACER_PROVIDER is not None:
            return True
        return self.metrics and (_SWITCH.instruments is not None
                                 or _metrics_api._METER_PROVIDER is not None)

    def call_started(self, call: ToolCall) -> Any:
        tracer = _SWITCH.tracer
        if tracer is None:
            if not self.wants_calls():  # no provider: asked here too for a call without
                # a plan, which the kernel's gate does not see
                return UNOBSERVED
            tracer = _SWITCH.tracing()
        instruments = None
        if self.metrics:
            instruments = _SWITCH.instruments
            if instruments is None:
                instruments = _SWITCH.metering()
        if tracer is None:
            if instruments is None:
                return UNOBSERVED  # no provider: the kernel treats the call as unobserved
            token: tuple[Any, Any] = (None, instruments)
        else:
            attributes = self.static.copy()
            attributes["gen_ai.tool.call.id"] = call.id
            parent = get_current()
            span = tracer.start_span(self.span_name, parent, kind=_INTERNAL,
                                     attributes=attributes)
            # This runs inside the call's own context: the span is current for the hooks, the
            # tool and what it calls, and goes away with the call's context.
            attach(set_span_in_context(span, parent))
            ids = span.get_span_context()
            if ids.is_valid:  # the kernel's seam: logs link the call to its trace
                call.trace_id = format(ids.trace_id, "032x")
                call.span_id = format(ids.span_id, "016x")
            token = (span, instruments)
        if instruments is not None:
            self.running.add(id(token))
        return token

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        if token is None:  # call_started failed (logged by the kernel)
            return
        span, instruments = token
        failed = result.is_error
        if span is not None:
            if failed:
                span.set_attribute("error.type", result.outcome)
                # Without content capture, not the argument values the kernel's message quotes.
                text = result.text if self.capture else result.loggable_text
                span.set_status(Status(StatusCode.ERROR, self.telemetry.bound(text)))
            if self.capture:
                t = self.telemetry
                if call.arguments is not None:
                    span.set_attribute("gen_ai.tool.call.arguments", t.json_text(call.arguments))
                span.set_attribute("gen_ai.tool.call.result", t.bound(result.text))
                if call.reason:
                    span.set_attribute("toolregistry.toolcall_reason", t.bound(call.reason))
            span.end()
        if instruments is not None:
            attributes = self.ok_attributes if not failed else self._failed(result.outcome)
            instruments.duration.record(result.duration, attributes)
            self.running.discard(id(token))

    def _failed(self, outcome: str) -> dict[str, str]:
        attributes = self.outcome_attributes.get(outcome)
        if attributes is None:
            attributes = self.outcome_attributes[outcome] = {
                **self.metric_attributes, "toolregistry.outcome": outcome}
        return attributes


class BatchObserver:
    """One parent span per batch of calls."""

    __slots__ = ("telemetry",)

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def batch_started(self, calls: Sequence[ToolCall]) -> Any:
        tracer = _SWITCH.tracing()
        if tracer is None:
            return UNOBSERVED  # no provider: the kernel runs the batch as an unobserved one
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
        # Every call counts, those that could not be read too (batch_started sees only the
        # calls that were parsed).
        token.set_attribute("toolregistry.batch.size", len(results))
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
            instruments = _SWITCH.metering()
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
                kind = type(error).__qualname__
                span.set_attribute("error.type", kind)
                # As record_exception, with the URLs in the texts cut to scheme, host and path:
                # a loader's error quotes the URL it failed on, credentials and query included.
                message = without_secrets(str(error))
                span.add_event("exception", {
                    "exception.type": kind, "exception.message": self.telemetry.bound(message),
                    "exception.stacktrace": without_secrets("".join(
                        traceback.format_exception(type(error), error, error.__traceback__))),
                    "exception.escaped": False})
                span.set_status(Status(StatusCode.ERROR, self.telemetry.bound(
                    f"{type(error).__name__}: {message}")))
            span.end()
        finally:
            try:
                otel_context.detach(attach_token)
            except Exception as exc:  # another context (an operation split across tasks)
                log.debug("otel.detach_failed", operation=name, error=str(exc))
