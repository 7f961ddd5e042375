"""Values described without their content, for logs and traces that keep no argument
values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["value_shape"]


def value_shape(value: Any) -> str:
    """A value as its type and size only, never its content: ``"<str, 5 chars>"``,
    ``"<int>"``, ``"<list, 3 items>"``, ``"<object, 2 keys>"``."""
    if value is None:
        return "<null>"
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, int):
        return "<int>"
    if isinstance(value, float):
        return "<float>"
    if isinstance(value, str):
        return f"<str, {len(value)} chars>"
    if isinstance(value, Mapping):
        return f"<object, {len(value)} keys>"
    if isinstance(value, (list, tuple)):
        return f"<list, {len(value)} items>"
    return f"<{type(value).__name__}>"
