"""Change events delivered through the ``on_change`` hook and ``registry.on_change`` callbacks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attrs import field, frozen

__all__ = ["ChangeEvent", "ChangeKind"]

ChangeKind = Literal[
    "register", "unregister", "enable", "disable", "metadata", "namespace", "rename", "setting"
]


@frozen
class ChangeEvent:
    """One change to a registry.

    ``names`` are the tool names concerned (empty for a registry-level ``setting``);
    ``details`` carries kind-specific data, e.g. ``{"setting": "think_augment", "value": True}``,
    ``{"reason": "maintenance"}`` or ``{"replaced": True}``.
    """

    kind: ChangeKind
    names: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(factory=dict)
