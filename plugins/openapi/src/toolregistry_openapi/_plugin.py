"""The plugin's hook implementations (entry point ``openapi``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolregistry.plugin import SourceKind, hookimpl

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
def loaders() -> list[SourceKind]:
    """``register_from_openapi`` (and its async twin) and ``kind = "openapi"`` config sources:
    ``spec = "..."``, a file path relative to the configuration file, or a URL."""
    return [SourceKind(name="openapi", load=_load, aload=_aload, target="spec", paths=("spec",),
                       handles=("include", "exclude", "defer"))]
