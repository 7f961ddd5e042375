"""Rationale-augmented tool calling: ``toolcall_reason`` injected into schemas, stripped
from calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plugin import DEFAULT_DESCRIPTION, REASON_FIELD, NativeReasonWarning, reason_property

if TYPE_CHECKING:
    from ._settings import ThinkSettings

__all__ = ["DEFAULT_DESCRIPTION", "REASON_FIELD", "NativeReasonWarning", "ThinkSettings",
           "reason_property"]


def __getattr__(name: str) -> Any:
    if name == "ThinkSettings":  # pydantic is loaded on use, not with the plugin
        from ._settings import ThinkSettings

        return ThinkSettings
    raise AttributeError(f"module 'toolregistry_think' has no attribute {name!r}")
