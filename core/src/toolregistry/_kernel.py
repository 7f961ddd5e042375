"""The kernel as a plugin of its own host: the ``python`` source kind and the built-in provider
formats, offered through the hooks a plugin offers its own with (``loaders``,
``provider_formats``).

The host registers this module before any entry point, under the name ``toolregistry``, so
the kernel's kinds and formats come first and keep their names when a plugin claims one too;
it is no plugin record (``toolregistry plugins`` lists plugins only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._extensions import SourceKind
from .hookspecs import hookimpl

if TYPE_CHECKING:
    from ._registry import ToolRegistry
    from .formats import ProviderFormat
    from .tool import Tool

NAME = "toolregistry"
"""The provider named for what the kernel itself offers."""


@hookimpl
def loaders() -> list[SourceKind]:
    """The ``python`` source kind: modules, classes and callables by import path."""
    return [SourceKind(name="python", load=_load_python, target="target")]


def _load_python(registry: ToolRegistry, target: Any, **options: Any) -> list[Tool]:
    from ._sources import load_python  # with the first python source, not with every host

    return load_python(registry, target, **options)


@hookimpl
def provider_formats() -> list[ProviderFormat]:
    """The built-in formats, in the order they are listed and asked to recognise a call."""
    from .formats import BUILTIN_FORMATS

    return list(BUILTIN_FORMATS)
