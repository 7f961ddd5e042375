"""One real local Ray for the whole session, started the way the plugin starts one (on first
use, by a registry with no address) and stopped by closing that registry at the end; the
session then checks that no Ray process is left."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest

import toolregistry_ray
from toolregistry import ToolMetadata, ToolRegistry

# Two CPUs as the machine has; a small object store; workers' output not echoed.
INIT = {"num_cpus": 2, "object_store_memory": 100 * 1024 * 1024, "log_to_driver": False}


def ray_processes() -> list[psutil.Process]:
    """Ray's processes started from this test process (raylet, GCS, workers...)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture(scope="session")
def ray_anchor() -> Iterator[ToolRegistry]:
    """A registry that holds the session's Ray (started at its first call)."""
    import ray

    assert not ray.is_initialized()
    registry = ToolRegistry(name="ray-anchor")
    toolregistry_ray.enable_ray(registry, init_options=INIT)

    @registry.register(metadata=ToolMetadata(extra={"ray": True}))
    def ping() -> str:
        return "pong"

    assert registry.invoke("ping", {}, timeout=120).text == "pong"
    assert ray.is_initialized()
    yield registry
    registry.close()
    assert not ray.is_initialized(), "closing the last registry did not stop the local Ray"
    deadline = time.monotonic() + 30
    while ray_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = ray_processes()
    assert not left, f"Ray processes left running: {[p.name() for p in left]}"


MakeRegistry = Callable[..., ToolRegistry]


@pytest.fixture
def make_registry(ray_anchor: ToolRegistry) -> Iterator[MakeRegistry]:
    """Registries on the session's Ray: ``make_registry(tools=[...], ...)``."""
    made: list[ToolRegistry] = []

    def make(registry_options: dict[str, Any] | None = None, **ray_options: Any) -> ToolRegistry:
        registry = ToolRegistry(**(registry_options or {}))
        made.append(registry)
        toolregistry_ray.enable_ray(registry, **ray_options)
        return registry

    yield make
    for registry in made:
        registry.close()
