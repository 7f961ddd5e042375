"""``[tool.toolregistry]`` configuration: found, read once, validated, layered.

Precedence for every option: explicit argument > environment variable > pyproject > default.
"""

from __future__ import annotations

import os
import re
import tomllib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from attrs import frozen

from .errors import ConfigError

__all__ = ["ConfigWarning", "RegistryConfig", "load_config", "plugin_settings"]

ENV_CONFIG = "TOOLREGISTRY_CONFIG"
ENV_DISABLE = "TOOLREGISTRY_DISABLE_PLUGINS"
ENV_LOAD = "TOOLREGISTRY_LOAD_PLUGINS"
ENV_STRICT = "TOOLREGISTRY_STRICT_PLUGINS"
ENV_TIMEOUT = "TOOLREGISTRY_DEFAULT_TIMEOUT"
ENV_THINK = "TOOLREGISTRY_THINK_AUGMENT"

# option (normalised) -> (type description, checker)
_TOP_LEVEL = {
    "think_augment", "tool_discovery", "default_timeout", "max_workers", "strict_plugins",
    "disable_plugins", "load_plugins", "sources", "plugins", "strict_schemas",
}

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
    """The ``[tool.toolregistry]`` table of one file, keys normalised (``-`` -> ``_``)."""

    path: Path | None
    table: Mapping[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.table.get(key, default)

    @property
    def sources(self) -> list[dict[str, Any]]:
        raw = self.table.get("sources", [])
        if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
            raise ConfigError(f"{self.where}: 'sources' must be an array of tables")
        return [normalise_keys(s) for s in raw]

    def plugin_table(self, name: str) -> dict[str, Any]:
        plugins = self.table.get("plugins", {})
        if not isinstance(plugins, dict):
            raise ConfigError(f"{self.where}: 'plugins' must be a table of plugin tables")
        table = plugins.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{self.where}: [tool.toolregistry.plugins.{name}] must be a table")
        return normalise_keys(table)

    @property
    def where(self) -> str:
        return f"[tool.toolregistry] in {self.path}" if self.path else "[tool.toolregistry]"


EMPTY_CONFIG = RegistryConfig(None, {})
_cache: dict[tuple[str, float], RegistryConfig] = {}


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` (default: the working directory) upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | Path | None = None, *, strict: bool = False) -> RegistryConfig:
    """Read ``[tool.toolregistry]`` from ``path``, ``$TOOLREGISTRY_CONFIG`` or the nearest
    pyproject.toml (cached per file and modification time). A missing table is empty."""
    if path is None:
        env = os.environ.get(ENV_CONFIG)
        file = Path(env) if env else find_pyproject()
        if file is None:
            return EMPTY_CONFIG
    else:
        file = Path(path)
        if file.is_dir():
            file = file / "pyproject.toml"
    try:
        stat = file.stat()
    except OSError as exc:
        raise ConfigError(f"configuration file {file} cannot be read: {exc.strerror}") from exc
    key = (str(file.resolve()), stat.st_mtime)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    try:
        with file.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from exc
    tool = data.get("tool", {})
    table = tool.get("toolregistry", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [tool.toolregistry] must be a table")
    config = RegistryConfig(file, normalise_keys(table))
    unknown = sorted(set(config.table) - _TOP_LEVEL)
    if unknown:
        report_unknown(config.where, unknown, sorted(_TOP_LEVEL), strict=strict)
    _cache[key] = config
    return config


def report_unknown(where: str, unknown: list[str], known: list[str], *, strict: bool) -> None:
    """Warn (or raise in strict mode) about unknown configuration keys."""
    import difflib

    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1)
        parts.append(f"{key!r}" + (f" (did you mean {close[0].replace('_', '-')!r}?)" if close else ""))
    msg = f"{where}: unknown option {', '.join(parts)}"
    if strict:
        raise ConfigError(msg)
    warnings.warn(msg, ConfigWarning, stacklevel=3)


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: Any, where: str) -> Any:
    """Replace ``${VAR}`` in strings (recursively in lists and tables) by environment values."""
    if isinstance(value, str):
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ:
                raise ConfigError(f"{where}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, list):
        return [expand_env(v, where) for v in value]
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}") for k, v in value.items()}
    return value


def env_list(name: str) -> list[str] | None:
    """A comma-separated environment variable as a list (``None`` when unset)."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_bool(name: str) -> bool | None:
    """A boolean environment variable (``1/true/yes/on`` or ``0/false/no/off``)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"environment variable {name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_float(name: str) -> float | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"environment variable {name}={raw!r} is not a number") from None


def plugin_settings(
    name: str, model: type[T], config: RegistryConfig | None = None, *, strict: bool = False
) -> T:
    """Validate ``[tool.toolregistry.plugins.<name>]`` with the plugin's pydantic ``model``.

    Errors name the plugin and the option; unknown options warn (raise when ``strict``).
    """
    from pydantic import BaseModel, ValidationError

    cfg = config if config is not None else load_config()
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
        report_unknown(f"[tool.toolregistry.plugins.{name}]", unknown, sorted(known), strict=strict)
        table = {k: v for k, v in table.items() if k in known}
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']).replace('_', '-') or '(table)'}: {err['msg']}"
            f" (got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise ConfigError(
            f"[tool.toolregistry.plugins.{name}] ({cfg.path or 'no file'}): invalid option: {problems}"
        ) from None
