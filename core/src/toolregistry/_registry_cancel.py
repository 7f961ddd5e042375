"""Cancelling a call in flight, for :class:`~toolregistry.ToolRegistry`, from outside its
caller (a UI's Cancel button, another process's request)."""

from __future__ import annotations

from ._registry_base import RegistryBase


class RegistryCancel(RegistryBase):
    """``cancel_call``."""

    def cancel_call(self, call_id: str, reason: str = "cancelled") -> bool:
        """End call ``call_id`` early: its caller is answered at once with an error result of
        kind ``"cancelled"`` naming ``reason``, as its deadline would have ended it. Returns
        False when no call with that id is in flight here, or it cannot be cancelled (only a
        call with an id and a deadline can: see docs/execution.md)."""
        executor = self._executor
        if not call_id or executor is None:
            return False
        return executor.in_flight.cancel(call_id, reason)
