"""The typed objects plugins hand to the kernel: source kinds and CLI commands.

A plugin returns :class:`SourceKind` objects from its ``loaders()`` hook and :class:`Command`
objects from its ``cli_commands()`` hook; the kernel gives each the same support (config
sources, ``register_from_<kind>``, paths relative to the config file, ``toolregistry --help``)
whoever wrote the plugin. Plugins import them from :mod:`toolregistry.plugin`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

if TYPE_CHECKING:
    import argparse

    from pydantic import BaseModel

    from ._registry import ToolRegistry

__all__ = ["AsyncLoader", "Command", "CommandContext", "Exporter", "Loader", "SourceKind",
           "port_number"]

Loader = Callable[..., Any]
"""``loader(registry, source, **options) -> list[Tool]``: builds the tools of ``source`` and
registers them (usually with ``registry.register_tools(tools, namespace=..., replace=...)``)."""

AsyncLoader = Callable[..., Awaitable[Any]]
"""The async twin of a :data:`Loader`, with the same arguments."""

Exporter = Callable[..., Any]
"""``exporter(registry, names, **options)``: registry tools as this kind's own objects."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_COMMAND = re.compile(r"^[a-z][a-z0-9-]*$")


def _identifier(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"SourceKind.{attribute.name} must be a lowercase identifier "
                         f"(it names register_from_<kind>), got {value!r}")


def _to_tuple(value: Iterable[str] | str) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@frozen(kw_only=True)
class SourceKind:
    """A kind of tool source: what ``registry.register_from_<name>(...)``,
    ``registry.load(name, ...)`` and ``kind = "<name>"`` entries of
    ``[[tool.toolregistry.sources]]`` use.

    ``target`` names the config option holding what to load (``server``, ``spec``, ...;
    ``source`` is always accepted too); ``paths`` names the options that are file paths,
    resolved against the configuration file's folder when relative (URLs are left alone).
    ``aload`` is the async twin used by ``aload`` / ``aregister_from_<name>`` (without it, the
    sync loader runs in a worker thread). Every kind takes the common options ``namespace``,
    ``replace``, ``defer``, ``tags``, ``include`` and ``exclude``, checked by the kernel: the
    loader gets ``namespace`` and ``replace``, and those of the others named in ``handles``
    (it implements them itself, e.g. filtering before it connects); the kernel applies the
    rest to the tools the loader registers. ``export`` turns registry tools into this kind's own
    objects (``registry.export(name, ...)``). ``options`` is a pydantic model of the kind's
    own options: the kernel validates them before the loader runs, as it does plugin tables
    (unknown ones warn, or fail in strict mode; bad values fail, naming the option as written),
    and the loader gets the validated values of the options given.
    """

    name: str = attrs.field(validator=_identifier)
    load: Loader
    aload: AsyncLoader | None = None
    target: str = "source"
    paths: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)
    export: Exporter | None = None
    handles: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)
    options: type[BaseModel] | None = None


class CommandContext:
    """What a plugin command's ``run`` receives: its parsed arguments and the configuration.

    ``registry()`` builds the configured registry (``ToolRegistry.from_config``) once; the CLI
    closes it after the command returns.
    """

    def __init__(self, args: argparse.Namespace, config: str | None) -> None:
        self.args = args
        self.config = config
        self._registry: ToolRegistry | None = None

    def registry(self, **overrides: Any) -> ToolRegistry:
        """The registry of ``[tool.toolregistry]`` (``--config`` or the nearest file)."""
        if self._registry is None:
            from ._registry import ToolRegistry

            self._registry = ToolRegistry.from_config(self.config, **overrides)
        return self._registry

    def close(self) -> None:
        if self._registry is not None:
            self._registry.close()
            self._registry = None


def _command_name(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not _COMMAND.match(value):
        raise ValueError(f"Command.name must be a lowercase word (dashes allowed), got {value!r}")


@frozen(kw_only=True)
class Command:
    """A ``toolregistry <name>`` subcommand a plugin contributes.

    ``arguments(parser)`` adds the command's options to its ``argparse`` parser;
    ``run(context)`` does the work and returns the exit code (``None``: 0). Raise
    :class:`~toolregistry.errors.ToolRegistryError` subclasses for usage or configuration
    errors (exit 2, one line on stderr).
    """

    name: str = attrs.field(validator=_command_name)
    help: str
    run: Callable[[CommandContext], int | None]
    arguments: Callable[[argparse.ArgumentParser], None] | None = None


def port_number(text: str) -> int:
    """An argparse ``type=`` for a TCP port (0 to 65535; 0: any free port), so that a command's
    ``--port 99999`` is a usage error naming the option, not a failure of the command."""
    import argparse

    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {text!r}")
    return port
