"""The plugin's hook implementations (entry point ``openapi``)."""

from __future__ import annotations

from collections.abc import Mapping

from toolregistry import hookimpl
from toolregistry.hookspecs import Loader

from ._loader import aload_openapi, load_openapi


@hookimpl
def loaders() -> Mapping[str, Loader]:
    """``openapi`` (and its async twin) for ``register_from_openapi`` and config sources."""
    return {"openapi": load_openapi, "openapi:async": aload_openapi}
