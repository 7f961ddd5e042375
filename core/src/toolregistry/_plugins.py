"""Finding, loading and isolating plugins: entry points, records, loaders, the host per settings."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as md
import os
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy
from attrs import define, field, frozen

from . import hookspecs
from ._config import (
    ENV_DISABLE,
    ENV_LOAD,
    ENV_STRICT,
    RegistryConfig,
    env_bool,
    env_list,
    load_config,
)
from ._hooks import ENV_TRACE, Hooks
from ._log import log
from .errors import ConfigError, MissingPluginError, PluginError
from .formats import BUILTIN_FORMATS, FormatConflict, FormatTable, ProviderFormat

if TYPE_CHECKING:
    pass

ENTRY_POINT_GROUP = "toolregistry.plugins"
HOOK_NAMES = ("register", "schema_transform", "pre_invoke", "post_invoke", "on_change",
              "loaders", "suggest_tools", "call_hooks", "provider_formats")

# Features the kernel knows by name, and the first-party plugin that provides each.
FEATURES: dict[str, tuple[str, str]] = {
    "think_augment": ("think", "toolregistry-think"),
    "tool_discovery": ("discovery", "toolregistry-discovery"),
    "mcp": ("mcp", "toolregistry-mcp"),
    "openapi": ("openapi", "toolregistry-openapi"),
    "langchain": ("langchain", "toolregistry-langchain"),
    "spool": ("spool", "toolregistry-spool"),
}


@frozen
class PluginSettings:
    """Which plugins to load: block list, allow list (``None``: all), strictness."""

    disable: frozenset[str] = frozenset()
    load: frozenset[str] | None = None
    strict: bool = False

    @classmethod
    def resolve(
        cls,
        *,
        disable: Iterable[str] | None = None,
        load: Iterable[str] | None = None,
        strict: bool | None = None,
        config: RegistryConfig | None = None,
    ) -> PluginSettings:
        """Layer explicit arguments over environment variables over pyproject over defaults."""
        env_strict = env_bool(ENV_STRICT)
        strict_value = strict if strict is not None else env_strict
        if config is None:
            config = load_config(strict=bool(strict_value))
        if strict_value is None:
            strict_value = bool(config.get("strict_plugins", False))
        d = disable if disable is not None else env_list(ENV_DISABLE)
        if d is None:
            d = _list_option(config, "disable_plugins") or []
        ld = load if load is not None else env_list(ENV_LOAD)
        if ld is None:
            ld = _list_option(config, "load_plugins")
        return cls(frozenset(d), frozenset(ld) if ld is not None else None, bool(strict_value))


def _list_option(config: RegistryConfig, key: str) -> list[str] | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{config.where}: {key.replace('_', '-')} must be a list of plugin names")
    return value


@define
class PluginRecord:
    """What ``toolregistry plugins`` reports for one entry point."""

    name: str
    distribution: str | None
    version: str | None
    status: str  # loaded | blocked | broken
    error: str | None = None
    hooks: list[str] = field(factory=list)
    module: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "hooks": self.hooks,
            "error": self.error,
        }


class PluginHost:
    """A plugin manager with its records. Built once per set of settings (see :func:`get_host`)."""

    def __init__(self, settings: PluginSettings, extra_plugins: Iterable[Any] = ()) -> None:
        self.settings = settings
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        if os.environ.get(ENV_TRACE):
            self.pm.trace.root.setwriter(lambda msg: log.debug("hook.trace", message=msg))
            self.pm.enable_tracing()
        self.records: dict[str, PluginRecord] = {}
        self.loaders: dict[str, tuple[str, Any]] = {}
        self._provided_formats: list[tuple[str, list[ProviderFormat]]] = []
        # Kept so that they outlive the host: get_host() caches hosts by the ids of these
        # objects, and a broken one is unregistered from the plugin manager.
        self.extra_plugins = tuple(extra_plugins)
        self._load_entry_points()
        for obj in self.extra_plugins:
            self.add(obj)
        self.formats = self._format_table()
        self.hooks = Hooks(self)

    # -- loading ------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        seen: dict[str, str | None] = {}
        eps = sorted(
            md.entry_points(group=ENTRY_POINT_GROUP),
            key=lambda ep: (ep.name, ep.dist.name if ep.dist else ""),
        )
        for ep in eps:
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            if ep.name in seen:
                if seen[ep.name] == dist:
                    continue  # the same distribution seen twice on sys.path
                self._broken(
                    PluginRecord(ep.name, dist, version, "broken"),
                    f"entry-point name {ep.name!r} is claimed by both {seen[ep.name]} and "
                    f"{dist}; the one from {seen[ep.name]} is used: uninstall one of them",
                    key=f"{ep.name} ({dist})",
                )
                continue
            seen[ep.name] = dist
            record = PluginRecord(ep.name, dist, version, "loaded", module=ep.value)
            if ep.name in self.settings.disable or (
                self.settings.load is not None and ep.name not in self.settings.load
            ):
                record.status = "blocked"
                self.records[ep.name] = record
                log.info("plugin.blocked", plugin=ep.name, distribution=dist)
                continue
            try:
                obj = ep.load()
            except Exception as exc:
                self._broken(record, f"import failed: {type(exc).__name__}: {exc}", exc=exc)
                continue
            self._register(record, obj)

    def add(self, obj: Any, name: str | None = None) -> PluginRecord:
        """Register an in-process plugin object (tests, applications); validated like others."""
        pname = name or getattr(obj, "__name__", None) or type(obj).__name__
        record = PluginRecord(pname, None, None, "loaded", module=getattr(obj, "__name__", None))
        self._register(record, obj)
        if hasattr(self, "hooks"):
            self.formats = self._format_table()
            self.hooks.refresh()
        return record

    def _register(self, record: PluginRecord, obj: Any) -> None:
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:  # pluggy validation: bad argument names, bad markers
            self._broken(record, f"invalid hook implementation: {exc}", exc=exc)
            return
        unknown = self._unknown_hooks(obj)
        if unknown:
            self.pm.unregister(obj)
            hints = []
            for hook in unknown:
                close = difflib.get_close_matches(hook, HOOK_NAMES, n=1)
                hints.append(f"{hook!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            self._broken(record, f"implements unknown hook {', '.join(hints)}")
            return
        record.hooks = sorted(
            hc.name for hc in self.pm.get_hookcallers(obj) or [] if hc.name in HOOK_NAMES
        )
        if "loaders" in record.hooks:
            try:
                provided = self._collect_loaders(obj, record)
            except Exception as exc:
                self.pm.unregister(obj)
                self._broken(record, f"loaders() failed: {type(exc).__name__}: {exc}", exc=exc)
                return
            for kind, loader in provided.items():
                if kind in self.loaders:
                    other = self.loaders[kind][0]
                    msg = (f"plugins {other!r} and {record.name!r} both provide the source kind "
                           f"{kind!r}; {other!r} is used")
                    if self.settings.strict:
                        raise PluginError(msg)
                    log.warning("plugin.conflict", plugin=record.name, kind=kind, other=other)
                    continue
                self.loaders[kind] = (record.name, loader)
        if "provider_formats" in record.hooks:
            try:
                where = f"plugin {record.name!r}: provider_formats()"
                formats = [FormatTable.check(f, where) for f in obj.provider_formats()]
            except Exception as exc:
                self.pm.unregister(obj)
                self._broken(record, f"provider_formats() failed: {type(exc).__name__}: {exc}",
                             exc=exc)
                return
            self._provided_formats.append((record.name, formats))
        self.records[record.name] = record
        log.debug("plugin.loaded", plugin=record.name, distribution=record.distribution,
                  version=record.version, hooks=record.hooks)

    def _format_table(self) -> FormatTable:
        """The built-in formats, then the plugins' in load order; a name claimed twice keeps
        its first owner (a ``plugin.conflict`` event names both; strict mode: an error)."""
        table = FormatTable(BUILTIN_FORMATS)
        for plugin, formats in self._provided_formats:
            for fmt in formats:
                try:
                    table.add(fmt)
                except FormatConflict as exc:
                    if self.settings.strict:
                        raise PluginError(f"plugin {plugin!r}: {exc}") from None
                    log.warning("plugin.conflict", plugin=plugin, format=fmt.name,
                                error=str(exc))
        return table

    def _unknown_hooks(self, obj: Any) -> list[str]:
        unknown = []
        for hc in self.pm.get_hookcallers(obj) or []:
            if not hc.has_spec():
                unknown.append(hc.name)
        return sorted(unknown)

    @staticmethod
    def _collect_loaders(obj: Any, record: PluginRecord) -> Mapping[str, Any]:
        result = obj.loaders()
        if not isinstance(result, Mapping) or not all(isinstance(k, str) for k in result):
            raise PluginError(f"plugin {record.name!r}: loaders() must return {{kind: loader}}")
        return result

    def _broken(self, record: PluginRecord, error: str, *, exc: BaseException | None = None,
                key: str | None = None) -> None:
        record.status = "broken"
        record.error = error
        self.records[key or record.name] = record
        if self.settings.strict:
            raise PluginError(f"plugin {record.name!r} ({record.distribution}): {error}") from exc
        log.error("plugin.broken", plugin=record.name, distribution=record.distribution,
                  version=record.version, error=error)

    # -- queries ------------------------------------------------------------------------
    def is_loaded(self, name: str) -> bool:
        rec = self.records.get(name)
        return rec is not None and rec.status == "loaded"

    def require(self, feature: str) -> None:
        """Raise :class:`MissingPluginError` unless the plugin providing ``feature`` is loaded."""
        plugin, dist = FEATURES[feature]
        if self.is_loaded(plugin):
            return
        rec = self.records.get(plugin)
        if rec is not None and rec.status == "broken":
            raise MissingPluginError(feature, plugin, dist) from PluginError(rec.error or "")
        raise MissingPluginError(feature, plugin, dist, blocked=rec is not None)

    def loader(self, kind: str) -> Any:
        """The loader for a source kind, or a :class:`MissingPluginError` naming what to install."""
        entry = self.loaders.get(kind)
        if entry is not None:
            return entry[1]
        base = kind.split(":", 1)[0]  # "mcp:serve", "langchain:export": services of a plugin
        if base in FEATURES:
            self.require(base)
        known = ", ".join(sorted(self.loaders)) or "none"
        raise ConfigError(f"no plugin provides the source kind {kind!r} (installed kinds: {known})")

    def report(self) -> list[dict[str, Any]]:
        """JSON-ready records, sorted by name (what ``toolregistry plugins`` prints)."""
        return [r.to_dict() for _, r in sorted(self.records.items())]


_hosts: dict[tuple[PluginSettings, tuple[int, ...]], PluginHost] = {}
_hosts_lock = threading.Lock()


def get_host(settings: PluginSettings | None = None, extra_plugins: Iterable[Any] = ()
             ) -> PluginHost:
    """The plugin host for ``settings`` (built lazily, once per distinct settings)."""
    if settings is None:
        settings = PluginSettings.resolve()
    extras = tuple(extra_plugins)
    key = (settings, tuple(id(p) for p in extras))
    host = _hosts.get(key)
    if host is None:
        with _hosts_lock:
            host = _hosts.get(key)
            if host is None:
                host = PluginHost(settings, extras)
                _hosts[key] = host
    return host


def reset_hosts() -> None:
    """Forget every built host (tests that install or remove plugins at run time)."""
    with _hosts_lock:
        _hosts.clear()
    importlib.invalidate_caches()
