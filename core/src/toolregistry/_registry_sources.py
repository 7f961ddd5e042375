"""Tools from sources, for :class:`~toolregistry.ToolRegistry`.

It owns building a registry and its ``[[tool.toolregistry.sources]]`` from configuration
(``from_config`` delegates here), and loading and exporting tools through the plugins' source
kinds (``load``/``aload``, ``export``, ``register_from_<kind>`` for built-in and third-party
kinds, ``to_langchain``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import _config
from ._log import log
from ._plugins import PluginSettings, get_host, on_kind_name
from ._registry_base import RegistryBase
from ._settings import Settings
from .errors import ConfigError, MissingPluginError

if TYPE_CHECKING:
    from pathlib import Path

    from ._extensions import SourceKind
    from ._registry import ToolRegistry
    from .tool import Tool


class RegistrySources(RegistryBase):
    """Loading and exporting tools through the plugins' source kinds."""

    def load(self, kind: str, source: Any, **options: Any) -> list[Tool]:
        """Register the tools of ``source`` through the plugin that provides ``kind``, with
        the common source options (``namespace``, ``replace``, ``defer``, ``tags``,
        ``include``, ``exclude``) checked and applied alike for every kind."""
        from . import _source_options

        source_kind = self._host.source_kind(kind)
        passed, common = _source_options.split(source_kind, options, _where(kind, source))
        passed = self._own_options(source_kind, passed, source)
        with _source_options.applying(common):
            result = source_kind.load(self, source, **passed)
        return list(result or [])

    async def aload(self, kind: str, source: Any, **options: Any) -> list[Tool]:
        """Async twin of :meth:`load` (the kind's async loader when it has one)."""
        source_kind = self._host.source_kind(kind)
        if source_kind.aload is not None:
            from . import _source_options

            passed, common = _source_options.split(source_kind, options, _where(kind, source))
            passed = self._own_options(source_kind, passed, source)
            with _source_options.applying(common):
                result = await source_kind.aload(self, source, **passed)
            return list(result or [])
        import asyncio

        return await asyncio.to_thread(self.load, kind, source, **options)

    def _own_options(self, kind: SourceKind, options: dict[str, Any], source: Any
                     ) -> dict[str, Any]:
        """The kind's own options validated by its model (``SourceKind.options``)."""
        from . import _kind_options

        return _kind_options.check(kind, options, _where(kind.name, source),
                                   strict=self._host.settings.strict)

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

    if TYPE_CHECKING:
        # register_from_<kind> / aregister_from_<kind> of third-party kinds (_KindMethod)
        def __getattr__(self, attr: str) -> Any: ...


class _KindMethod:
    """``registry.register_from_<kind>`` (or ``aregister_from_<kind>``) of a source kind
    without a method of its own: loading through the kind when the registry's plugin host
    knows it (a missing first-party plugin's kind too: loading names what to install), else
    no such attribute.

    A class attribute for every kind name a host learns (:func:`_plugins.on_kind_name`)
    rather than ``__getattr__``: with ``__getattr__`` on the class, every method call on a
    registry -- a dozen in each registration, the plugins' included -- would allocate a
    bound method.
    """

    __slots__ = ("_async", "_kind", "_name")

    def __init__(self, kind: str, name: str, is_async: bool) -> None:
        self._kind, self._name, self._async = kind, name, is_async

    def __get__(self, registry: Any, owner: type | None = None) -> Any:
        if registry is None:
            return self
        host = registry.__dict__.get("_host")
        if host is None or not host.knows_kind(self._kind):
            raise AttributeError(f"{type(registry).__name__!r} object has no attribute "
                                 f"{self._name!r}")
        kind = self._kind
        if self._async:
            async def aload(source: Any, **options: Any) -> list[Tool]:
                return await registry.aload(kind, source, **options)  # type: ignore[no-any-return]

            return aload

        def load(source: Any, **options: Any) -> list[Tool]:
            return registry.load(kind, source, **options)  # type: ignore[no-any-return]

        return load


def _add_kind_methods(kind: str) -> None:
    for prefix, is_async in (("register_from_", False), ("aregister_from_", True)):
        name = prefix + kind
        if not hasattr(RegistrySources, name):  # the methods of first-party kinds stay
            setattr(RegistrySources, name, _KindMethod(kind, name, is_async))


on_kind_name(_add_kind_methods)


def build_from_config(cls: type[ToolRegistry], path: str | Path | None, skip_unavailable: bool,
                      overrides: dict[str, Any]) -> ToolRegistry:
    """``ToolRegistry.from_config``: the registry, then each configured source loaded."""
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
                load_source(registry, index, source)
            except MissingPluginError as exc:
                if not skip_unavailable:
                    raise
                registry.skipped_sources.append((source.get("kind"), str(exc)))
                log.info("source.skipped", kind=source.get("kind"), error=str(exc))
    except BaseException:
        registry.close()
        raise
    return registry


def load_source(registry: ToolRegistry, index: int, source: dict[str, Any]) -> None:
    """Load ``sources[index]`` of the registry's configuration into it (errors name the entry)."""
    where = f"{registry.config.where}, sources[{index}]"
    options = {k: _config.expand_env(v, f"{where}.{k}") for k, v in source.items()}
    kind_name = options.pop("kind", None)
    if not isinstance(kind_name, str):
        raise ConfigError(f"{where}: every source needs a 'kind' (python, mcp, openapi, ...)")
    try:
        kind = registry._host.source_kind(kind_name)
    except MissingPluginError:
        raise
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    target = options.pop(kind.target, None)
    if target is None:
        target = options.pop("source", None)
    if target is None:
        raise ConfigError(f"{where}: a {kind_name} source needs {kind.target} = ...")
    folder = registry.config.path.parent if registry.config.path else None
    if folder is not None:
        for option in kind.paths:
            if option == kind.target:
                target = _relative_to(folder, target)
            elif option in options:
                options[option] = _relative_to(folder, options[option])
    raw = registry.config.table.get("sources", [])
    written = {k.replace("-", "_"): k for k in (raw[index] if index < len(raw) else {})}
    from . import _kind_options

    try:
        with _kind_options.spelled(written, where):
            registry.load(kind_name, target, **options)
    except MissingPluginError:
        raise
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(f"{where}: loading the {kind_name} source {target!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc


def _where(kind: str, source: Any) -> str:
    return f"{kind} source {source!r}" if isinstance(source, str) else f"a {kind} source"


def _relative_to(folder: Path, value: Any) -> Any:
    """A file path in the configuration (see :func:`_config.resolve_path`); other values
    unchanged."""
    return _config.resolve_path(value, folder) if isinstance(value, str) else value

