"""What the parts of :class:`~toolregistry.ToolRegistry` share.

It owns ``_whole`` (a part of the class seen as the whole ``ToolRegistry``, for calls that take
one) and declares, for the type checker only, the registry's state (set in
``ToolRegistry.__init__``) and the methods one part of the class calls in another, so that the
parts (``_registry``, ``_registry_changes``, ``_registry_queries``, ``_registry_sources``)
type-check each on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .events import ChangeEvent

if TYPE_CHECKING:
    from ._execution import Executor
    from ._hooks import Hooks
    from ._plugins import PluginHost
    from ._registry import ToolRegistry
    from ._settings import Settings
    from .events import ChangeKind
    from .formats._emit import Emitter
    from .tool import Tool

ChangeCallback = Callable[[ChangeEvent], None]


def subscribe(lock: threading.RLock | threading.Lock, callbacks: list[Any],
              callback: Any) -> Callable[[], None]:
    """Add ``callback`` to ``callbacks`` (under ``lock``); a function that removes it."""
    with lock:
        callbacks.append(callback)

    def unsubscribe() -> None:
        with lock:
            if callback in callbacks:
                callbacks.remove(callback)

    return unsubscribe


class RegistryBase:
    """The state and cross-part methods of a registry, as the type checker sees them."""

    @property
    def _whole(self) -> ToolRegistry:
        """This registry as the whole class, for calls that take a ``ToolRegistry`` (hooks,
        prompt helpers): each part is only a piece of it to the type checker."""
        return cast("ToolRegistry", self)

    if TYPE_CHECKING:
        name: str
        _host: PluginHost
        _hooks: Hooks
        _lock: threading.RLock
        _tools: dict[str, Tool]
        _disabled: dict[str, str]
        _disabled_namespaces: dict[str, str]
        _callbacks: list[ChangeCallback]
        _version: int
        _settings_version: int
        _revealed: dict[str, None]
        _config_settings: Settings
        _reveal_version: int
        _emitter: Emitter
        _executor: Executor | None

        def is_enabled(self, name: str) -> bool: ...

        def _not_found(self, name: str, what: str = "tool") -> str: ...

        def _prepare(self, tool: Tool, namespace: str | None) -> Tool: ...

        def _add(self, tools: list[Tool], *, namespace: str | None,
                 replace: bool) -> list[Tool]: ...

        def _emit(self, kind: ChangeKind, names: tuple[str, ...],
                  details: dict[str, Any]) -> None: ...
