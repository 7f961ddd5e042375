"""OpenAPI 2.0 / 3.0 / 3.1 services as toolregistry tools.

Installed, it gives ``registry.register_from_openapi(spec, ...)`` and the ``openapi`` source
kind; this module also exposes the loader for direct use.
"""

from __future__ import annotations

from ._document import Limits
from ._errors import OpenAPIError
from ._loader import aclose, aload_openapi, close, load_openapi, tools_from_openapi

__all__ = [
    "Limits",
    "OpenAPIError",
    "aclose",
    "aload_openapi",
    "close",
    "load_openapi",
    "tools_from_openapi",
]
