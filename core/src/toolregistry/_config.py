"""``[tool.toolregistry]`` configuration: found, read once, validated, layered.

Precedence for every option: explicit argument > environment variable > pyproject > default.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import field, frozen

from .errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ConfigWarning", "RegistryConfig", "load_config", "plugin_settings", "resolve_path"]

T = TypeVar("T")


class ConfigWarning(UserWarning):
    """An unknown or suspicious configuration key (an error in strict mode)."""


def _norm(key: str) -> str:
    return key.replace("-", "_")


def normalise_keys(table: Mapping[str, Any]) -> dict[str, Any]:
    """``{"think-augment": ...}`` -> ``{"think_augment": ...}`` (one level)."""
    return {_norm(k): v for k, v in table.items()}


@frozen
class RegistryConfig:
    """The ``[tool.toolregistry]`` table of one file: keys normalised (``-`` -> ``_``), the
    kernel's options parsed (``values``), unknown keys listed. Validated plugin tables are
    kept here too, so that each is validated once per file."""

    path: Path | None
    table: Mapping[str, Any]
    values: Mapping[str, Any] = field(factory=dict)
    unknown: tuple[str, ...] = ()
    validated: dict[tuple[str, Any, bool], Any] = field(factory=dict, eq=False, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        """A kernel option as given in the file (parsed), or ``default``."""
        return self.values.get(key, default)

    @property
    def sources(self) -> list[dict[str, Any]]:
        """The ``[[tool.toolregistry.sources]]`` entries, keys normalised."""
        return [dict(s) for s in self.values.get("sources", ())]

    @property
    def plugin_tables(self) -> Mapping[str, Mapping[str, Any]]:
        """``[tool.toolregistry.plugins.<name>]`` by plugin name (as written)."""
        tables: Mapping[str, Mapping[str, Any]] = self.values.get("plugins", {})
        return tables

    def plugin_table(self, name: str) -> dict[str, Any]:
        """One plugin's table, keys normalised, ``${VAR}`` expanded (empty when absent)."""
        table = normalise_keys(self.plugin_tables.get(name, {}))
        expanded: dict[str, Any] = expand_env(
            table, f"[tool.toolregistry.plugins.{name}] ({self.path or 'no file'})")
        return expanded

    @property
    def folder(self) -> Path | None:
        """The folder relative paths in this configuration are resolved against."""
        return self.path.parent if self.path is not None else None

    @property
    def where(self) -> str:
        return f"[tool.toolregistry] in {self.path}" if self.path else "[tool.toolregistry]"


EMPTY_CONFIG = RegistryConfig(None, {})
_cache: dict[tuple[str, float], RegistryConfig] = {}


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` (default: the working directory) upwards."""
    # os.path until a file is found: pathlib stays unimported for a registry without one.
    folder = os.path.realpath(os.getcwd() if start is None else start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            from pathlib import Path

            return Path(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load_config(path: str | Path | None = None, *, strict: bool | None = None) -> RegistryConfig:
    """Read ``[tool.toolregistry]`` from ``path``, ``$TOOLREGISTRY_CONFIG`` or the nearest
    pyproject.toml (cached per file and modification time). A missing table is empty.

    The kernel's options are validated here (errors name the file and the option). Unknown
    keys warn, or raise when strict: ``strict`` when given, else ``TOOLREGISTRY_STRICT_PLUGINS``,
    else the file's own ``strict-plugins``.
    """
    from ._settings import ENV_CONFIG

    explicit = path is not None
    if path is None:
        path = os.environ.get(ENV_CONFIG) or find_pyproject()
        if path is None:
            return EMPTY_CONFIG
    from pathlib import Path

    file = Path(path)
    if explicit and file.is_dir():
        file = file / "pyproject.toml"
    # Absolute, so that paths relative to the file mean the same after a chdir, whoever
    # loaded the (cached) file first and however they spelled it.
    file = Path(os.path.abspath(file))
    try:
        stat = file.stat()
    except OSError as exc:
        raise ConfigError(f"configuration file {file} cannot be read: {exc.strerror}") from exc
    key = (str(file.resolve()), stat.st_mtime)
    config = _cache.get(key)
    if config is None:
        config = _read(file)
        _cache[key] = config
    if config.unknown:
        report_unknown(config.where, list(config.unknown), _known(),
                       strict=_strictness(strict, config))
    return config


def _read(file: Path) -> RegistryConfig:
    import tomllib

    from ._settings import parse_file_options

    try:
        with file.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"configuration file {file} cannot be read: {exc.strerror}") from exc
    tool = data.get("tool", {})
    table = tool.get("toolregistry", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [tool.toolregistry] must be a table")
    written = {_norm(k): k for k in table}
    table = normalise_keys(table)
    where = f"[tool.toolregistry] in {file}"
    # Sources and plugin tables are expanded when they are used: a variable only one
    # source or one (perhaps absent) plugin needs is not required by the rest.
    expanded = {k: v if k in _EXPANDED_LATER else expand_env(v, f"{where}: {written[k]}")
                for k, v in table.items()}
    # A value that came from the environment is read as the environment variable would be.
    texts = {k for k, v in expanded.items() if isinstance(v, str) and v != table[k]}
    table = expanded
    values = parse_file_options(table, where, texts)
    unknown = tuple(sorted(written[k] for k in set(table) - set(values)))
    return RegistryConfig(file, table, values, unknown)


def _known() -> list[str]:
    from ._settings import Settings

    return sorted(Settings.options())


def _strictness(strict: bool | None, config: RegistryConfig) -> bool:
    if strict is not None:
        return strict
    from ._settings import Settings, env_text, parse_value

    info = Settings.options()["strict_plugins"]
    raw = env_text(info)
    if raw is not None:
        return bool(parse_value("strict_plugins", info, raw, f"environment variable {info.env}",
                                text=True))
    return bool(config.values.get("strict_plugins", False))


def report_unknown(where: str, unknown: list[str], known: list[str], *, strict: bool) -> None:
    """Warn (or raise in strict mode) about unknown configuration keys (named as written;
    a close known option is suggested in the file's dashed spelling)."""
    import difflib

    parts = []
    for key in unknown:
        close = difflib.get_close_matches(_norm(key), known, n=1)
        parts.append(f"{key!r}" + (f" (did you mean {close[0].replace('_', '-')!r}?)" if close else ""))
    msg = f"{where}: unknown option {', '.join(parts)}"
    if strict:
        raise ConfigError(msg)
    warnings.warn(msg, ConfigWarning, stacklevel=3)


_ENV_REF = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)\}")
_EXPANDED_LATER = frozenset({"sources", "plugins"})


def expand_env(value: Any, where: str) -> Any:
    """Replace ``${VAR}`` in strings (recursively in lists and tables) by environment values;
    ``$${VAR}`` is the text ``${VAR}``. The one expansion rule of every table."""
    if isinstance(value, str):
        if "$" not in value:
            return value

        def sub(m: re.Match[str]) -> str:
            name = m.group(2)
            if m.group(1):
                return "${" + name + "}"
            if name not in os.environ:
                raise ConfigError(f"{where}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, list):
        return [expand_env(v, where) for v in value]
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}") for k, v in value.items()}
    return value


CONFIG_FOLDER = "toolregistry.config_folder"
"""The key of the pydantic validation context that holds the configuration's folder."""


def resolve_path(value: str, folder: Path | None) -> str:
    """A path from the configuration: ``~`` expanded, and a relative one taken against
    ``folder`` (the configuration file's folder) when there is one. URLs are left alone."""
    if "://" in value:
        return value
    from pathlib import Path

    path = Path(value).expanduser()
    if folder is not None and not path.is_absolute():
        path = folder / path
    return str(path)


def plugin_settings(
    name: str, model: type[T], config: RegistryConfig | None = None, *, strict: bool = False
) -> T:
    """Validate ``[tool.toolregistry.plugins.<name>]`` with the plugin's pydantic ``model``.

    Errors name the plugin, the option and the file; unknown options warn (raise when
    ``strict``, or when the model says ``unknown_options = "error"``: a table where a
    misspelt key would leave a permissive default in place). Each table is validated once per
    file and model.
    """
    cfg = config if config is not None else load_config()
    key = (name, model, strict)
    if key in cfg.validated:
        return cfg.validated[key]  # type: ignore[no-any-return]
    settings = _validate_table(name, model, cfg, strict)
    cfg.validated[key] = settings
    return settings


def _validate_table(name: str, model: type[T], cfg: RegistryConfig, strict: bool) -> T:
    from pydantic import BaseModel, ValidationError

    written = {_norm(k): k for k in cfg.plugin_tables.get(name, {})}
    table = cfg.plugin_table(name)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"plugin_settings needs a pydantic model class, got {model!r}")
    known = set()
    for fname, finfo in model.model_fields.items():
        known.add(fname)
        if finfo.alias:
            known.add(_norm(finfo.alias))
    unknown = sorted(set(table) - known)
    if unknown:
        report_unknown(f"[tool.toolregistry.plugins.{name}] ({cfg.path or 'no file'})",
                       [written[k] for k in unknown], sorted(known),
                       strict=strict or getattr(model, "unknown_options", "warn") == "error")
        table = {k: v for k, v in table.items() if k in known}
    try:
        return model.model_validate(table, context={CONFIG_FOLDER: cfg.folder})
    except ValidationError as exc:
        raise ConfigError.from_validation(
            f"[tool.toolregistry.plugins.{name}] ({cfg.path or 'no file'})", exc,
            spelling=lambda loc: loc.replace("_", "-")) from None
