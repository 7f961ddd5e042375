"""How a tool's function reaches the Ray workers: by import path (its module must be
importable there) or by value (pickled with its code by Ray's cloudpickle)."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import sys
from collections.abc import Callable
from typing import Any, Literal

Payload = bytes | tuple[str, str]


@functools.cache
def _distributed_packages() -> frozenset[str]:
    """Top-level packages that belong to an installed distribution (editable ones too)."""
    return frozenset(importlib.metadata.packages_distributions())


def import_path(fn: Callable[..., Any]) -> tuple[str, str] | None:
    """``(module, qualname)`` when ``fn`` is reachable by importing, else ``None``."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return (module, qualname) if obj is fn else None


def payload(fn: Callable[..., Any], ship: Literal["auto", "import", "value"]) -> Payload:
    """What the worker loads ``fn`` from; raises ``ValueError`` / pickling errors saying why
    it cannot be shipped."""
    path = import_path(fn)
    if ship == "import":
        if path is None:
            raise ValueError(f"ship = 'import' needs a module-level function, and "
                             f"{getattr(fn, '__qualname__', fn)!r} is not importable by name "
                             "(a local function, a lambda or one of __main__): use ship = "
                             "'value' or 'auto'")
        return path
    if ship == "auto" and path is not None and path[0].split(".")[0] in _distributed_packages():
        return path
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is not None and module.__name__ != "__main__" and (
            module.__name__.split(".")[0] not in _distributed_packages()):
        # cloudpickle pickles a module-level function by reference to its module, which
        # workers may not have (a script's helper module, a test file): by value instead.
        cloudpickle().register_pickle_by_value(module)
    return dumps(fn)


def cloudpickle() -> Any:
    """Ray's own cloudpickle (the one its workers unpickle with)."""
    return importlib.import_module("ray.cloudpickle")


def dumps(obj: Any) -> bytes:
    """``obj`` pickled by Ray's cloudpickle."""
    data: bytes = cloudpickle().dumps(obj)
    return data
