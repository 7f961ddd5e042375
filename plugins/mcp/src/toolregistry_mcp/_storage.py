"""Opening the registry's store for one of this plugin's tables: its schema ensured, and the
store closed with the registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolregistry import ToolRegistry
    from toolregistry.plugin import Store, StoreURL

__all__ = ["open_for"]


def open_for(registry: ToolRegistry, url: StoreURL,
             schema: tuple[str, int, Sequence[str]], *, durable: bool = True) -> Store:
    """The store at ``url`` with ``schema`` (component, version, DDL) in place, closed when
    ``registry`` closes."""
    from toolregistry.plugin import open_store

    store = open_store(url, durable=durable)
    try:
        store.ensure_schema(*schema)
    except BaseException:
        store.close()
        raise
    registry.add_closer(store.close)
    return store
