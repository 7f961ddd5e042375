"""What the parts of :class:`~toolregistry.ToolRegistry` share.

It owns ``_whole`` (a part of the class seen as the whole ``ToolRegistry``, for calls that take
one), the hook façade and the emitter (``_hooks``, ``_emitter``: built on first use, so that
creating a registry loads neither), names the parts' methods after the whole class
(``named_after``), and declares, for the type checker only, the registry's state (set in
``ToolRegistry.__init__``) and the methods one part of the class calls in another, so that the
parts (``_registry``, ``_registry_changes``, ``_registry_queries``, ``_registry_sources``)
type-check each on its own.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ._execution import Executor
    from ._hooks import Hooks
    from ._plugins import PluginHost
    from ._registry import ToolRegistry
    from ._settings import Settings
    from .events import ChangeEvent, ChangeKind
    from .formats._emit import Emitter
    from .tool import Tool

ChangeCallback = Callable[["ChangeEvent"], None]


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


def named_after(cls: type) -> None:
    """The methods ``cls`` takes from its private parts (``_registry_*``) carry its name, so
    that Python's own errors ("RegistryQueries.get_schemas() got an unexpected keyword
    argument") name the class users know."""
    for part in cls.__mro__[1:]:
        if not part.__module__.startswith(f"{__package__}._registry"):
            continue
        for name, value in vars(part).items():
            function = getattr(value, "__func__", value)  # static and class methods too
            if inspect.isfunction(function) and _resolved(cls, name) is value:
                function.__qualname__ = f"{cls.__name__}.{name}"


def _resolved(cls: type, name: str) -> Any:
    """What ``cls.name`` is found as in the class namespaces, the first along the MRO (what
    ``inspect.getattr_static`` answers for a plain class, without its descriptor checks)."""
    return next(vars(k)[name] for k in cls.__mro__ if name in vars(k))


class RegistryBase:
    """The state and cross-part methods of a registry, as the type checker sees them."""

    @property
    def _whole(self) -> ToolRegistry:
        """This registry as the whole class, for calls that take a ``ToolRegistry`` (hooks,
        prompt helpers): each part is only a piece of it to the type checker."""
        return cast("ToolRegistry", self)

    # Plain attributes once built: a cached_property leaves its value in the instance's
    # __dict__, which later lookups find first. Two threads asking first at once may each
    # build an emitter (cached_property takes no lock from Python 3.12 on): one is kept, the
    # other held only empty caches.
    @cached_property
    def _hooks(self) -> Hooks:
        return self._host.hooks

    @cached_property
    def _emitter(self) -> Emitter:
        from .formats._emit import Emitter

        return Emitter(self._whole, self._hooks)

    if TYPE_CHECKING:
        name: str
        _host: PluginHost
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
        _executor: Executor | None

        def is_enabled(self, name: str) -> bool: ...

        def _not_found(self, name: str, what: str = "tool") -> str: ...

        def _prepare(self, tool: Tool, namespace: str | None) -> Tool: ...

        def _add(self, tools: list[Tool], *, namespace: str | None,
                 replace: bool) -> list[Tool]: ...

        def _emit(self, kind: ChangeKind, names: tuple[str, ...],
                  details: dict[str, Any]) -> None: ...
