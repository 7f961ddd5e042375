"""The registry's side of shared tool-list changes: ``share_changes`` and ``shared_changes``
(the feed itself, :class:`~toolregistry._fanout.SharedChanges`, is loaded when a registry
shares its changes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._log import log
from ._registry_base import RegistryBase
from .errors import ConfigError

if TYPE_CHECKING:
    from ._fanout import SharedChanges

__all__ = ["RegistryFanOut"]


class RegistryFanOut(RegistryBase):
    """Sharing tool-list changes through the registry's store."""

    def share_changes(self, *, poll: float = 0.5) -> SharedChanges:
        """Publish this registry's tool-list changes on its store (the ``store`` option) and
        hear those of every other registry on it: other workers of ``toolregistry serve
        --workers``, other hosts. With PostgreSQL they arrive at once (``LISTEN`` /
        ``NOTIFY``); with SQLite the store is polled every ``poll`` seconds. Idempotent;
        stops when the registry closes. A registry without a store is a
        :class:`~toolregistry.errors.ConfigError`."""
        with self._lock:
            shared: SharedChanges | None = self.__dict__.get("_shared_changes")
            if shared is not None:
                return shared
            url = self._whole.store_url()
            if url is None:
                raise ConfigError("share_changes() needs a store shared by the registries: "
                                  "set store = 'postgresql://...' (or 'sqlite:///...') in "
                                  "[tool.toolregistry]")
            from ._changefeed import ChangeFeed
            from ._fanout import SharedChanges
            from ._store import open_store

            store = open_store(url)
            try:
                shared = SharedChanges(self._whole, ChangeFeed(store, poll=poll), True)
            except BaseException:
                store.close()
                raise
            self.__dict__["_shared_changes"] = shared
        self._whole.add_closer(shared.close)
        log.info("changes.shared", registry=self.name, store=str(url), origin=shared.origin)
        return shared

    @property
    def shared_changes(self) -> SharedChanges | None:
        """What :meth:`share_changes` returned (``None`` before it was called)."""
        return self.__dict__.get("_shared_changes")
