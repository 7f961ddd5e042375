"""The ``langchain`` plugin's hook implementations (entry point ``toolregistry.plugins``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolregistry.plugin import SourceKind, hookimpl


def _load(registry: Any, source: Any, **options: Any) -> Any:
    from ._import import load

    return load(registry, source, **options)


async def _aload(registry: Any, source: Any, **options: Any) -> Any:
    from ._import import aload

    return await aload(registry, source, **options)


def _export(registry: Any, names: Iterable[str] | None = None, **options: Any) -> Any:
    # langchain-core is imported here, on the first export, never at plugin load.
    from ._export import to_langchain

    return to_langchain(registry, names, **options)


@hookimpl
def loaders() -> list[SourceKind]:
    """``register_from_langchain`` (sync and async), ``kind = "langchain"`` config sources
    (``target = "pkg.module:attr"``) and ``registry.to_langchain()`` (the export)."""
    return [SourceKind(name="langchain", load=_load, aload=_aload, target="target",
                       export=_export)]
