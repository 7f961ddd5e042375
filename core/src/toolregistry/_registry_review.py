"""Reviewed changes, for :class:`~toolregistry.ToolRegistry`: the changes sources hold back
until someone reviews them (an MCP server that changed a tool after it was accepted), listed
with their screening findings and accepted or kept from any UI through the kernel
(``pending_changes`` / ``review_change`` hooks), never through the plugin that holds them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._registry_base import RegistryBase
from .errors import ToolNotFoundError

if TYPE_CHECKING:
    from .types import PendingChange


class RegistryReview(RegistryBase):
    """Listing, accepting and keeping pending tool changes."""

    def pending_changes(self) -> list[PendingChange]:
        """The tool changes that wait for review (every plugin's), each with the screening
        findings of its *pending* version."""
        return self._hooks.pending_changes(self._whole)

    def accept_change(self, name: str, version: str) -> None:
        """Adopt exactly ``version`` of tool ``name``'s pending change (its
        ``PendingChange.version``, as shown to the reviewer): a newer version stays pending."""
        self._review(name, version, "accept")

    def keep_change(self, name: str, version: str) -> None:
        """Keep the accepted version of tool ``name`` over its pending ``version`` (the change
        stays listed, marked ``kept``, until its source moves to another version)."""
        self._review(name, version, "keep")

    def _review(self, name: str, version: str, action: str) -> None:
        if not isinstance(version, str) or not version:
            raise ValueError(f"the version to {action} must be the pending change's version "
                             f"(PendingChange.version), got {version!r}")
        if name not in self._tools:
            raise ToolNotFoundError(self._not_found(name))
        if not self._hooks.review_change(self._whole, name, version, action):
            raise LookupError(f"tool {name!r} has no pending change: no plugin holds changes "
                              "of it back (registry.pending_changes() lists those that do)")
        shared = self.__dict__.get("_shared_changes")
        if shared is not None:  # every other worker and host adopts (or keeps) it too
            shared.publish("review", (name,), {"tool": name, "version": version,
                                               "action": action})
