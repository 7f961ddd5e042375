"""The plugin's error type."""

from __future__ import annotations

from toolregistry.errors import ToolRegistrationError

__all__ = ["OpenAPIError"]


class OpenAPIError(ToolRegistrationError):
    """An OpenAPI document could not be read, resolved or turned into tools.

    The message names the document (and the ``$ref`` or operation) and what to do.
    """
