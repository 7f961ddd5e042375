"""MCP OAuth tokens and client registrations on the registry's shared store (the kernel's
``store`` option: ``sqlite:///...`` or ``postgresql://...``), so that every process and host
using that store shares one client registration, and one set of tokens, per server."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from toolregistry import ToolRegistry
    from toolregistry.plugin import Store, StoreURL

__all__ = ["StoreTokenStorage", "shared_auth"]

M = TypeVar("M", bound=BaseModel)

_COMPONENT = "mcp_oauth"
_VERSION = 1
_DDL = ("CREATE TABLE IF NOT EXISTS mcp_oauth (key TEXT PRIMARY KEY, client TEXT, "
        "tokens TEXT, expires_at DOUBLE PRECISION)",)


class StoreTokenStorage:
    """The SDK's ``TokenStorage`` (with ``expires_at`` and ``forget_client``) as one row of the
    ``mcp_oauth`` table of a store, keyed by server, client and grant."""

    def __init__(self, url: StoreURL, key: str) -> None:
        self.url = url
        self.key = key
        self._store: Store | None = None
        self._lock = threading.Lock()

    def _db(self) -> Store:
        with self._lock:
            if self._store is None:
                from toolregistry.plugin import open_store

                store = open_store(self.url)
                store.ensure_schema(_COMPONENT, _VERSION, _DDL)
                self._store = store
            return self._store

    def _row(self) -> tuple[Any, ...] | None:
        with self._db().transaction() as tx:
            rows = tx.execute("SELECT client, tokens, expires_at FROM mcp_oauth WHERE key = ?",
                              (self.key,))
        return rows[0] if rows else None

    def _set(self, **values: Any) -> None:
        columns = sorted(values)
        with self._db().transaction(lock=f"mcp_oauth:{self.key}") as tx:
            tx.execute("INSERT INTO mcp_oauth (key) VALUES (?) ON CONFLICT (key) DO NOTHING",
                       (self.key,))
            tx.execute(f"UPDATE mcp_oauth SET {', '.join(f'{c} = ?' for c in columns)} "
                       "WHERE key = ?", (*(values[c] for c in columns), self.key))

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import anyio

        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        row = await self._run(self._row)
        return _model(OAuthToken, row[1] if row else None)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        from ._oauth import token_expiry

        await self._run(self._set, tokens=tokens.model_dump_json(exclude_none=True),
                        expires_at=token_expiry(tokens))

    async def expires_at(self) -> float | None:
        row = await self._run(self._row)
        return float(row[2]) if row and row[2] is not None else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        row = await self._run(self._row)
        return _model(OAuthClientInformationFull, row[0] if row else None)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._run(self._set, client=client_info.model_dump_json(exclude_none=True))

    async def forget_client(self) -> bool:
        await self._run(self._set, client=None, tokens=None, expires_at=None)
        return True

    def close(self) -> None:
        """Close the store's connections (idempotent)."""
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()


def _model(kind: type[M], text: str | None) -> M | None:
    from pydantic import ValidationError

    if not text:
        return None
    try:
        return kind.model_validate(json.loads(text))
    except (ValueError, ValidationError):
        return None


def shared_auth(registry: ToolRegistry, server_url: str, auth: Any) -> Any:
    """``auth`` with its tokens on the registry's store when one is configured and the option
    names no storage of its own (``token-store`` or ``storage``); else ``auth`` itself."""
    from toolregistry.plugin import store_url

    if not isinstance(auth, Mapping) or any(
            k in auth for k in ("token_store", "token-store", "storage")):
        return auth
    url = store_url(registry)
    if url is None:
        return auth
    from ._oauth import storage_key

    storage = StoreTokenStorage(url, storage_key(server_url, auth))
    add_closer = getattr(registry, "add_closer", None)
    if add_closer is not None:
        add_closer(storage.close)
    return {**auth, "storage": storage}
