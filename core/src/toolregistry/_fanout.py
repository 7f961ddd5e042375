"""Tool-list changes shared by every registry on one store (:meth:`ToolRegistry.share_changes`,
in ``_registry_fanout``): each worker and host publishes its own changes and hears the others'.

A change heard from elsewhere is not replayed as a local change event (the tools it names may
not exist here, and plugins act on local events); the registry applies what it can apply
by itself -- a tool or namespace disabled or enabled, a reviewed change accepted or kept --
and hands every :class:`RemoteChange` to the subscribers of :meth:`SharedChanges.on_remote`:
a plugin that holds sources lists them again, a served registry tells its clients. Changes
made while a remote one is handled are not published again (no echo between workers).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from ._log import log
from ._registry_base import subscribe
from .errors import ToolNotFoundError

if TYPE_CHECKING:
    from ._changefeed import ChangeFeed
    from ._registry import ToolRegistry
    from .events import ChangeEvent

__all__ = ["RemoteChange", "SharedChanges"]

_handling: ContextVar[str | None] = ContextVar("toolregistry_remote_change", default=None)

RemoteCallback = Callable[["RemoteChange"], None]


@frozen
class RemoteChange:
    """A change made by another registry on the same store.

    ``kind`` is a :data:`~toolregistry.events.ChangeKind`, or ``review`` (a pending change
    accepted or kept: ``details`` has ``tool``, ``version``, ``action``), or ``resync`` (the
    store was out of reach a while: changes may have been missed, look again). ``origin``
    names the publishing process (``host:pid:token``)."""

    kind: str
    origin: str
    names: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(factory=dict)


class SharedChanges:
    """One registry's share of the store's change feed; see :meth:`ToolRegistry.share_changes`."""

    def __init__(self, registry: ToolRegistry, feed: ChangeFeed, owns_store: bool) -> None:
        import secrets
        import socket

        self.origin = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.store_url = feed.store.url
        self._registry = registry
        self._feed = feed
        self._owns_store = owns_store
        self._callbacks: list[RemoteCallback] = []
        self._lock = threading.Lock()
        self._closed = False
        self._unsubscribe = registry.on_change(self._local)
        feed.subscribe(self._heard)

    def on_remote(self, callback: RemoteCallback) -> Callable[[], None]:
        """Call ``callback(change)`` (on the feed's thread) for each change made elsewhere;
        returns a function that unsubscribes."""
        return subscribe(self._lock, self._callbacks, callback)

    def publish(self, kind: str, names: tuple[str, ...] = (),
                details: Mapping[str, Any] | None = None) -> None:
        """Tell every other registry on the store of a change made here (the registry's
        own changes are published without this); a store out of reach is logged, not
        raised: the change is made here all the same."""
        if self._closed or _handling.get() is not None:
            return
        try:
            self._feed.publish({"origin": self.origin, "kind": kind, "names": list(names),
                                "details": dict(details or {})})
        except Exception as exc:
            log.warning("changes.publish_failed", store=str(self.store_url), kind=kind,
                        error=f"{type(exc).__name__}: {exc}".strip())

    def _local(self, event: ChangeEvent) -> None:
        if event.kind != "setting":
            self.publish(event.kind, event.names, event.details)

    def _heard(self, payload: dict[str, Any]) -> None:
        origin = str(payload.get("origin", "?"))
        if origin == self.origin or self._closed or self._registry.closed:
            return
        names = payload.get("names")
        details = payload.get("details")
        change = RemoteChange(
            kind=str(payload.get("kind", "resync")), origin=origin,
            names=tuple(str(n) for n in names) if isinstance(names, list) else (),
            details=details if isinstance(details, dict) else {})
        token = _handling.set(origin)
        try:
            self._apply(change)
        finally:
            _handling.reset(token)

    def _apply(self, change: RemoteChange) -> None:
        registry = self._registry
        log.debug("changes.heard", registry=registry.name, kind=change.kind,
                  origin=change.origin, tools=list(change.names))
        if change.kind in ("disable", "enable"):
            namespace = change.details.get("namespace")
            for name in (namespace,) if isinstance(namespace, str) else change.names:
                try:
                    if change.kind == "disable":
                        registry.disable(name, str(change.details.get("reason", "")))
                    else:
                        registry.enable(name)
                except ToolNotFoundError:
                    pass  # not a tool of this registry
        for callback in list(self._callbacks):
            try:
                callback(change)
            except Exception as exc:  # one subscriber must not keep the others from hearing
                log.warning("changes.callback_failed", kind=change.kind,
                            error=f"{type(exc).__name__}: {exc}")
        if change.kind == "review":
            details = change.details
            try:
                registry._review(str(details.get("tool")), str(details.get("version")),
                                 str(details.get("action")))
            except (LookupError, ValueError) as exc:  # not held back here (yet)
                log.info("changes.review_skipped", tool=details.get("tool"),
                         error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Stop publishing and hearing (idempotent; the registry's close calls it)."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._feed.close()
        if self._owns_store:
            self._feed.store.close()
