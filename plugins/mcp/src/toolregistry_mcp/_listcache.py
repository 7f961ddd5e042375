"""The tools/list cache: a server's tool list kept after a successful listing, so that a later
load registers its tools without starting the server or importing the ``mcp`` SDK.

It owns what identifies a server (:func:`for_source`: a stdio server's command, arguments,
working directory, a digest of its environment and the size and modification time of the
files it runs; an HTTP server's URL, and a digest of its headers and ``auth`` options as the
partition of ``private`` entries), the freshness policy (the ``list-cache`` option, or the
server's ``ttlMs`` / ``cacheScope`` hints), and where entries live: the registry's store (table
``mcp_tool_lists``) when it has one, else one private file per entry in the user's cache
folder. Nothing secret is kept: entries are named by digests and hold the tools' JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

from ._listed import ListedTool, tool_json
from ._spec import public_url

if TYPE_CHECKING:
    from toolregistry import ToolRegistry
    from toolregistry.plugin import Store, StoreURL

    from ._client import MCPClient
    from ._session import Negotiated
    from ._spec import ServerSpec

__all__ = ["ListCache", "Listing", "cache_dir", "cache_hint", "for_source", "keep",
           "list_cache_mode"]

_FORMAT = 1
MAX_HINT = 24 * 3600.0  # the SDK's cap on a server's ttlMs
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def list_cache_mode(value: Any, option: str = "list_cache") -> str | float:
    """``"auto"`` (the server's cache hints), ``"off"``, or a lifetime in seconds from a
    number or a duration such as ``"90s"``, ``"10m"``, ``"1h"``, ``"1d"``."""
    if value in ("auto", "off"):
        return str(value)
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if seconds is None:
        raise ConfigError(f"{option} must be 'auto', 'off', or how long a listed tool list "
                          f"stays fresh (seconds, or '90s', '10m', '1h', '1d'), not {value!r}")
    return "off" if seconds == 0 else seconds


def cache_dir() -> Path:
    """The user's cache folder for tool lists: ``$XDG_CACHE_HOME/toolregistry/mcp-tools``
    (``~/.cache/...``; ``~/Library/Caches/...`` on macOS, ``%LOCALAPPDATA%`` on Windows)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if base and os.path.isabs(base):
        root = Path(base)
    elif sys.platform == "darwin":
        root = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        root = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        root = Path.home() / ".cache"
    return root / "toolregistry" / "mcp-tools"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@frozen
class Listing:
    """One cached tool list: the tools' JSON and what the session said around it."""

    tools: list[dict[str, Any]]
    server_name: str | None
    protocol_version: str | None
    invalid: dict[str, str]
    as_task: list[str]
    stored_at: float
    expires_at: float | None  # the server's hint (``None``: the option decides)

    def listed(self) -> list[ListedTool]:
        return [ListedTool(raw) for raw in self.tools]


class _Files:
    """Entries as private files (0600 in a 0700 folder), replaced atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> str | None:
        try:
            return (self.folder / f"{key}.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def put(self, key: str, text: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder.chmod(0o700)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, self.folder / f"{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self, key: str) -> None:
        (self.folder / f"{key}.json").unlink(missing_ok=True)

    def __str__(self) -> str:
        return str(self.folder)


_TABLE = "mcp_tool_lists"
_SCHEMA = ("mcp-tool-lists", 1, (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, entry TEXT NOT NULL)",))
_STATE_KEY = "list_cache_store"
_lock = threading.Lock()


class _Rows:
    """Entries as rows of the registry's store (shared by its processes and hosts), opened
    on first use (once per registry, closed with it)."""

    def __init__(self, registry: ToolRegistry, url: StoreURL) -> None:
        self.registry = weakref.ref(registry)
        self.url = url

    def _db(self) -> Store:
        registry = self.registry()
        if registry is None:
            raise RuntimeError("the registry was dropped")
        state = registry.plugin_state("mcp")
        with _lock:
            store: Store | None = state.get(_STATE_KEY)
            if store is None:
                from ._storage import open_for

                store = state[_STATE_KEY] = open_for(registry, self.url, _SCHEMA,
                                                     durable=False)
        return store

    def get(self, key: str) -> str | None:
        with self._db().transaction() as tx:
            rows = tx.execute(f"SELECT entry FROM {_TABLE} WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def put(self, key: str, text: str) -> None:
        with self._db().transaction() as tx:
            tx.execute(f"INSERT INTO {_TABLE} (key, entry) VALUES (?, ?) ON CONFLICT (key) "
                       "DO UPDATE SET entry = excluded.entry", (key, text))

    def delete(self, key: str) -> None:
        with self._db().transaction() as tx:
            tx.execute(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))

    def __str__(self) -> str:
        return f"{self.url.masked} ({_TABLE})"


def _backend(registry: ToolRegistry) -> _Files | _Rows:
    """The registry's store, else the user's cache folder."""
    url = registry.store_url()
    return _Files(cache_dir()) if url is None else _Rows(registry, url)


class ListCache:
    """The cache entry of one server: read it while fresh, store a new listing, drop it."""

    def __init__(self, backend: _Files | _Rows, identity: str, partition: str,
                 mode: str | float, server: str) -> None:
        self.backend = backend
        self.mode = mode
        self.server = server
        # Entries the server marked public are shared by every partition (credentials).
        self.keys = {"private": _digest([_FORMAT, identity, partition]),
                     "public": _digest([_FORMAT, identity, "public"])}

    def fresh(self) -> Listing | None:
        """The cached listing while it is fresh; ``None`` when there is none (a corrupt
        entry is ignored, with an ``mcp.list_cache_corrupt`` debug event)."""
        now = time.time()
        for scope in ("private", "public"):
            listing = self._read(self.keys[scope])
            if listing is None:
                continue
            if isinstance(self.mode, float):
                until = listing.stored_at + self.mode
            else:
                until = listing.expires_at or 0.0
            if listing.stored_at <= now + 60 and now < until:
                log.debug("mcp.list_cache_hit", server=self.server, tools=len(listing.tools),
                          scope=scope, age=round(now - listing.stored_at, 3))
                return listing
        return None

    def _read(self, key: str) -> Listing | None:
        try:
            text = self.backend.get(key)
        except Exception as exc:  # the cache is a shortcut: without it the server is asked
            self._failed("read", exc)
            return None
        if text is None:
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != _FORMAT:
                raise ValueError("not a tool-list cache entry of this version")
            tools = data["tools"]
            if not isinstance(tools, list):
                raise ValueError("'tools' is not a list")
            listing = Listing(tools=tools, server_name=data.get("server_name"),
                              protocol_version=data.get("protocol_version"),
                              invalid=dict(data.get("invalid") or {}),
                              as_task=list(data.get("as_task") or []),
                              stored_at=float(data["stored_at"]),
                              expires_at=None if data.get("expires_at") is None
                              else float(data["expires_at"]))
            listing.listed()  # every tool must read back
            return listing
        except Exception as exc:
            log.debug("mcp.list_cache_corrupt", server=self.server, where=str(self.backend),
                      entry=key, error=f"{type(exc).__name__}: {exc}")
            return None

    def save(self, tools: list[Any], *, hint: float | None, scope: str,
             server_name: str | None, protocol_version: str | None,
             invalid: Mapping[str, str], as_task: list[str]) -> None:
        """Keep a successful listing; ``hint`` is the server's ``ttlMs`` in seconds (``None``
        when it sent none). With ``list-cache = "auto"`` a listing without a positive hint is
        not kept (and an older entry is dropped)."""
        now = time.time()
        if self.mode == "auto" and not hint:
            self.drop()
            return
        own, other = ("public", "private") if scope == "public" else ("private", "public")
        entry = {
            "format": _FORMAT, "server": self.server, "stored_at": now,
            "expires_at": now + min(hint, MAX_HINT) if hint else None, "scope": own,
            "server_name": server_name, "protocol_version": protocol_version,
            "invalid": dict(invalid), "as_task": sorted(as_task),
            "tools": [tool_json(tool) for tool in tools],
        }
        text = json.dumps(entry, ensure_ascii=False)
        try:
            self.backend.delete(self.keys[other])
            self.backend.put(self.keys[own], text)
        except Exception as exc:
            self._failed("store", exc)
            return
        log.debug("mcp.list_cache_stored", server=self.server, tools=len(tools), scope=own,
                  where=str(self.backend))

    def drop(self) -> None:
        """Forget the cached listing (the server's list changed, or a tool went missing)."""
        try:
            for key in self.keys.values():
                self.backend.delete(key)
        except Exception as exc:
            self._failed("drop", exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        log.warning("mcp.list_cache_failed", server=self.server, where=str(self.backend),
                    action=what, error=f"{type(exc).__name__}: {exc}")


def for_source(registry: ToolRegistry, spec: ServerSpec, mode: str | float, *,
               inherit_env: tuple[str, ...] = (), command_prefix: tuple[str, ...] = (),
               auth: Any = None, protocol_version: str = "auto") -> ListCache | None:
    """The cache entry of a source (``None`` when ``mode`` is ``"off"``, when the source
    authenticates with an ``httpx`` auth object of the application's, whose identity the
    cache cannot tell, or when there is nowhere to keep it)."""
    if mode == "off":
        return None
    if auth is not None and not isinstance(auth, Mapping):
        log.debug("mcp.list_cache_off", server=spec.display,
                  reason="an application's own auth object: its identity is unknown")
        return None
    try:
        backend = _backend(registry)
    except (RuntimeError, KeyError, OSError) as exc:  # no home folder to find a cache in
        log.debug("mcp.list_cache_off", server=spec.display, reason=str(exc))
        return None
    if spec.transport == "stdio":
        cwd = spec.cwd or os.getcwd()
        identity: dict[str, Any] = {
            "transport": "stdio", "command": spec.command, "args": list(spec.args),
            "cwd": spec.cwd, "prefix": list(command_prefix),
            "env": _digest(sorted(spec.env.items())),
            "inherited": _digest([(n, os.environ.get(n)) for n in sorted(inherit_env)]),
            "files": _files([spec.command or "", *spec.args], cwd),
        }
        partition = ""
        where = spec.display
    else:
        identity = {"transport": spec.transport, "url": spec.url}
        partition = _digest({"headers": sorted(spec.headers.items()),
                             "auth": dict(auth) if auth is not None else None})
        where = public_url(spec.url or "")
    # The revision asked for decides how some tools are called (tasks): part of the server.
    identity["protocol"] = protocol_version
    return ListCache(backend, _digest(identity), partition, mode, where)


def _files(words: list[str], cwd: str) -> list[tuple[str, int, int]]:
    """The local files a stdio command runs (its program, a script), with their size and
    modification time: editing one is a new server."""
    found = []
    for word in words:
        path = os.path.join(cwd, word)
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        if os.path.isfile(path):
            found.append((word, info.st_mtime_ns, info.st_size))
    return found


def cache_hint(init: Negotiated | None, page: Any) -> tuple[float | None, str]:
    """The server's cache hints on a listing: its ``ttlMs`` in seconds (``None``: none) and
    ``cacheScope``; only a 2026-07-28 session's count (the SDK's rule)."""
    if init is None or not init.modern or "ttl_ms" not in page.model_fields_set:
        return None, "private"
    return page.ttl_ms / 1000, "public" if page.cache_scope == "public" else "private"


async def keep(client: MCPClient, tools: list[Any]) -> None:
    """Keep a successful listing of ``client``'s server (a failure to is only reported)."""
    import asyncio

    cache = client.list_cache
    assert cache is not None
    hint, scope = client._list_hint
    info = client.server_info
    await asyncio.to_thread(
        cache.save, tools, hint=hint, scope=scope,
        server_name=info.name if info is not None else None,
        protocol_version=client.negotiated_version, invalid=client.invalid_tools,
        as_task=sorted(client._as_task))
