"""The tools the provider examples share, written with ``@tool``.

``get_weather`` (async, with a ``Best Practices:`` docstring section), ``list_files`` (a
``prompt_injection_builder`` that reads the application's context), ``make_chart`` (returns
text and an image) and ``compress_file`` (deferred: announced in the system prompt, and sent as a
schema only where the provider searches deferred tools itself, with ``defer_loading``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolregistry import Image, ToolRegistry
from toolregistry.decorators import tool

# A 1x1 PNG: the "chart" (a real app would render one with matplotlib and return its path).
CHART_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4//8/AAX+Av6nmqCgAAAAAElFTkSuQmCC"
)
_WEATHER = {"Tokyo": ("Sunny", 22), "Paris": ("Cloudy", 17)}


@tool
async def get_weather(city: str, unit: str = "celsius") -> str:
    """
    Get current weather for a city.

    Args:
        city: City name (e.g., "Tokyo", "New York").
        unit: Temperature unit — "celsius" or "fahrenheit".

    Returns:
        Current weather description.

    Best Practices:
        - Use full city names, not abbreviations.
        - Default to celsius unless the user specifies otherwise.
    """
    sky, celsius = _WEATHER.get(city, ("Clear", 20))
    degrees = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return f"{sky}, {degrees}°{'C' if unit == 'celsius' else 'F'} in {city}"


def _workspace_note(ctx: Mapping[str, Any]) -> str:
    return f"Current workspace: {ctx.get('workspace', '/')}"


@tool(prompt_injection_builder=_workspace_note)
def list_files(path: str = ".") -> list[str]:
    """List files in a directory of the workspace."""
    return sorted(p.name for p in Path(path).iterdir())


@tool(best_practices=["Pass one 'label value' pair per line."])
async def make_chart(data: str, title: str = "") -> tuple[str, Image]:
    """Draw a bar chart of 'label value' lines and return it as an image.

    Args:
        data: One 'label value' pair per line, e.g. "Tokyo 22".
        title: Chart title.
    """
    bars = [line.split() for line in data.splitlines() if line.strip()]
    return f"Chart '{title or 'untitled'}' with {len(bars)} bars", Image.from_bytes(CHART_PNG)


@tool(defer=True, search_hint="zip archive pack")
def compress_file(path: str) -> str:
    """Compress a file into a zip archive. Returns the archive's path."""
    return f"{path}.zip"


def build_registry() -> ToolRegistry:
    """A registry with the four tools (and no optional plugins: explicit arguments win over
    any ``[tool.toolregistry]`` table found next to where the example runs)."""
    registry = ToolRegistry("weather-demo", think_augment=False, tool_discovery=False)
    for t in (get_weather, list_files, make_chart, compress_file):
        registry.register(t)
    return registry
