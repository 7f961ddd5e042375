from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

import psutil
import pytest

import toolregistry_codemode
from toolregistry import ToolRegistry
from toolregistry_codemode import CodeMode

MakeMode = Callable[..., tuple[ToolRegistry, CodeMode]]


def sandbox_workers() -> list[psutil.Process]:
    """The monty worker processes started by this test process."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "monty" in child.name() or any("monty" in a for a in child.cmdline()[:1]):
                out.append(child)
        except psutil.NoSuchProcess:
            continue
    return out


def add_tools(registry: ToolRegistry, seen: list[tuple[str, dict[str, Any]]]) -> None:
    """A few tools: sync and async, enums, optional arguments, a failing one."""

    @registry.register
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
        """Get the current weather for a city.

        Args:
            city: City name, e.g. "Tokyo".
            unit: Temperature unit.
        """
        seen.append(("get_weather", {"city": city, "unit": unit}))
        temp = {"Tokyo": 21, "Paris": 14, "Oslo": 3}.get(city, 10)
        return {"city": city, "temp": temp if unit == "c" else round(temp * 9 / 5 + 32),
                "unit": unit}

    @registry.register
    async def list_cities(region: str) -> list[str]:
        """List the cities of a region."""
        seen.append(("list_cities", {"region": region}))
        return {"asia": ["Tokyo", "Seoul"], "europe": ["Paris", "Oslo"]}.get(region, [])

    @registry.register
    def explode(reason: str) -> str:
        """Always fails."""
        seen.append(("explode", {"reason": reason}))
        raise ValueError(f"boom: {reason}")


@pytest.fixture
def seen() -> list[tuple[str, dict[str, Any]]]:
    return []


@pytest.fixture
def make_mode(seen: list[tuple[str, dict[str, Any]]]) -> Iterator[MakeMode]:
    made: list[ToolRegistry] = []

    def make(registry_options: dict[str, Any] | None = None, **options: Any
             ) -> tuple[ToolRegistry, CodeMode]:
        registry = ToolRegistry(**(registry_options or {}))
        made.append(registry)
        add_tools(registry, seen)
        mode = toolregistry_codemode.enable_code_mode(registry, **options)
        return registry, mode

    yield make
    for registry in made:
        registry.close()
    # close() has told every worker to stop; on a loaded machine the processes may take a
    # moment to exit: wait for them (bounded), then none may be left
    _gone, alive = psutil.wait_procs(sandbox_workers(), timeout=15)
    assert not alive, f"sandbox workers left running after registry.close(): {alive}"
