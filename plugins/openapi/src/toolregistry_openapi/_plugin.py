"""The plugin's hook implementations (entry point ``openapi``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import Loader, hookimpl

if TYPE_CHECKING:
    from toolregistry import Tool, ToolRegistry


# The loader module (httpx, yaml, the converters) is imported on first use, so that loading
# the plugin -- which every registry does -- stays cheap.
def _load(registry: ToolRegistry, spec: Any, **options: Any) -> list[Tool]:
    from ._loader import load_openapi

    return load_openapi(registry, spec, **options)


async def _aload(registry: ToolRegistry, spec: Any, **options: Any) -> list[Tool]:
    from ._loader import aload_openapi

    return await aload_openapi(registry, spec, **options)


@hookimpl
def loaders() -> Mapping[str, Loader]:
    """``openapi`` (and its async twin) for ``register_from_openapi`` and config sources."""
    return {"openapi": _load, "openapi:async": _aload}
