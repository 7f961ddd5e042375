"""The registry: tools in, schemas out, calls executed."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import attrs

from . import _config
from ._log import log
from ._names import normalize_name, qualify
from ._plugins import PluginHost, PluginSettings, get_host
from ._settings import Settings
from .errors import (
    ConfigError,
    MissingPluginError,
    ToolNameCollisionError,
    ToolNotFoundError,
    ToolRegistrationError,
)
from .events import ChangeEvent, ChangeKind
from .formats._emit import Emitter
from .tool import Tool, ToolMetadata, ToolTag

if TYPE_CHECKING:
    from ._execution import Executor, RetryPolicy
    from .formats import FormatTable
    from .types import ToolCall, ToolResult

__all__ = ["ToolRegistry"]

F = TypeVar("F", bound=Callable[..., Any])
ChangeCallback = Callable[[ChangeEvent], None]
M = TypeVar("M")



def _relative_to(folder: Path, value: Any) -> Any:
    """A relative file path in the configuration, against the configuration's folder (URLs
    and absolute paths unchanged)."""
    if not isinstance(value, str) or "://" in value or Path(value).is_absolute():
        return value
    return str(folder / value)


class ToolRegistry:
    """A registry of tools for function-calling LLMs.

    ``think_augment`` and ``tool_discovery`` need the think and discovery plugins.
    ``default_timeout`` (seconds, default 60; ``"none"`` for no timeout) bounds every call
    unless the tool or the call sets its own. Every option left ``None`` comes from its
    ``TOOLREGISTRY_*`` environment variable, then ``[tool.toolregistry]`` in the nearest
    pyproject.toml (or ``config=``), then its default (see :class:`~toolregistry.Settings`
    and docs/configuration.md); invalid values are a ``ConfigError`` naming the option and
    where it came from.
    """

    def __init__(
        self,
        name: str = "registry",
        *,
        think_augment: bool | None = None,
        tool_discovery: bool | Mapping[str, Any] | None = None,
        default_timeout: float | Literal["none"] | None = None,
        max_workers: int | None = None,
        retry: RetryPolicy | None = None,
        config: str | Path | _config.RegistryConfig | None = None,
        disable_plugins: Iterable[str] | None = None,
        load_plugins: Iterable[str] | None = None,
        strict_plugins: bool | None = None,
        trace_hooks: bool | None = None,
        inline_calls: bool | None = None,
        process_namespaces: Iterable[str] | None = None,
        plugins: Iterable[Any] = (),
    ) -> None:
        self.name = name
        if isinstance(config, _config.RegistryConfig):
            cfg = config
        else:
            cfg = _config.load_config(config, strict=strict_plugins)
        self.config = cfg
        settings = Settings.resolve(
            cfg, think_augment=think_augment, tool_discovery=tool_discovery,
            default_timeout=default_timeout, max_workers=max_workers,
            disable_plugins=disable_plugins, load_plugins=load_plugins,
            strict_plugins=strict_plugins, trace_hooks=trace_hooks, inline_calls=inline_calls,
            process_namespaces=process_namespaces,
        )
        self._config_settings = settings
        self._host: PluginHost = get_host(PluginSettings.of(settings), plugins)
        self._host.check_tables(cfg)
        self._hooks = self._host.hooks
        self._lock = threading.RLock()
        self._tools: dict[str, Tool] = {}
        self._disabled: dict[str, str] = {}
        self._disabled_namespaces: dict[str, str] = {}
        self._callbacks: list[ChangeCallback] = []
        self._version = 0
        self._settings_version = 0
        self._emitter = Emitter(self, self._hooks)
        self._closers: list[Callable[[], Any]] = []
        self._plugin_state: dict[str, dict[str, Any]] = {}
        self._executor: Executor | None = None
        self._closed = False
        self.skipped_sources: list[tuple[Any, str]] = []
        self.retry = retry
        self._settings: dict[str, Any] = {"think_augment": False, "tool_discovery": False}

        if settings.think_augment:
            self.enable_think_augment()
        discovery = settings.tool_discovery
        if discovery:
            weights = discovery.get("field_weights") if isinstance(discovery, Mapping) else None
            self.enable_tool_discovery(field_weights=weights)

    @property
    def settings(self) -> Settings:
        """The resolved kernel options, each with where it came from (``origin(name)``)."""
        return self._config_settings

    @property
    def default_timeout(self) -> float | None:
        """Seconds per call unless the tool or the call sets its own (``None``: no timeout)."""
        return self._config_settings.default_timeout

    @property
    def max_workers(self) -> int:
        """Threads for sync tools."""
        return self._config_settings.max_workers

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def from_config(cls, path: str | Path | None = None, *, skip_unavailable: bool = False,
                    **overrides: Any) -> ToolRegistry:
        """Build a registry and its sources from ``[tool.toolregistry]``.

        ``path`` is a pyproject.toml (or its folder); default: ``$TOOLREGISTRY_CONFIG`` or the
        nearest one. Each ``[[tool.toolregistry.sources]]`` entry has a ``kind`` (``python``
        for ``pkg.mod:attr`` callables, classes and modules, importable from the config's
        folder too; ``mcp``, ``openapi`` and other plugin kinds) and that kind's options;
        ``${VAR}`` in a string option is replaced by that environment variable.
        ``skip_unavailable`` skips sources whose plugin is not installed (logged) instead of
        failing.
        """
        cfg = _config.load_config(path, strict=overrides.get("strict_plugins"))
        skipped: list[tuple[Any, str]] = []
        if skip_unavailable:
            explicit = {k: v for k, v in overrides.items() if k != "plugins"}
            host = get_host(PluginSettings.of(Settings.resolve(cfg, **explicit)),
                            overrides.get("plugins", ()))
            for feature, info in Settings.options().items():
                if info.needs_plugin and overrides.get(feature) is None and cfg.get(feature):
                    try:
                        host.require(info.needs_plugin, feature)
                    except MissingPluginError as exc:
                        overrides[feature] = False
                        skipped.append((feature, str(exc)))
        registry = cls(config=cfg, **overrides)
        registry.skipped_sources.extend(skipped)
        try:
            for index, source in enumerate(cfg.sources):
                try:
                    registry._load_source(index, source)
                except MissingPluginError as exc:
                    if not skip_unavailable:
                        raise
                    registry.skipped_sources.append((source.get("kind"), str(exc)))
                    log.info("source.skipped", kind=source.get("kind"), error=str(exc))
        except BaseException:
            registry.close()
            raise
        return registry

    def _load_source(self, index: int, source: dict[str, Any]) -> None:
        where = f"{self.config.where}, sources[{index}]"
        options = {k: _config.expand_env(v, f"{where}.{k}") for k, v in source.items()}
        kind_name = options.pop("kind", None)
        if not isinstance(kind_name, str):
            raise ConfigError(f"{where}: every source needs a 'kind' (python, mcp, openapi, ...)")
        try:
            kind = self._host.source_kind(kind_name)
        except MissingPluginError:
            raise
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        target = options.pop(kind.target, None)
        if target is None:
            target = options.pop("source", None)
        if target is None:
            raise ConfigError(f"{where}: a {kind_name} source needs {kind.target} = ...")
        folder = self.config.path.parent if self.config.path else None
        if folder is not None:
            for option in kind.paths:
                if option == kind.target:
                    target = _relative_to(folder, target)
                elif option in options:
                    options[option] = _relative_to(folder, options[option])
        try:
            kind.load(self, target, **options)
        except MissingPluginError:
            raise
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
        except Exception as exc:
            raise ConfigError(f"{where}: loading the {kind_name} source {target!r} failed: "
                              f"{type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------------ plugins and settings
    def _operation_observers(self) -> tuple[Any, ...]:
        """The plugins' operation observers (asked once, again after a plugin change)."""
        cached = self.__dict__.get("_op_observers")
        if cached is None or cached[0] != self._hooks.version:
            cached = self._op_observers = (self._hooks.version,
                                           self._hooks.operation_observer(self))
        return cached[1]

    @property
    def plugins(self) -> PluginHost:
        """The plugin host: ``is_loaded(name)``, ``report()``, ``records``."""
        return self._host

    def plugin_settings(self, name: str, model: type[M]) -> M:
        """The validated ``[tool.toolregistry.plugins.<name>]`` table of this registry's config."""
        return _config.plugin_settings(name, model, self.config,
                                       strict=self._host.settings.strict)

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """A per-registry dict a plugin may keep its state in (dropped with the registry)."""
        state = self._plugin_state.get(plugin)
        if state is None:
            with self._lock:
                state = self._plugin_state.setdefault(plugin, {})
        return state

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A registry-level setting (``think_augment``, ``tool_discovery``, plugin keys)."""
        return self._settings.get(key, default)

    def set_setting(self, key: str, value: Any, **details: Any) -> None:
        """Change a registry-level setting; fires an ``on_change`` event of kind ``setting``.

        When a plugin's ``on_change`` refuses the change (raises), the old value is restored
        and the error propagates."""
        missing = object()
        with self._lock:
            old = self._settings.get(key, missing)
            self._settings[key] = value
            self._settings_version += 1
            self._version += 1
        try:
            self._emit("setting", (), {"setting": key, "value": value, **details})
        except BaseException:
            with self._lock:
                if old is missing:
                    self._settings.pop(key, None)
                else:
                    self._settings[key] = old
                self._settings_version += 1
                self._version += 1
            self._forget_plans((), {})
            raise

    @property
    def think_augment(self) -> bool:
        """Whether tools expose ``toolcall_reason`` unless their metadata says otherwise."""
        return bool(self._settings.get("think_augment"))

    def _require_for(self, option: str) -> None:
        plugin = Settings.options()[option].needs_plugin
        assert plugin is not None
        self._host.require(plugin, option)

    def enable_think_augment(self) -> None:
        """Inject ``toolcall_reason`` into every tool schema (needs toolregistry-think)."""
        self._require_for("think_augment")
        self.set_setting("think_augment", True)

    def disable_think_augment(self) -> None:
        """Stop injecting ``toolcall_reason`` (tools with ``think_augment=True`` keep it)."""
        self.set_setting("think_augment", False)

    def enable_tool_discovery(self, field_weights: Mapping[str, float] | None = None, *,
                              semantic: Any = None) -> None:
        """Register the ``discover_tools`` tool (needs toolregistry-discovery).

        ``semantic``: ``True`` or the plugin's ``SemanticOptions`` turns on hybrid retrieval
        (``False`` turns it off; ``None`` leaves it to ``[tool.toolregistry.plugins.discovery]``).
        """
        self._require_for("tool_discovery")
        self.set_setting("tool_discovery", True,
                         field_weights=dict(field_weights) if field_weights else None,
                         semantic=semantic)

    def disable_tool_discovery(self) -> None:
        """Remove the ``discover_tools`` tool."""
        self.set_setting("tool_discovery", False)

    # ------------------------------------------------------------------ registration
    @overload
    def register(self, obj: F, *, name: str | None = ..., namespace: str | None = ...,
                 description: str | None = ..., metadata: ToolMetadata | None = ...,
                 replace: bool = ...) -> F: ...

    @overload
    def register(self, obj: None = ..., *, name: str | None = ..., namespace: str | None = ...,
                 description: str | None = ..., metadata: ToolMetadata | None = ...,
                 replace: bool = ...) -> Callable[[F], F]: ...

    def register(
        self,
        obj: Any = None,
        *,
        name: str | None = None,
        namespace: str | None = None,
        description: str | None = None,
        metadata: ToolMetadata | None = None,
        replace: bool = False,
    ) -> Any:
        """Register a function or a :class:`Tool`; usable as ``@register`` or
        ``@register(name=..., namespace=..., metadata=...)``.

        Returns what it was given (the decorated function stays a plain function). A name
        already taken is a :class:`ToolNameCollisionError` unless ``replace=True``.
        """
        if obj is None:
            def decorator(fn: F) -> F:
                self.register(fn, name=name, namespace=namespace, description=description,
                              metadata=metadata, replace=replace)
                return fn

            return decorator
        if isinstance(obj, type):
            raise ToolRegistrationError(
                f"register() takes a function or a Tool; for the class {obj.__name__!r} use "
                "register_from_class()"
            )
        if isinstance(obj, Tool):
            changes: dict[str, Any] = {}
            if name is not None:
                changes["name"] = name
            if description is not None:
                changes["description"] = description
            if metadata is not None:
                changes["metadata"] = metadata
            tool = obj.evolve(**changes) if changes else obj
        else:
            tool = Tool.from_function(obj, name=name, description=description, metadata=metadata)
        self._add([tool], namespace=namespace, replace=replace)
        return obj

    def register_tools(self, tools: Iterable[Tool], *, namespace: str | None = None,
                       replace: bool = False) -> list[Tool]:
        """Register several tools at once: all or none (one ``register`` event)."""
        return self._add(list(tools), namespace=namespace, replace=replace)

    def _prepare(self, tool: Tool, namespace: str | None) -> Tool:
        ns = namespace if namespace is not None else tool.namespace
        ns = normalize_name(ns) if ns else None
        original = tool.provenance.original_name or tool.name
        base = tool.name
        if ns and tool.namespace == ns and base.startswith(f"{ns}-"):
            base = base[len(ns) + 1 :]  # already qualified (re-registration of a tool object)
        final = normalize_name(qualify(normalize_name(base), ns))
        changes: dict[str, Any] = {}
        if final != tool.name:
            changes["name"] = final
        if ns != tool.namespace:
            changes["namespace"] = ns
        if tool.provenance.original_name is None:
            changes["provenance"] = attrs.evolve(tool.provenance, original_name=original)
        return tool.evolve(**changes) if changes else tool

    def _add(self, tools: list[Tool], *, namespace: str | None, replace: bool) -> list[Tool]:
        if self._closed:
            raise ToolRegistrationError(f"registry {self.name!r} is closed")
        given: object = namespace  # callers outside the type checker pass anything
        if given is not None and given is not False and not isinstance(given, str):
            raise ToolRegistrationError(f"namespace must be a str, got {given!r}")
        prepared: list[Tool] = []
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ToolRegistrationError(f"expected a Tool, got {type(tool).__name__}")
            tool = self._prepare(tool, namespace)
            tool = self._hooks.register(self, tool)
            prepared.append(tool)
        replaced: list[str] = []
        with self._lock:
            seen: dict[str, Tool] = {}
            for tool in prepared:
                clash = seen.get(tool.name) or (None if replace else self._tools.get(tool.name))
                if clash is not None:
                    raise ToolNameCollisionError(_collision_message(tool, clash))
                seen[tool.name] = tool
            for tool in prepared:
                if tool.name in self._tools:
                    replaced.append(tool.name)
                self._tools[tool.name] = tool
            self._version += 1
        if prepared:
            if len(prepared) == 1:
                log.debug("tool.registered", tool=prepared[0].name,
                          source=prepared[0].provenance.kind)
            else:
                log.debug("tool.registered", count=len(prepared))
            self._emit("register", tuple(t.name for t in prepared), {"replaced": replaced})
        return prepared

    def register_from_class(
        self,
        cls: Any,
        *,
        namespace: str | bool | None = None,
        replace: bool = False,
        include_private: bool = False,
    ) -> list[Tool]:
        """Register the public methods of a class (static, class and instance methods) or of
        an instance. ``namespace=True`` uses the class name."""
        from ._sources import tools_from_class

        owner = cls if isinstance(cls, type) else type(cls)
        ns = owner.__name__ if namespace is True else (namespace or None)
        tools = tools_from_class(cls, include_private=include_private)
        return self._add(tools, namespace=ns, replace=replace)

    def load(self, kind: str, source: Any, **options: Any) -> list[Tool]:
        """Register the tools of ``source`` through the plugin that provides ``kind``."""
        result = self._host.source_kind(kind).load(self, source, **options)
        return list(result or [])

    async def aload(self, kind: str, source: Any, **options: Any) -> list[Tool]:
        """Async twin of :meth:`load` (the kind's async loader when it has one)."""
        source_kind = self._host.source_kind(kind)
        if source_kind.aload is not None:
            result = await source_kind.aload(self, source, **options)
            return list(result or [])
        import asyncio

        return await asyncio.to_thread(self.load, kind, source, **options)

    def export(self, kind: str, names: Iterable[str] | None = None, **options: Any) -> Any:
        """Registry tools (all enabled ones, or ``names``) as ``kind``'s own objects, through
        the plugin that provides ``kind`` (``export("langchain")``: LangChain tools)."""
        source_kind = self._host.source_kind(kind)
        if source_kind.export is None:
            raise ConfigError(f"the source kind {kind!r} (plugin "
                              f"{self._host.provider(kind)!r}) cannot export tools")
        return source_kind.export(self, names, **options)

    def register_from_mcp(self, server: Any, **options: Any) -> list[Tool]:
        """Register an MCP server's tools (needs toolregistry-mcp)."""
        return self.load("mcp", server, **options)

    async def aregister_from_mcp(self, server: Any, **options: Any) -> list[Tool]:
        """Async twin of :meth:`register_from_mcp`."""
        return await self.aload("mcp", server, **options)

    def register_from_openapi(self, spec: Any, **options: Any) -> list[Tool]:
        """Register an OpenAPI service's operations (needs toolregistry-openapi)."""
        return self.load("openapi", spec, **options)

    async def aregister_from_openapi(self, spec: Any, **options: Any) -> list[Tool]:
        """Async twin of :meth:`register_from_openapi`."""
        return await self.aload("openapi", spec, **options)

    def register_from_langchain(self, tools: Any, **options: Any) -> list[Tool]:
        """Register LangChain tools or a toolkit (needs toolregistry-langchain)."""
        return self.load("langchain", tools, **options)

    def to_langchain(self, names: Iterable[str] | None = None, **options: Any) -> Any:
        """Registry tools as LangChain tools (needs toolregistry-langchain)."""
        return self.export("langchain", names, **options)

    def __getattr__(self, attr: str) -> Any:
        # register_from_<kind> for third-party kinds; a clear error for missing plugins.
        if attr.startswith(("register_from_", "aregister_from_")):
            is_async = attr.startswith("a")
            kind = attr.split("register_from_", 1)[1]
            host = self.__dict__.get("_host")
            if host is not None and host.knows_kind(kind):
                if is_async:
                    async def aload(source: Any, **options: Any) -> list[Tool]:
                        return await self.aload(kind, source, **options)

                    return aload

                def load(source: Any, **options: Any) -> list[Tool]:
                    return self.load(kind, source, **options)

                return load
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    # ------------------------------------------------------------------ changes
    def unregister(self, name: str) -> Tool:
        """Remove a tool; returns it. :class:`ToolNotFoundError` for an unknown name."""
        with self._lock:
            tool = self._tools.pop(name, None)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            self._disabled.pop(name, None)
            self._version += 1
        self._emit("unregister", (name,), {})
        return tool

    def unregister_namespace(self, namespace: str) -> list[str]:
        """Remove every tool of a namespace; returns their names."""
        with self._lock:
            names = [n for n, t in self._tools.items() if t.namespace == namespace]
            for n in names:
                del self._tools[n]
                self._disabled.pop(n, None)
            self._disabled_namespaces.pop(namespace, None)
            if names:
                self._version += 1
        if names:
            self._emit("unregister", tuple(names), {"namespace": namespace})
        return names

    def _namespaces(self) -> set[str]:
        return {t.namespace for t in self._tools.values() if t.namespace}

    def disable(self, name: str, reason: str = "") -> None:
        """Disable a tool or a whole namespace; calls get an error result quoting ``reason``."""
        with self._lock:
            if name in self._tools:
                self._disabled[name] = reason
                names: tuple[str, ...] = (name,)
                details: dict[str, Any] = {"reason": reason}
            elif name in self._namespaces():
                self._disabled_namespaces[name] = reason
                names = tuple(n for n, t in self._tools.items() if t.namespace == name)
                details = {"reason": reason, "namespace": name}
            else:
                raise ToolNotFoundError(self._not_found(name, what="tool or namespace"))
            self._version += 1
        self._emit("disable", names, details)

    def enable(self, name: str) -> None:
        """Enable a tool or namespace disabled before."""
        with self._lock:
            if name in self._tools:
                self._disabled.pop(name, None)
                names: tuple[str, ...] = (name,)
                details: dict[str, Any] = {}
            elif name in self._namespaces() or name in self._disabled_namespaces:
                self._disabled_namespaces.pop(name, None)
                names = tuple(n for n, t in self._tools.items() if t.namespace == name)
                details = {"namespace": name}
            else:
                raise ToolNotFoundError(self._not_found(name, what="tool or namespace"))
            self._version += 1
        self._emit("enable", names, details)

    def is_enabled(self, name: str) -> bool:
        """True when the tool exists and neither it nor its namespace is disabled."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        return name not in self._disabled and not (
            tool.namespace and tool.namespace in self._disabled_namespaces
        )

    def disabled_reason(self, name: str) -> str | None:
        """Why a tool is disabled (``None`` when enabled)."""
        tool = self._tools.get(name)
        if tool is None or self.is_enabled(name):
            return None
        if name in self._disabled:
            return self._disabled[name]
        return self._disabled_namespaces.get(tool.namespace or "", "")

    def update_tool_metadata(self, name: str, metadata: ToolMetadata | None = None,
                             **changes: Any) -> Tool:
        """Replace a tool's metadata, or change some of its fields (``defer=True``, ...)."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            new_meta = metadata if metadata is not None else tool.metadata
            if changes:
                try:
                    new_meta = attrs.evolve(new_meta, **changes)
                except TypeError as exc:
                    fields = ", ".join(a.name for a in attrs.fields(ToolMetadata))
                    raise ToolRegistrationError(
                        f"update_tool_metadata({name!r}): {exc}; ToolMetadata fields: {fields}"
                    ) from None
            new_tool = tool.evolve(metadata=new_meta)
            self._tools[name] = new_tool
            self._version += 1
        self._emit("metadata", (name,), {"changes": sorted(changes)})
        return new_tool

    def update_tool(self, tool: Tool) -> Tool:
        """Replace a registered tool by a new version of the same name (description or schema
        changed at the source); fires a ``metadata`` event with ``schema_changed``."""
        with self._lock:
            old = self._tools.get(tool.name)
            if old is None:
                raise ToolNotFoundError(self._not_found(tool.name))
            self._tools[tool.name] = tool
            self._version += 1
        self._emit("metadata", (tool.name,),
                   {"schema_changed": old.schema_hash != tool.schema_hash})
        return tool

    def rename(self, old: str, new: str, *, replace: bool = False) -> Tool:
        """Give a tool a new (normalised) name."""
        new = normalize_name(new)
        with self._lock:
            tool = self._tools.get(old)
            if tool is None:
                raise ToolNotFoundError(self._not_found(old))
            if new in self._tools and not replace and new != old:
                raise ToolNameCollisionError(_collision_message(tool.evolve(name=new),
                                                                self._tools[new]))
            renamed = tool.evolve(name=new)
            del self._tools[old]
            self._tools[new] = renamed
            if old in self._disabled:
                self._disabled[new] = self._disabled.pop(old)
            self._version += 1
        self._emit("rename", (new,), {"renamed": {old: new}})
        return renamed

    def set_namespace(self, name: str, namespace: str | None) -> Tool:
        """Move a tool into ``namespace`` (``None``: out of any); its name changes with it."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            base = tool.name
            if tool.namespace and base.startswith(f"{tool.namespace}-"):
                base = base[len(tool.namespace) + 1 :]
            moved = self._prepare(tool.evolve(name=base, namespace=None), namespace)
            if moved.name in self._tools and moved.name != name:
                raise ToolNameCollisionError(_collision_message(moved, self._tools[moved.name]))
            del self._tools[name]
            self._tools[moved.name] = moved
            self._version += 1
        self._emit("namespace", (moved.name,), {"renamed": {name: moved.name},
                                                "namespace": namespace})
        return moved

    def merge(self, other: ToolRegistry, *, namespace: str | None = None,
              replace: bool = False) -> list[Tool]:
        """Register every tool of ``other`` here (optionally under ``namespace``)."""
        return self._add(list(other._tools.values()), namespace=namespace, replace=replace)

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback(event)`` after every change; returns a function that unsubscribes."""
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    def _emit(self, kind: ChangeKind, names: tuple[str, ...], details: dict[str, Any]) -> None:
        self._forget_plans(names, details)
        if not self._callbacks and not self._hooks.has_on_change:
            return
        event = ChangeEvent(kind, names, details)
        self._hooks.on_change(self, event)
        for callback in list(self._callbacks):
            try:
                callback(event)
            except Exception as exc:  # one bad subscriber must not break registration
                log.warning("callback.failed", kind=kind, error=f"{type(exc).__name__}: {exc}")

    def _forget_plans(self, names: tuple[str, ...], details: Mapping[str, Any]) -> None:
        """The executor's per-tool call plans of ``names`` (and of renamed tools' old names)
        are stale; with no names (a setting), every plan is."""
        executor = self._executor
        if executor is None:
            return
        if not names:
            executor.invalidate()
            return
        renamed = details.get("renamed")
        executor.invalidate((*names, *renamed) if isinstance(renamed, Mapping) else names)

    # ------------------------------------------------------------------ queries
    def list_tools(self, include_disabled: bool = False) -> list[str]:
        """Tool names in registration order."""
        with self._lock:
            if include_disabled:
                return list(self._tools)
            return [n for n in self._tools if self.is_enabled(n)]

    def get_tools(self, include_disabled: bool = False) -> list[Tool]:
        """Tools in registration order."""
        with self._lock:
            return [t for n, t in self._tools.items() if include_disabled or self.is_enabled(n)]

    def get_tool(self, name: str) -> Tool | None:
        """The tool registered as ``name``, or ``None``."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolNotFoundError(self._not_found(name))
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    def __repr__(self) -> str:
        return f"<ToolRegistry {self.name!r}: {len(self._tools)} tools>"

    @property
    def version(self) -> int:
        """A counter that changes with every change (for caches kept outside)."""
        return self._version

    def suggest_names(self, name: str, limit: int = 3) -> list[str]:
        """At most ``limit`` registered names close to ``name`` (discovery when installed)."""
        suggested = self._hooks.suggest_tools(self, name, limit)
        if suggested is not None:
            return [s for s in suggested if s in self._tools][:limit]
        import difflib

        names = self.list_tools()
        close = difflib.get_close_matches(name, names, n=limit, cutoff=0.6)
        if len(close) < limit:
            lowered = name.lower()
            for n in names:
                if n not in close and (lowered in n.lower() or n.lower() in lowered):
                    close.append(n)
                    if len(close) == limit:
                        break
        return close

    def _not_found(self, name: str, what: str = "tool") -> str:
        close = self.suggest_names(name) if self._tools else []
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return f"no {what} named {name!r} in registry {self.name!r}{hint}"

    # ------------------------------------------------------------------ schemas
    def get_schemas(
        self,
        api_format: str = "openai-chat",
        include_deferred: bool = True,
        tags: Iterable[ToolTag | str] | ToolTag | str | None = None,
        exclude_tags: Iterable[ToolTag | str] | ToolTag | str | None = None,
        strict: bool = False,
        names: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Tool definitions in ``api_format``'s dialect, enabled tools only, in registration
        order. ``tags``: keep tools having any of them; ``exclude_tags``: drop tools having any.
        ``strict`` applies OpenAI strict mode (openai-chat / openai-responses).

        Results are cached until the registry changes; treat them as read-only.
        """
        fmt = self._host.formats.get(api_format, "schemas")
        return self._emitter.schemas(fmt, include_deferred=include_deferred, tags=tags,
                                     exclude_tags=exclude_tags, strict=strict, names=names)

    def _emission_snapshot(self, names: Sequence[str] | None) -> tuple[int, int, list[Tool]]:
        """(version, settings version, the named tools or else every enabled one), read
        together under the lock, for the schema emitter."""
        with self._lock:
            if names is not None:
                tools = [self[n] for n in names]
            else:
                tools = [t for n, t in self._tools.items() if self.is_enabled(n)]
            return self._version, self._settings_version, tools

    def get_tool_schema(self, name: str, api_format: str = "openai-chat",
                        strict: bool = False) -> dict[str, Any]:
        """One tool's definition in ``api_format`` (disabled and deferred tools too)."""
        fmt = self._host.formats.get(api_format, "schemas")
        tool = self[name]
        return self._emitter.tool(tool, fmt, bool(strict) and fmt.supports_strict,
                                  self._settings_version)

    def get_parameters(self, name: str, api_format: str = "openai-chat") -> dict[str, Any]:
        """The parameters schema the model sees for a tool (after ``schema_transform``)."""
        tool = self[name]
        return self._emitter.parameters(tool, self._host.formats.get(api_format, "schemas"))

    @property
    def formats(self) -> FormatTable:
        """The provider formats this registry knows: the built-in ones and those its plugins
        add (``provider_formats`` hook), by name."""
        return self._host.formats

    def get_deferred_summaries(self) -> list[dict[str, Any]]:
        """Enabled deferred tools as ``{name, description (first sentence), namespace}``,
        for the system prompt."""
        return [
            {"name": t.name, "description": first_sentence(t.description), "namespace": t.namespace}
            for t in self.get_tools()
            if t.metadata.defer
        ]

    # ------------------------------------------------------------------ prompts
    def render_tool_prompt(self, context: Mapping[str, Any] | None = None, *,
                           include_deferred_summaries: bool = True,
                           names: Iterable[str] | None = None) -> str:
        """The tool part of a system prompt: a ``<tool_best_practices>`` block (practices and
        prompt injections of enabled, visible tools) and the deferred-tool summaries."""
        from .prompt import render_tool_prompt

        return render_tool_prompt(self, context,
                                  include_deferred_summaries=include_deferred_summaries,
                                  names=names)

    def tool_choice(self, value: str, api_format: str = "openai-chat") -> Any:
        """``auto`` / ``none`` / ``required`` / a tool name as ``api_format`` expects it
        (``langchain`` too); unknown names are an error suggesting close ones."""
        from .tool_choice import tool_choice

        return tool_choice(value, api_format, registry=self)

    # ------------------------------------------------------------------ execution
    def _get_executor(self) -> Executor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    from ._execution import Executor

                    self._executor = Executor(self)
        return self._executor

    def invoke(self, name: str, arguments: Mapping[str, Any] | str | None = None, *,
               context: Mapping[str, Any] | None = None, timeout: float | None = None,
               call_id: str | None = None) -> ToolResult:
        """Validate and run one call; always returns a :class:`ToolResult` (never raises for
        bad model input: unknown tool, malformed or invalid arguments, errors, timeouts)."""
        return self._get_executor().invoke(name, arguments, context=context, timeout=timeout,
                                           call_id=call_id)

    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | str | None = None, *,
                      context: Mapping[str, Any] | None = None, timeout: float | None = None,
                      call_id: str | None = None) -> ToolResult:
        """Async twin of :meth:`invoke`."""
        return await self._get_executor().ainvoke(name, arguments, context=context,
                                                  timeout=timeout, call_id=call_id)

    def execute_tool_calls(self, calls: Iterable[Any], *, context: Mapping[str, Any] | None = None,
                           timeout: float | None = None) -> list[ToolResult]:
        """Run a batch of provider-native tool calls concurrently where safe.

        Returns exactly one result per call, in input order; bad calls get error results.
        """
        return self._get_executor().execute(calls, context=context, timeout=timeout)

    async def aexecute_tool_calls(self, calls: Iterable[Any], *,
                                  context: Mapping[str, Any] | None = None,
                                  timeout: float | None = None) -> list[ToolResult]:
        """Async twin of :meth:`execute_tool_calls`."""
        return await self._get_executor().aexecute(calls, context=context, timeout=timeout)

    def parse_tool_calls(self, calls: Iterable[Any]) -> list[ToolCall]:
        """Provider-native calls (objects or dicts, any supported format) as :class:`ToolCall`."""
        from ._calls import parse_call

        formats = self._host.formats
        return [parse_call(c, i, formats) for i, c in enumerate(calls)]

    def build_tool_call_messages(self, calls: Iterable[Any], results: Sequence[ToolResult], *,
                                 api_format: str = "openai-chat") -> list[dict[str, Any]]:
        """The assistant tool-call message and the tool-result messages ``api_format``
        expects next, ids matched."""
        from ._messages import build_messages

        # Raw calls: the builder parses leniently, so a call with malformed arguments is still
        # echoed and answered by its error result (providers reject unanswered calls).
        return build_messages(list(calls), list(results), api_format, self._host.formats)

    # ------------------------------------------------------------------ lifecycle
    def add_closer(self, closer: Callable[[], Any]) -> None:
        """Run ``closer()`` on :meth:`close` (plugins: sessions, clients, spool files)."""
        with self._lock:
            self._closers.append(closer)

    def _begin_close(self) -> tuple[list[Callable[[], Any]], Executor | None] | None:
        """Mark the registry closed; the closers (last added first) and the executor to stop,
        or ``None`` when it was closed already."""
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            closers, self._closers = list(reversed(self._closers)), []
            executor, self._executor = self._executor, None
        return closers, executor

    def close(self) -> None:
        """Release everything: plugin resources (MCP children, HTTP clients), worker threads.
        Idempotent."""
        closing = self._begin_close()
        if closing is None:
            return
        closers, executor = closing
        for closer in closers:
            try:
                result = closer()
                if inspect.isawaitable(result):
                    import asyncio

                    asyncio.run(_await(result))
            except Exception as exc:
                log.warning("registry.close_failed", error=f"{type(exc).__name__}: {exc}")
        if executor is not None:
            executor.shutdown()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: async closers are awaited on the running loop (the one
        their clients were created on); sync closers run in a worker thread, so that they may
        hand work to this loop and wait for it."""
        import asyncio

        closing = self._begin_close()
        if closing is None:
            return
        closers, executor = closing
        for closer in closers:
            try:
                if inspect.iscoroutinefunction(closer):
                    await closer()
                    continue
                result = await asyncio.to_thread(closer)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                log.warning("registry.close_failed", error=f"{type(exc).__name__}: {exc}")
        if executor is not None:
            await asyncio.to_thread(executor.shutdown)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ToolRegistry:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _await(awaitable: Any) -> Any:
    return await awaitable


def first_sentence(text: str) -> str:
    """The text of the first line up to its first ``.`` (the spec's summary rule)."""
    line = text.strip().split("\n", 1)[0].strip()
    head, dot, _ = line.partition(". ")
    if dot:
        return head + "."
    return line


def _collision_message(new: Tool, old: Tool) -> str:
    def origin(t: Tool) -> str:
        p = t.provenance
        src = f"{p.kind} {p.detail}" if p.detail else p.kind
        if p.original_name and p.original_name != t.name:
            src += f", originally {p.original_name!r}"
        return src

    return (
        f"tool name {new.name!r} is already registered (from {origin(old)}); the new tool "
        f"comes from {origin(new)}: pass replace=True to replace it, or register under a "
        "namespace"
    )
