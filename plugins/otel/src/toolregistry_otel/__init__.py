"""toolregistry-otel: OpenTelemetry traces and metrics for a registry's tool calls.

Installed, it needs no code: every call of every registry becomes an
``execute_tool {gen_ai.tool.name}`` span (the OpenTelemetry GenAI conventions) with call
metrics, once the application installs an OpenTelemetry SDK tracer / meter provider; batches,
loading MCP and OpenAPI sources and discovery queries get spans too, and the trace context
goes with the calls into tools, MCP servers (``_meta``) and HTTP services (``traceparent``).
Options: ``[tool.toolregistry.plugins.otel]`` (:class:`OtelSettings`). See ``docs/otel.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from ._settings import OtelSettings
    from ._telemetry import Telemetry

__all__ = ["OtelSettings", "Telemetry"]

__getattr__ = lazy_exports(__name__, {"OtelSettings": "._settings", "Telemetry": "._telemetry"})
