"""The registry: tools in, schemas out, calls executed.

This module owns :class:`ToolRegistry` itself: its construction (``__init__``, settings and
``from_config``, which delegates to ``_registry_sources``), plugins and registry-level
settings, registration (``register``, ``register_tools``, ``register_from_class``), execution
and the lifecycle (closers, ``close``). The rest of the class comes from its parts:
``_registry_changes`` (change operations and events), ``_registry_queries`` (lookups, schemas,
prompts) and ``_registry_sources`` (source kinds: load, export, construction from config).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import attrs

from . import _config
from ._log import log
from ._moved import mark_gone_methods
from ._names import normalize_name, qualify
from ._plugins import PluginHost, PluginSettings, get_host
from ._registry_base import ChangeCallback, named_after
from ._registry_cancel import RegistryCancel
from ._registry_changes import RegistryChanges, collision_message
from ._registry_fanout import RegistryFanOut
from ._registry_queries import RegistryQueries
from ._registry_review import RegistryReview
from ._registry_sources import RegistrySources, build_from_config
from ._settings import Settings
from .errors import ToolNameCollisionError, ToolRegistrationError

if TYPE_CHECKING:
    from pathlib import Path

    from ._approvals import Approvals
    from ._execution import Executor, RetryPolicy
    from ._store import StoreURL
    from .tool import Tool, ToolMetadata
    from .types import ToolCall, ToolResult

__all__ = ["ToolRegistry"]

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M")


class ToolRegistry(RegistryChanges, RegistryQueries, RegistrySources, RegistryReview,
                   RegistryFanOut, RegistryCancel):
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
        deferral: Literal["auto", "native", "registry"] | None = None,
        undiscovered_calls: Literal["run", "refuse", "reveal"] | None = None,
        default_timeout: float | Literal["none"] | None = None,
        max_workers: int | None = None,
        retry: RetryPolicy | None = None,
        config: str | Path | _config.RegistryConfig | None = None,
        disable_plugins: Iterable[str] | None = None,
        load_plugins: Iterable[str] | None = None,
        strict_plugins: bool | None = None,
        trace_hooks: bool | None = None,
        inline_calls: bool | None = None,
        handoff_pinning: bool | Literal["auto"] | None = None,
        process_namespaces: Iterable[str] | None = None,
        store: str | None = None,
        plugins: Iterable[Any] = (),
        plugin_order: Iterable[str] | None = None,
    ) -> None:
        self.name = name
        if isinstance(config, _config.RegistryConfig):
            cfg = config
        else:
            cfg = _config.load_config(config, strict=strict_plugins)
        self.config = cfg
        settings = Settings.resolve(
            cfg, think_augment=think_augment, tool_discovery=tool_discovery,
            deferral=deferral, undiscovered_calls=undiscovered_calls,
            default_timeout=default_timeout, max_workers=max_workers,
            disable_plugins=disable_plugins, load_plugins=load_plugins,
            strict_plugins=strict_plugins, trace_hooks=trace_hooks, inline_calls=inline_calls,
            process_namespaces=process_namespaces, handoff_pinning=handoff_pinning,
            plugin_order=plugin_order, store=store,
        )
        self._config_settings = settings
        self._host: PluginHost = get_host(PluginSettings.of(settings), plugins)
        self._host.check_tables(cfg)
        self._lock = threading.RLock()
        self._tools: dict[str, Tool] = {}
        self._disabled: dict[str, str] = {}
        self._disabled_namespaces: dict[str, str] = {}
        self._callbacks: list[ChangeCallback] = []
        self._version = 0
        self._settings_version = 0
        self._revealed: dict[str, None] = {}
        self._reveal_version = 0
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
        return build_from_config(cls, path, skip_unavailable, overrides)

    # ------------------------------------------------------------------ plugins and settings
    def _operation_observers(self) -> tuple[Any, ...]:
        """The plugins' operation observers (asked once, again after a plugin change)."""
        cached = self.__dict__.get("_op_observers")
        if cached is None or cached[0] != self._hooks.version:
            cached = self._op_observers = (self._hooks.version,
                                           self._hooks.operation_observer(self))
        return cached[1]

    @property
    def approvals(self) -> Approvals:
        """The calls held for a person's approval by the registry's authorizing plugins:
        ``list()``, ``get(id)``, ``decide(id, "approve" | "deny", by=, note=)``,
        ``resume(items)`` (see docs/hooks.md, "approval_queue")."""
        from ._approvals import Approvals

        return Approvals(self, self._hooks)

    @property
    def plugins(self) -> PluginHost:
        """The plugin host: ``is_loaded(name)``, ``report()``, ``records``."""
        return self._host

    def plugin_settings(self, name: str, model: type[M]) -> M:
        """The validated ``[tool.toolregistry.plugins.<name>]`` table of this registry's config."""
        return _config.plugin_settings(name, model, self.config,
                                       strict=self._host.settings.strict)

    def store_url(self, override: str | None = None) -> StoreURL | None:
        """The store URL a stateful plugin keeps shared state on: ``override`` (the plugin's
        own setting), else the ``store`` option, else ``None`` (state kept in this process);
        see :func:`toolregistry.plugin.store_url`."""
        from ._store import store_url

        return store_url(self, override)

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
            return self._decorator(name, namespace, description, metadata, replace)
        return self._register_one(obj, name, namespace, description, metadata, replace)

    def _decorator(self, name: str | None, namespace: str | None, description: str | None,
                   metadata: ToolMetadata | None, replace: bool) -> Callable[[F], F]:
        # not in register(): its arguments would be cells, allocated on every call
        def decorator(fn: F) -> F:
            self.register(fn, name=name, namespace=namespace, description=description,
                          metadata=metadata, replace=replace)
            return fn

        return decorator

    def _register_one(self, obj: Any, name: str | None, namespace: str | None,
                      description: str | None, metadata: ToolMetadata | None,
                      replace: bool) -> Any:
        from .tool import Tool

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
        if not ns:
            final = normalize_name(base)  # a normalised name is its own normal form
        else:
            if tool.namespace == ns and base.startswith(f"{ns}-"):
                base = base[len(ns) + 1 :]  # already qualified (re-registration of a tool)
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
        from . import _source_options

        source = _source_options.current()
        if source is not None:  # a source kind's loader registering its tools
            with _source_options.consumed():
                return self._add(source.apply(tools, namespace), namespace=namespace,
                                 replace=replace)
        return self._add_tools(tools, namespace=namespace, replace=replace)

    def _add_tools(self, tools: list[Tool], *, namespace: str | None, replace: bool
                   ) -> list[Tool]:
        if self._closed:
            raise ToolRegistrationError(f"registry {self.name!r} is closed")
        from .tool import Tool

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
        registered = self._tools
        with self._lock:
            if len(prepared) == 1:  # one register() call: no bookkeeping of names in the batch
                tool = prepared[0]
                if tool.name in registered:
                    if not replace:
                        raise ToolNameCollisionError(
                            collision_message(tool, registered[tool.name]))
                    replaced.append(tool.name)
                registered[tool.name] = tool
            else:
                seen: dict[str, Tool] = {}
                for tool in prepared:
                    clash = seen.get(tool.name) or (None if replace else registered.get(tool.name))
                    if clash is not None:
                        raise ToolNameCollisionError(collision_message(tool, clash))
                    seen[tool.name] = tool
                for tool in prepared:
                    if tool.name in registered:
                        replaced.append(tool.name)
                    registered[tool.name] = tool
            self._version += 1
        if len(prepared) == 1:
            tool = prepared[0]
            log.debug("tool.registered", tool=tool.name, source=tool.provenance.kind)
            self._emit("register", (tool.name,), {"replaced": replaced})
        elif prepared:
            log.debug("tool.registered", count=len(prepared))
            self._emit("register", tuple([t.name for t in prepared]), {"replaced": replaced})
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
        """Provider-native calls (objects or dicts, any supported format) as :class:`ToolCall`.

        The provider's own tool-search items among them are no calls: left out, and the tools
        they loaded count as revealed (:meth:`reveal_tools`)."""
        from ._calls import parse_call, split_passthrough

        formats = self._host.formats
        kept, _, revealed = split_passthrough(list(calls), formats)
        if revealed:
            self.reveal_tools(revealed)
        return [parse_call(c, i, formats) for i, c in kept]

    def build_tool_call_messages(self, calls: Iterable[Any], results: Sequence[ToolResult], *,
                                 api_format: str = "openai-chat") -> list[dict[str, Any]]:
        """The assistant tool-call message and the tool-result messages ``api_format``
        expects next, ids matched. ``calls`` may include the provider's own tool-search items
        (they have no result): they are echoed where the provider expects them."""
        from ._messages import build_messages

        # Raw calls: the builder parses leniently, so a call with malformed arguments is still
        # echoed and answered by its error result (providers reject unanswered calls).
        return build_messages(list(calls), list(results), api_format, self._host.formats)

    # ------------------------------------------------------------------ lifecycle
    def add_closer(self, closer: Callable[[], Any]) -> None:
        """Run ``closer()`` on :meth:`close` (plugins: sessions, clients, spool files); on a
        registry closed already, at once, so that nothing opened after close is left open."""
        with self._lock:
            if not self._closed:
                self._closers.append(closer)
                return
        _run_closers([closer])

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
        _run_closers(closers)
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


named_after(ToolRegistry)  # the parts' methods: ToolRegistry.<name> in Python's errors
mark_gone_methods(ToolRegistry)  # 0.19's methods that are gone name their replacement


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _run_closers(closers: list[Callable[[], Any]]) -> None:
    """Run each closer in turn (an awaitable result is run to its end); a failure is logged
    and the next one still runs."""
    for closer in closers:
        try:
            result = closer()
            if inspect.isawaitable(result):
                import asyncio

                asyncio.run(_await(result))
        except Exception as exc:
            log.warning("registry.close_failed", error=f"{type(exc).__name__}: {exc}")
