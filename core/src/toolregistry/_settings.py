"""The kernel's settings: one typed model, one resolver, every option in one table.

Each field of :class:`Settings` is an option of ``[tool.toolregistry]`` (dashes in the file,
underscores here) with its environment variable, default and parser in its metadata. For every
option: **explicit argument > environment variable > pyproject > default**. Invalid values are
refused with a :class:`~toolregistry.errors.ConfigError` naming the option and where the value
came from (the argument, the environment variable, or the file).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from .errors import ConfigError

if TYPE_CHECKING:
    from ._config import RegistryConfig

__all__ = [
    "DEFERRAL_MODES",
    "ENV_CONFIG",
    "MAX_TIMEOUT",
    "TIMEOUT_RULE",
    "UNDISCOVERED_CALLS",
    "Settings",
    "check_timeout",
    "valid_timeout",
]

ENV_CONFIG = "TOOLREGISTRY_CONFIG"
"""Which file holds ``[tool.toolregistry]`` (not an option: it says where the options are)."""

MAX_TIMEOUT = 31_536_000.0
"""The longest timeout accepted (a year, in seconds). Longer deadlines overflow the platform's
time and thread-wait limits (``1e10`` raises ``OverflowError`` deep inside a call)."""

NO_TIMEOUT = "none"


class _Invalid(ValueError):
    """A value an option refuses; the resolver adds the option and where it came from."""


def valid_timeout(value: Any) -> bool:
    """A timeout every entry accepts: a finite number of seconds > 0, at most a year."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and 0 < value <= MAX_TIMEOUT)


TIMEOUT_RULE = f"must be a finite number of seconds > 0 and at most {MAX_TIMEOUT:.0f} (a year)"


def check_timeout(value: Any, option: str) -> float | None:
    """``value`` as a timeout in seconds (``None``: no timeout), or a :class:`ConfigError`
    naming ``option``: timeouts are finite numbers > 0 and at most :data:`MAX_TIMEOUT`
    (``nan``, ``inf``, ``1e10``, zero and negative numbers are refused)."""
    if value is None:
        return None
    if not valid_timeout(value):
        raise ConfigError(f"{option} {TIMEOUT_RULE}, got {value!r}")
    return float(value)


# --- parsers: (value, from_text) -> typed value; raise _Invalid with what the option needs -----

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _bool(value: Any, text: bool) -> bool:
    if text:
        lowered = str(value).strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise _Invalid("must be true or false (1/0, true/false, yes/no, on/off)")
    if not isinstance(value, bool):
        raise _Invalid("must be true or false")
    return value


def _timeout(value: Any, text: bool) -> float | None:
    if isinstance(value, str) and value.strip().lower() == NO_TIMEOUT:
        return None
    if text:
        try:
            value = float(value)
        except ValueError:
            pass
    if not valid_timeout(value):
        raise _Invalid(f'{TIMEOUT_RULE}, or "none" for no timeout')
    return float(value)


def _pinning(value: Any, text: bool) -> bool | str:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return _bool(value, text)
    except _Invalid:
        raise _Invalid('must be "auto", true or false') from None


def _workers(value: Any, text: bool) -> int:
    if text:
        try:
            value = int(str(value).strip())
        except ValueError:
            raise _Invalid("must be an integer >= 1") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Invalid("must be an integer >= 1")
    return value


def _names(value: Any, text: bool) -> frozenset[str]:
    if text:
        return frozenset(p.strip() for p in str(value).split(",") if p.strip())
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _Invalid("must be a list of plugin names")
    items = list(value)
    if not all(isinstance(v, str) for v in items):
        raise _Invalid("must be a list of plugin names")
    return frozenset(items)


def _order(value: Any, text: bool) -> tuple[str, ...]:
    if text:
        items = [p.strip() for p in str(value).split(",") if p.strip()]
    else:
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise _Invalid("must be a list of plugin names")
        items = list(value)
        if not all(isinstance(v, str) for v in items):
            raise _Invalid("must be a list of plugin names")
    twice = sorted({n for n in items if items.count(n) > 1})
    if twice:
        raise _Invalid(f"names {', '.join(twice)} more than once")
    return tuple(items)


def _discovery(value: Any, text: bool) -> bool | Mapping[str, Any]:
    if text or isinstance(value, bool):
        return _bool(value, text)
    if not isinstance(value, Mapping):
        raise _Invalid("must be true, false or a table {field-weights = {name = weight}}")
    table = {str(k).replace("-", "_"): v for k, v in value.items()}
    weights = table.pop("field_weights", {})
    if table:
        raise _Invalid(f"has unknown key(s) {', '.join(sorted(table))} (known: field-weights)")
    if not isinstance(weights, Mapping) or not all(
        isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
        for w in weights.values()
    ):
        raise _Invalid("field-weights must be a table of finite numbers >= 0")
    return {"field_weights": {str(k): float(w) for k, w in weights.items()}}


def _choice(*allowed: str) -> Callable[[Any, bool], str]:
    def parse(value: Any, text: bool) -> str:
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        raise _Invalid("must be one of " + ", ".join(f'"{a}"' for a in allowed))

    return parse


DEFERRAL_MODES = ("auto", "native", "registry")
"""How deferred tools reach the model (the ``deferral`` option)."""

UNDISCOVERED_CALLS = ("run", "refuse", "reveal")
"""What a call to a deferred tool not yet revealed does (``undiscovered_calls``)."""


def _sources(value: Any, text: bool) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list) or not all(isinstance(s, Mapping) for s in value):
        raise _Invalid("must be an array of tables ([[tool.toolregistry.sources]])")
    return tuple({k.replace("-", "_"): v for k, v in s.items()} for s in value)


def _plugin_tables(value: Any, text: bool) -> Mapping[str, Mapping[str, Any]]:
    if not isinstance(value, Mapping):
        raise _Invalid("must be a table of plugin tables ([tool.toolregistry.plugins.<name>])")
    for name, table in value.items():
        if not isinstance(table, Mapping):
            raise _Invalid(f"entry {name!r} must be a table ([tool.toolregistry.plugins.{name}])")
    return {name: dict(table) for name, table in value.items()}


def _store(value: Any, text: bool) -> str:
    from ._config import expand_env
    from ._store import parse_store_url

    if not isinstance(value, str) or not value.strip():
        raise _Invalid("must be a store URL: sqlite:///path/to/file.db or "
                       "postgresql://user:password@host/database")
    try:
        expanded: str = expand_env(value, "store")
        parse_store_url(expanded)
    except (ConfigError, ValueError) as exc:
        raise _Invalid(str(exc).removeprefix("store: ")) from None
    return expanded.strip()


def _auto_workers() -> int:
    return max(32, (os.cpu_count() or 1) + 4)


@frozen
class OptionInfo:
    """What the docs table says about one option (kept in the field's metadata)."""

    env: str | None
    parse: Callable[[Any, bool], Any]
    default: str
    doc: str
    needs_plugin: str | None = None
    file_only: bool = False


def _option(default: Any, parse: Callable[[Any, bool], Any], *, shown: str, doc: str,
            env: bool = True, needs_plugin: str | None = None, file_only: bool = False,
            name: str) -> Any:
    info = OptionInfo(f"TOOLREGISTRY_{name.upper()}" if env else None, parse, shown, doc,
                      needs_plugin, file_only)
    if callable(default):
        return attrs.field(factory=default, metadata={"option": info})
    return attrs.field(default=default, metadata={"option": info})


def _empty() -> dict[str, Any]:
    return {}


@frozen(kw_only=True)
class Settings:
    """The resolved kernel options of one registry (``registry.settings``), with where each
    value came from (``origin(name)``). Build with :meth:`resolve`."""

    think_augment: bool = _option(
        False, _bool, name="think_augment", shown="false", needs_plugin="think",
        doc="inject `toolcall_reason` into every tool schema")
    tool_discovery: bool | Mapping[str, Any] = _option(
        False, _discovery, name="tool_discovery", shown="false", needs_plugin="discovery",
        doc="register `discover_tools`; a table `{field-weights = {...}}` sets its weights")
    deferral: str = _option(
        "auto", _choice(*DEFERRAL_MODES), name="deferral", shown="auto",
        doc="how `get_schemas(include_deferred=False)` defers tools: `native` with the "
            "provider's own tool search (`defer_loading`; an error for a format without "
            "one), `registry` by leaving them out for `discover_tools` to reveal, `auto` "
            "native where the format has it (see Discovery)")
    undiscovered_calls: str = _option(
        "run", _choice(*UNDISCOVERED_CALLS), name="undiscovered_calls", shown="run",
        doc="a call to a deferred tool that was never revealed: `run` it, `refuse` it with an "
            "error result telling the model to search first, or `reveal` it and run it")
    default_timeout: float | None = _option(
        60.0, _timeout, name="default_timeout", shown="60",
        doc='seconds per call unless the tool or the call sets its own; `"none"` for no '
            "timeout; finite, > 0, at most a year")
    max_workers: int = _option(
        _auto_workers, _workers, name="max_workers", shown="max(32, CPUs + 4)",
        doc="threads for sync tools (>= 1)")
    strict_plugins: bool = _option(
        False, _bool, name="strict_plugins", shown="false",
        doc="broken plugins, plugin conflicts and unknown options raise instead of warning")
    disable_plugins: frozenset[str] = _option(
        frozenset(), _names, name="disable_plugins", shown="[]",
        doc="block list of entry-point names (comma-separated in the environment)")
    load_plugins: frozenset[str] | None = _option(
        None, _names, name="load_plugins", shown="all",
        doc="allow list of entry-point names (comma-separated in the environment)")
    plugin_order: tuple[str, ...] = _option(
        (), _order, name="plugin_order", shown="[]",
        doc="entry-point names whose hook implementations are called first, in this order "
            "(first named, first called; comma-separated in the environment)")
    trace_hooks: bool = _option(
        False, _bool, name="trace_hooks", shown="false",
        doc="trace every hook call (pluggy's tracing) as `hook.trace` debug events")
    process_namespaces: frozenset[str] = _option(
        frozenset(), _names, name="process_namespaces", shown="[]",
        doc="namespaces whose tools run in worker processes killed at their deadline, as "
            "with `ToolMetadata(isolation=\"process\")` (comma-separated in the environment; "
            "see Execution)")
    inline_calls: bool = _option(
        False, _bool, name="inline_calls", shown="false",
        doc="opt-in: on the main thread, run sync tools with a deadline inline under a "
            "watchdog signal instead of on a worker thread; saves the thread hand-off, but a "
            "tool that swallows the cancellation or blocks in a C call then answers late "
            "(see Execution)")
    handoff_pinning: bool | str = _option(
        "auto", _pinning, name="handoff_pinning", shown="auto",
        doc="on Linux, wake the registry's own worker that takes a call on the calling "
            "thread's CPU; the worker takes back its own CPU mask before it runs the tool, "
            "and no other thread's affinity is ever changed. Saves the wake-up of an idle "
            "CPU (dear on a virtual machine); `auto` (the default): only while some CPU is "
            "idle; `true`: always; `false`: never (see Execution)")
    store: str | None = _option(
        None, _store, name="store", shown="none",
        doc="where stateful plugins keep what workers and hosts share (approvals, budgets, "
            "the execution log): `sqlite:///path` (a file; relative to the configuration "
            "file's folder) or `postgresql://user:password@host/db`; `${VAR}` is replaced by "
            "that environment variable; none: each plugin keeps its state in the process "
            "(see Deployment)")
    sources: tuple[Mapping[str, Any], ...] = _option(
        (), _sources, name="sources", shown="[]", env=False, file_only=True,
        doc="tool sources for `from_config()` (below)")
    plugins: Mapping[str, Mapping[str, Any]] = _option(
        _empty, _plugin_tables, name="plugins", shown="{}", env=False, file_only=True,
        doc="each plugin's own table `[tool.toolregistry.plugins.<name>]`, validated by that "
            "plugin's model when the configuration is loaded")
    origins: Mapping[str, str] = attrs.field(factory=_empty, eq=False, repr=False)

    def origin(self, name: str) -> str:
        """Where ``name``'s value came from: ``argument``, ``environment variable X``, the
        file, or ``default``."""
        return self.origins.get(name, "default")

    @classmethod
    def options(cls) -> dict[str, OptionInfo]:
        """Every option by field name, in table order."""
        return {f.name: f.metadata["option"] for f in attrs.fields(cls) if "option" in f.metadata}

    @classmethod
    def resolve(cls, config: RegistryConfig | None = None, **explicit: Any) -> Settings:
        """Layer explicit arguments (``None``: not given) over environment variables over
        ``config`` (a loaded ``[tool.toolregistry]``) over defaults."""
        options = cls.options()
        unknown = sorted(set(explicit) - {n for n, o in options.items() if not o.file_only})
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        file_values = config.values if config is not None else {}
        for name, info in options.items():
            given = explicit.get(name)
            if given is not None:
                values[name] = parse_value(name, info, given, f"argument {name}", text=False)
                origins[name] = "argument"
                continue
            env_value = env_text(info)
            if env_value is not None:
                assert info.env is not None
                where = f"environment variable {info.env}"
                values[name] = parse_value(name, info, env_value, where, text=True)
                origins[name] = where
            elif name in file_values:
                values[name] = file_values[name]
                origins[name] = config.where if config is not None else "file"
        return cls(**values, origins=origins)


def env_text(info: OptionInfo) -> str | None:
    """The option's environment variable when it is set. A blank variable counts as unset,
    except for plugin lists, where it is the empty list."""
    if info.env is None:
        return None
    raw = os.environ.get(info.env)
    if raw is None or (not raw.strip() and info.parse not in (_names, _order)):
        return None
    return raw


def parse_value(name: str, info: OptionInfo, value: Any, where: str, *, text: bool) -> Any:
    """``value`` parsed for option ``name``; a :class:`ConfigError` naming the option and
    ``where`` it came from when the option refuses it."""
    try:
        return info.parse(value, text)
    except _Invalid as exc:
        if info.parse is _store and isinstance(value, str):
            from ._store import masked_url

            value = masked_url(value)
        raise ConfigError(f"{where}: {name.replace('_', '-')} {exc}, got {value!r}") from None


def parse_file_options(table: Mapping[str, Any], where: str,
                       texts: Collection[str] = ()) -> dict[str, Any]:
    """The kernel options present in a ``[tool.toolregistry]`` table (keys normalised), parsed
    (those named in ``texts`` as text, as from the environment: their ``${VAR}`` was
    expanded)."""
    options = Settings.options()
    return {name: parse_value(name, options[name], value, where, text=name in texts)
            for name, value in table.items() if name in options}
