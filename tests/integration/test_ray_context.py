"""A call that runs as a Ray task continues its caller's trace (issue 21 item 3 on the Ray
path): the otel plugin's ``execute_tool`` span travels as W3C trace context into the task, and
a span the tool starts in the Ray worker (with the SDK there) is its child. A real local Ray
(started by the plugin on first use, stopped by closing the registry) and the real SDK."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolregistry_ray
from toolregistry import ToolMetadata, ToolRegistry

EXPORTER = InMemorySpanExporter()
if not isinstance(trace.get_tracer_provider(), TracerProvider):
    trace.set_tracer_provider(TracerProvider())
_provider = trace.get_tracer_provider()
assert isinstance(_provider, TracerProvider)
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
tracer = trace.get_tracer("agent")


def _children() -> list[psutil.Process]:
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[ToolRegistry]:
    """A registry with a local Ray of its own (two CPUs), stopped and checked gone after."""
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray this test did not start is running")
    before = {p.pid for p in _children()}
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n", encoding="utf-8")
    reg = ToolRegistry(config=config)
    toolregistry_ray.enable_ray(reg, init_options={
        "num_cpus": 2, "object_store_memory": 100 * 1024 * 1024, "log_to_driver": False})
    try:
        yield reg
    finally:
        reg.close()
        assert not ray.is_initialized()
        deadline = time.monotonic() + 30
        while [p for p in _children() if p.pid not in before] and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p.name() for p in _children() if p.pid not in before]
        assert not left, f"Ray processes left running: {left}"


def test_a_span_in_a_ray_task_continues_the_callers_trace(registry: ToolRegistry) -> None:
    @registry.register(metadata=ToolMetadata(extra={"ray": True}))
    def traced() -> dict[str, Any]:
        """Starts a span in the worker (with an SDK of its own there) and says where it is."""
        from opentelemetry import trace as t
        from opentelemetry.sdk.trace import TracerProvider as Provider

        if not isinstance(t.get_tracer_provider(), Provider):
            t.set_tracer_provider(Provider())
        current = t.get_current_span().get_span_context()
        with t.get_tracer("tool").start_as_current_span("inside the task") as span:
            parent = span.parent  # type: ignore[attr-defined]
            return {"pid": os.getpid(),
                    "current_span": format(current.span_id, "016x"),
                    "trace_id": format(span.get_span_context().trace_id, "032x"),
                    "parent_span": format(parent.span_id, "016x") if parent else None}

    EXPORTER.clear()
    with tracer.start_as_current_span("agent turn") as turn:
        result = registry.invoke("traced", {}, timeout=120)
    assert result.ok, result.text
    seen = result.value
    assert seen["pid"] != os.getpid()  # it ran in a Ray worker
    spans = {s.name: s for s in EXPORTER.get_finished_spans()}
    call = spans["execute_tool traced"]
    assert call.parent is not None and call.parent.span_id == turn.get_span_context().span_id
    assert seen["trace_id"] == format(turn.get_span_context().trace_id, "032x")
    assert seen["current_span"] == format(call.context.span_id, "016x")
    assert seen["parent_span"] == format(call.context.span_id, "016x")

    # with no span around the call, its execute_tool span starts a trace, which the task
    # continues all the same
    EXPORTER.clear()
    alone = registry.invoke("traced", {}, timeout=120)
    assert alone.ok, alone.text
    (root,) = [s for s in EXPORTER.get_finished_spans() if s.name == "execute_tool traced"]
    assert root.parent is None
    assert alone.value["trace_id"] == format(root.context.trace_id, "032x") != seen["trace_id"]
    assert alone.value["parent_span"] == format(root.context.span_id, "016x")
