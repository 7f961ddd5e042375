"""Finding, loading and isolating plugins: entry points, records, loaders, the host per settings."""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy
from attrs import define, field, frozen

from . import _kernel, hookspecs
from ._config import ConfigWarning, RegistryConfig, load_config, plugin_settings
from ._entrypoints import entry_points
from ._extensions import Command, SourceKind
from ._log import log
from ._manager import PluginManager
from ._settings import Settings
from .errors import ConfigError, MissingPluginError, PluginError

if TYPE_CHECKING:
    from ._hooks import Hooks
    from .formats import FormatTable, ProviderFormat

ENTRY_POINT_GROUP = "toolregistry.plugins"
HOOK_NAMES: tuple[str, ...] = tuple(
    name for name, spec in vars(hookspecs).items()
    if getattr(spec, f"{hookspecs.PROJECT_NAME}_spec", None) is not None)
"""Every hook, in the order ``hookspecs`` defines them (each function marked as a spec)."""
HOST_HOOKS = ("loaders", "provider_formats", "settings_model", "cli_commands")
"""Hooks the host asks one plugin at a time (not through the per-call façade): a failure is
recorded on that plugin's record and logged, never raised into a call (strict mode: raised)."""
KERNEL = _kernel.NAME
"""The provider named for what the kernel itself offers (the ``python`` source kind)."""

# Install hints: an absent plugin cannot describe itself, so for the first-party source kinds
# and commands the kernel keeps the name of the plugin to install (its distribution is
# ``toolregistry-<plugin>``). Everything else about a plugin comes from the plugin.
KIND_HINTS: Mapping[str, str] = {"mcp": "mcp", "openapi": "openapi", "langchain": "langchain"}
COMMAND_HINTS: Mapping[str, str] = {"serve": "mcp", "inspect": "inspector", "log": "inspector"}


# The names of the source kinds known to any host (the kernel's, the first-party ones whose
# plugin may be missing, the plugins'): registries answer register_from_<name> and
# aregister_from_<name> for each (see _registry_sources).
_kind_names: set[str] = {"python", *KIND_HINTS}
_kind_listeners: list[Callable[[str], None]] = []


def on_kind_name(listener: Callable[[str], None]) -> None:
    """Call ``listener(name)`` for every source kind name known now, and for each one a host
    learns later."""
    _kind_listeners.append(listener)
    for name in sorted(_kind_names):
        listener(name)


def _learned_kind(name: str) -> None:
    if name not in _kind_names:
        _kind_names.add(name)
        for listener in _kind_listeners:
            listener(name)


def distribution_of(plugin: str) -> str:
    """The distribution that provides a first-party ``plugin`` (the project's naming rule)."""
    return f"toolregistry-{plugin}"


@frozen
class PluginSettings:
    """Which plugins to load: block list, allow list (``None``: all), strictness, tracing."""

    disable: frozenset[str] = frozenset()
    load: frozenset[str] | None = None
    strict: bool = False
    trace: bool = False
    order: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Settings) -> PluginSettings:
        """The plugin part of resolved kernel settings."""
        return cls(settings.disable_plugins, settings.load_plugins, settings.strict_plugins,
                   settings.trace_hooks, settings.plugin_order)

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
        if config is None:
            config = load_config(strict=strict)
        return cls.of(Settings.resolve(config, disable_plugins=disable, load_plugins=load,
                                       strict_plugins=strict))


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
        self.pm: pluggy.PluginManager = PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        if settings.trace:
            self.pm.trace.root.setwriter(lambda msg: log.debug("hook.trace", message=msg))
            self.pm.enable_tracing()
        self.records: dict[str, PluginRecord] = {}
        self.kinds: dict[str, tuple[str, SourceKind]] = {}
        self._objects: dict[str, Any] = {}
        self._models: dict[str, Any] = {}
        # (plugin, its formats); None for the kernel's own, asked for with the table
        self._provided_formats: list[tuple[str, list[ProviderFormat] | None]] = []
        self._formats: FormatTable | None = None
        self._hooks: Hooks | None = None
        self._lazy_lock = threading.Lock()
        self._built = False
        # Kept so that they outlive the host: get_host() caches hosts by the ids of these
        # objects, and a broken one is unregistered from the plugin manager.
        self.extra_plugins = tuple(extra_plugins)
        # The kernel's own kinds and formats, offered the way plugins offer theirs, first.
        self._register(PluginRecord(KERNEL, None, None, "loaded", module=_kernel.__name__),
                       _kernel, listed=False)
        self._load_entry_points()
        for obj in self.extra_plugins:
            self.add(obj)
        self._apply_order()
        self._check_names()
        self._reset_formats()
        self._built = True

    @property
    def hooks(self) -> Hooks:
        """The hook façade over this host's plugin manager (built on first use)."""
        hooks: Hooks | None = self._hooks
        return hooks if hooks is not None else self._first_use("_hooks", self._new_hooks)

    @property
    def formats(self) -> FormatTable:
        """The provider formats: the kernel's, then the plugins' (built on first use)."""
        table: FormatTable | None = self._formats
        return table if table is not None else self._first_use("_formats", self._format_table)

    def _first_use(self, attribute: str, build: Callable[[], Any]) -> Any:
        """``build()`` stored as ``attribute`` unless another thread stored it first."""
        with self._lazy_lock:
            value = getattr(self, attribute)
            if value is None:
                value = build()
                setattr(self, attribute, value)
            return value

    def _new_hooks(self) -> Hooks:
        from ._hooks import Hooks

        return Hooks(self)

    # -- loading ------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        seen: dict[str, str | None] = {}
        eps = sorted(entry_points(ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.dist or ""))
        for ep in eps:
            dist = ep.dist
            version = ep.version
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
        if self._built:
            self._apply_order()
            with self._lazy_lock:
                self._reset_formats()
                hooks = self._hooks
            if hooks is not None:  # not built yet: it reads the plugins when it is
                hooks.refresh()
        return record

    def _register(self, record: PluginRecord, obj: Any, *, listed: bool = True) -> None:
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:  # pluggy validation: bad argument names, bad markers
            self._broken(record, f"invalid hook implementation: {exc}", exc=exc)
            return
        callers = self.pm.get_hookcallers(obj) or []
        unknown = sorted(hc.name for hc in callers if not hc.has_spec())
        if unknown:
            self.pm.unregister(obj)
            import difflib

            hints = []
            for hook in unknown:
                close = difflib.get_close_matches(hook, HOOK_NAMES, n=1)
                hints.append(f"{hook!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            self._broken(record, f"implements unknown hook {', '.join(hints)}")
            return
        record.hooks = sorted(hc.name for hc in callers if hc.name in HOOK_NAMES)
        if "loaders" in record.hooks:
            try:
                provided = self._collect_kinds(obj, record)
            except Exception as exc:
                self.pm.unregister(obj)
                self._broken(record, f"loaders() failed: {type(exc).__name__}: {exc}", exc=exc)
                return
            for kind in provided:
                if kind.name in self.kinds:
                    other = self.kinds[kind.name][0]
                    msg = (f"plugins {other!r} and {record.name!r} both provide the source kind "
                           f"{kind.name!r}; {other!r} is used")
                    if self.settings.strict:
                        raise PluginError(msg)
                    log.warning("plugin.conflict", plugin=record.name, kind=kind.name,
                                other=other)
                    continue
                self.kinds[kind.name] = (record.name, kind)
                _learned_kind(kind.name)
        if "provider_formats" in record.hooks and obj is _kernel:
            # the built-in formats: asked for when the table is first needed
            self._provided_formats.append((record.name, None))
        elif "provider_formats" in record.hooks:
            from .formats import FormatTable

            try:
                where = f"plugin {record.name!r}: provider_formats()"
                formats = [FormatTable.check(f, where) for f in obj.provider_formats()]
            except Exception as exc:
                self.pm.unregister(obj)
                self._broken(record, f"provider_formats() failed: {type(exc).__name__}: {exc}",
                             exc=exc)
                return
            self._provided_formats.append((record.name, formats))
        if not listed:
            return
        self.records[record.name] = record
        self._objects[record.name] = obj
        log.debug("plugin.loaded", plugin=record.name, distribution=record.distribution,
                  version=record.version, hooks=record.hooks)

    def _check_names(self) -> None:
        """Report a name of ``disable-plugins``, ``load-plugins`` or ``plugin-order`` that is
        no installed plugin (a misspelling would otherwise change nothing, silently): a
        ``ConfigWarning`` naming it and the installed plugins; strict mode: a ConfigError."""
        installed = sorted({r.name for r in self.records.values()} | set(self._objects))
        lists = (("disable-plugins", self.settings.disable),
                 ("load-plugins", self.settings.load or ()),
                 ("plugin-order", self.settings.order))
        for option, names in lists:
            for name in sorted(set(names) - set(installed)):
                import difflib

                close = difflib.get_close_matches(name, installed, n=1)
                msg = (f"{option} names {name!r}, which is not an installed plugin"
                       + (f" (did you mean {close[0]!r}?)" if close else "")
                       + f"; installed: {', '.join(installed) or 'none'}")
                if self.settings.strict:
                    raise ConfigError(msg)
                log.warning("plugin.unknown_name", option=option, name=name,
                            installed=installed)
                warnings.warn(msg, ConfigWarning, stacklevel=2)

    def _apply_order(self) -> None:
        """Make the plugins named by ``plugin-order`` called first, first named first: pluggy
        calls the implementations of a hook last registered first, so each named plugin is
        registered again, the last named first. ``tryfirst`` / ``trylast`` markers and
        wrappers keep their meaning."""
        for name in reversed([n for n in self.settings.order if n in self._objects]):
            obj = self._objects[name]
            self.pm.unregister(obj)
            self.pm.register(obj, name=name)

    def _reset_formats(self) -> None:
        """Forget the format table: built again on first use, or now when a plugin brings
        formats of its own (a clash with another format is reported at once)."""
        self._formats = None
        if any(formats for _, formats in self._provided_formats):
            self._formats = self._format_table()

    def _format_table(self) -> FormatTable:
        """The kernel's formats, then the plugins' in load order; a name claimed twice keeps
        its first owner (a ``plugin.conflict`` event names both; strict mode: an error)."""
        from .formats import FormatConflict, FormatTable

        table = FormatTable()
        for plugin, provided in self._provided_formats:
            formats = provided if provided is not None else _kernel.provider_formats()
            for fmt in formats:
                try:
                    table.add(fmt)
                except FormatConflict as exc:
                    if self.settings.strict:
                        raise PluginError(f"plugin {plugin!r}: {exc}") from None
                    log.warning("plugin.conflict", plugin=plugin, format=fmt.name,
                                error=str(exc))
        return table

    def _own(self, obj: Any, hook: str) -> Any:
        """``obj``'s own implementation of ``hook`` (``None`` when it has none): the hooks
        the host asks one plugin at a time, outside the per-call façade."""
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            if impl.plugin is obj:
                return impl.function
        return None

    def _collect_kinds(self, obj: Any, record: PluginRecord) -> list[SourceKind]:
        result = self._own(obj, "loaders")()
        kinds = list(result) if isinstance(result, (list, tuple)) else None
        if kinds is None or not all(isinstance(k, SourceKind) for k in kinds):
            raise PluginError(f"plugin {record.name!r}: loaders() must return a list of "
                              f"toolregistry.plugin.SourceKind objects, got {result!r}")
        return kinds

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

    def require(self, plugin: str, feature: str) -> None:
        """Raise :class:`MissingPluginError` for ``feature`` unless ``plugin`` is loaded."""
        if self.is_loaded(plugin):
            return
        rec = self.records.get(plugin)
        dist = (rec.distribution if rec is not None else None) or distribution_of(plugin)
        if rec is not None and rec.status == "broken":
            raise MissingPluginError(feature, plugin, dist) from PluginError(rec.error or "")
        raise MissingPluginError(feature, plugin, dist, blocked=rec is not None)

    def knows_kind(self, kind: str) -> bool:
        """True for an available kind, or a first-party one whose plugin is missing."""
        return kind in self.kinds or kind in KIND_HINTS

    def source_kind(self, kind: str) -> SourceKind:
        """The :class:`SourceKind` called ``kind``, or an error naming what to install."""
        entry = self.kinds.get(kind)
        if entry is not None:
            return entry[1]
        plugin = KIND_HINTS.get(kind)
        if plugin is not None:
            self.require(plugin, kind)
        known = ", ".join(sorted(self.kinds))
        raise ConfigError(f"no plugin provides the source kind {kind!r} (installed kinds: "
                          f"{known})")

    def provider(self, kind: str) -> str:
        """The plugin that provides ``kind`` (``toolregistry`` for the kernel's own)."""
        return self.kinds[kind][0]

    # -- plugin tables ------------------------------------------------------------------
    def settings_model(self, name: str) -> Any:
        """The pydantic model a loaded plugin declares for its table (``None``: none)."""
        if name not in self._models:
            fn = self._own(self._objects[name], "settings_model")
            model = fn() if fn is not None else None
            from pydantic import BaseModel

            if model is not None and not (isinstance(model, type)
                                          and issubclass(model, BaseModel)):
                raise PluginError(f"plugin {name!r}: settings_model() must return a pydantic "
                                  f"model class or None, got {model!r}")
            self._models[name] = model
        return self._models[name]

    def check_tables(self, config: RegistryConfig) -> None:
        """Validate every ``[tool.toolregistry.plugins.<name>]`` table of a loaded plugin with
        the model it declares (a :class:`ConfigError` naming plugin, option and file). Tables
        of plugins that are not installed or are blocked are left alone: they may be meant
        for another environment."""
        for name, table in config.plugin_tables.items():
            if not self.is_loaded(name) or name not in self._objects:
                log.debug("config.table_ignored", plugin=name, status=(
                    self.records[name].status if name in self.records else "not installed"))
                continue
            model = self.settings_model(name)
            if model is None:
                if table:
                    from ._config import report_unknown

                    report_unknown(f"[tool.toolregistry.plugins.{name}] "
                                   f"({config.path or 'no file'}): the {name!r} plugin takes "
                                   "no options;", sorted(table), [], strict=self.settings.strict)
                continue
            plugin_settings(name, model, config, strict=self.settings.strict)

    # -- CLI commands -------------------------------------------------------------------
    def commands(self, taken: Iterable[str] = ()) -> list[tuple[str, Command]]:
        """``(plugin, command)`` for every command of every loaded plugin, by plugin name.

        A plugin whose ``cli_commands()`` fails, returns something else, or names a command
        already ``taken`` (a kernel command, or an earlier plugin's) is reported
        (``plugin.command_failed`` and its record's ``error``) and its commands left out.
        """
        found: list[tuple[str, Command]] = []
        names = set(taken)
        for name, obj in sorted(self._objects.items()):
            fn = self._own(obj, "cli_commands")
            if fn is None or not self.is_loaded(name):
                continue
            try:
                result = fn()
                commands = list(result) if isinstance(result, (list, tuple)) else None
                if commands is None or not all(isinstance(c, Command) for c in commands):
                    raise PluginError("cli_commands() must return a list of "
                                      f"toolregistry.plugin.Command objects, got {result!r}")
                clash = sorted({c.name for c in commands} & names)
                if clash:
                    raise PluginError(f"the command name(s) {', '.join(clash)} are taken")
            except Exception as exc:
                self.command_failed(name, f"{type(exc).__name__}: {exc}", exc)
                continue
            names.update(c.name for c in commands)
            found.extend((name, c) for c in commands)
        return found

    def command_failed(self, plugin: str, error: str, exc: BaseException | None = None) -> None:
        """Report that ``plugin``'s CLI commands are left out (strict mode: raise)."""
        record = self.records[plugin]
        record.error = f"CLI commands left out: {error}"
        if self.settings.strict:
            raise PluginError(f"plugin {plugin!r} ({record.distribution}): {record.error}"
                              ) from exc
        log.error("plugin.command_failed", plugin=plugin, distribution=record.distribution,
                  error=error)

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
