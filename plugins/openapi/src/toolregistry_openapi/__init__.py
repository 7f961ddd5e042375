"""OpenAPI 2.0 / 3.0 / 3.1 services as toolregistry tools.

Installed, it gives ``registry.register_from_openapi(spec, ...)`` and the ``openapi`` source
kind; this module also exposes the loader for direct use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "Limits",
    "OpenAPIError",
    "aclose",
    "aload_openapi",
    "close",
    "load_openapi",
    "tools_from_openapi",
]
