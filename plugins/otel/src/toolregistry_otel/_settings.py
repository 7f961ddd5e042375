"""``[tool.toolregistry.plugins.otel]``: content capture and attribute bounds."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._plugin import PLUGIN_NAME as PLUGIN_NAME  # noqa: PLC0414  (re-exported)

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_from_environment() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class OtelSettings(BaseModel):
    """Options of the otel plugin (TOML keys use dashes: ``capture-content``).

    ``capture_content``: record tool arguments, results, the model's ``toolcall_reason`` and
    discovery query texts on spans (the GenAI conventions' opt-in; unset: what
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says when the registry is made,
    off unless it is ``true``).
    ``max_attribute_length``: longer string attributes are cut to this many characters (with
    a marker). ``trace_batches``: one parent span per batch of calls. ``trace_operations``:
    spans for loading sources and for discovery queries. ``metrics``: record the metrics.

    ``exporter``: set up the OpenTelemetry SDK for the process when no provider is installed
    yet -- ``"otlp"`` (OTLP over HTTP to ``endpoint``, else where the SDK's
    ``OTEL_EXPORTER_OTLP_*`` variables say) or ``"console"`` (spans and metrics as JSON on
    stderr); unset: the application sets up the SDK (nothing process-wide changes).
    ``endpoint``: the OTLP/HTTP base URL (``/v1/traces`` and ``/v1/metrics`` are added).
    ``service_name``: the resource's ``service.name`` (else ``OTEL_SERVICE_NAME``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    capture_content: bool | None = None
    max_attribute_length: int = Field(default=4096, ge=64, le=1_048_576)
    trace_batches: bool = True
    trace_operations: bool = True
    metrics: bool = True
    exporter: Literal["otlp", "console"] | None = None
    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    service_name: str | None = Field(default=None, min_length=1)
