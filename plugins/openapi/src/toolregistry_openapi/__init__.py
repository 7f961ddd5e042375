"""OpenAPI 2.0 / 3.0 / 3.1 services as toolregistry tools.

Installed, it gives ``registry.register_from_openapi(spec, ...)`` and the ``openapi`` source
kind; this module also exposes the loader for direct use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._document import Limits
    from ._errors import OpenAPIError
    from ._loader import aclose, aload_openapi, close, load_openapi, tools_from_openapi

# Loaded on first use, so that loading the plugin stays cheap.
_LAZY = {
    "Limits": "._document",
    "OpenAPIError": "._errors",
    "aclose": "._loader",
    "aload_openapi": "._loader",
    "close": "._loader",
    "load_openapi": "._loader",
    "tools_from_openapi": "._loader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolregistry_openapi' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)

__all__ = [
    "Limits",
    "OpenAPIError",
    "aclose",
    "aload_openapi",
    "close",
    "load_openapi",
    "tools_from_openapi",
]
