"""The OpenTelemetry SDK set up from the plugin's table (``exporter = "otlp"`` or
``"console"``): the SDK's own providers, processors and exporters, which read the SDK's
``OTEL_*`` environment variables for everything the table does not say."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

if TYPE_CHECKING:
    from ._settings import OtelSettings

__all__ = ["install_sdk"]

_lock = threading.Lock()
_installed: list[str] = []  # what this process installed (once per process)


def install_sdk(settings: OtelSettings, where: str) -> None:
    """Install the SDK's tracer and meter providers the table asks for, unless providers
    are installed already (the application's stay: logged once)."""
    if settings.exporter is None:
        return
    with _lock:
        if _installed:
            return
        _installed.append(settings.exporter)
        from opentelemetry import metrics, trace

        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            log.info("otel.provider_kept", exporter=settings.exporter, where=where)
            return
        try:
            tracer_provider, meter_provider = _providers(settings)
        except ImportError as exc:
            _installed.clear()
            raise ConfigError(f"{where}: exporter = {settings.exporter!r} needs the "
                              "OpenTelemetry SDK and its OTLP exporter: pip install "
                              f"'toolregistry-otel[sdk]' ({exc})") from None
        trace.set_tracer_provider(tracer_provider)
        if meter_provider is not None:
            metrics.set_meter_provider(meter_provider)
        log.info("otel.sdk_installed", exporter=settings.exporter,
                 endpoint=settings.endpoint or "from the environment")


def _providers(settings: OtelSettings) -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {SERVICE_NAME: settings.service_name} if settings.service_name else {}
    resource = Resource.create(attributes)  # OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME
    if settings.exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        base = settings.endpoint.rstrip("/") if settings.endpoint else None
        spans: Any = OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
        numbers: Any = OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None)
    else:  # stderr: stdout may be an MCP stdio channel
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        spans = ConsoleSpanExporter(out=sys.stderr)
        numbers = ConsoleMetricExporter(out=sys.stderr)
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    meter_provider = None
    if settings.metrics:
        meter_provider = MeterProvider(resource=resource,
                                       metric_readers=[PeriodicExportingMetricReader(numbers)])
    return tracer_provider, meter_provider
