"""Rationale-augmented tool calling: ``toolcall_reason`` injected into schemas, stripped from calls."""

from __future__ import annotations

from ._plugin import DEFAULT_DESCRIPTION, REASON_FIELD, ThinkSettings, reason_property

__all__ = ["DEFAULT_DESCRIPTION", "REASON_FIELD", "ThinkSettings", "reason_property"]
