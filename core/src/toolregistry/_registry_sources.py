"""Tools from sources, for :class:`~toolregistry.ToolRegistry`.

It owns building a registry and its ``[[tool.toolregistry.sources]]`` from configuration
(``from_config`` delegates here), and loading and exporting tools through the plugins' source
kinds (``load``/``aload``, ``export``, ``register_from_<kind>`` for built-in and third-party
kinds, ``to_langchain``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _config
from ._log import log
from ._plugins import PluginSettings, get_host
from ._registry_base import RegistryBase
from ._settings import Settings
from .errors import ConfigError, MissingPluginError
from .tool import Tool

if TYPE_CHECKING:
    from ._registry import ToolRegistry


class RegistrySources(RegistryBase):
    """Loading and exporting tools through the plugins' source kinds."""

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
    try:
        kind.load(registry, target, **options)
    except MissingPluginError:
        raise
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(f"{where}: loading the {kind_name} source {target!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc


def _relative_to(folder: Path, value: Any) -> Any:
    """A relative file path in the configuration, against the configuration's folder (URLs
    and absolute paths unchanged)."""
    if not isinstance(value, str) or "://" in value or Path(value).is_absolute():
        return value
    return str(folder / value)

