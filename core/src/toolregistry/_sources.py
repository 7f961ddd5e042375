"""Kernel sources: classes (``register_from_class``) and the ``python`` source kind."""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ToolRegistrationError
from .tool import Provenance, Tool

if TYPE_CHECKING:
    from pathlib import Path

    from ._registry import ToolRegistry


def tools_from_class(cls: Any, *, include_private: bool = False) -> list[Tool]:
    """Tools for the public methods of a class or instance.

    Static and class methods are used as they are; instance methods need an instance: the
    class is instantiated without arguments when a class is given (a clear error otherwise).
    """
    owner = cls if isinstance(cls, type) else type(cls)
    instance: Any = None if isinstance(cls, type) else cls
    tools: list[Tool] = []
    for attr, raw in _own_members(owner):
        if attr.startswith("_") and not include_private:
            continue
        if isinstance(raw, staticmethod):
            fn: Any = raw.__func__
        elif isinstance(raw, classmethod):
            fn = getattr(owner, attr)
        elif inspect.isfunction(raw):
            if instance is None:
                try:
                    instance = owner()
                except Exception as exc:
                    raise ToolRegistrationError(
                        f"register_from_class({owner.__name__}): instance method {attr!r} needs "
                        f"an instance, and {owner.__name__}() failed ({type(exc).__name__}: "
                        f"{exc}); pass an instance instead of the class"
                    ) from exc
            fn = getattr(instance, attr)
        else:
            continue
        detail = f"{owner.__module__}:{owner.__qualname__}.{attr}"
        tools.append(Tool.from_function(fn, name=attr,
                                        provenance=Provenance("class", detail, attr)))
    if not tools:
        raise ToolRegistrationError(f"register_from_class({owner.__name__}): no public methods")
    return tools


def _own_members(owner: type) -> list[tuple[str, Any]]:
    seen: dict[str, Any] = {}
    for klass in reversed(owner.__mro__):
        if klass is object:
            continue
        for attr, raw in vars(klass).items():
            seen[attr] = raw
    return list(seen.items())


def import_target(target: str, where: str) -> Any:
    """Resolve ``pkg.mod:attr.sub`` (or a plain module path). A module that cannot be found,
    has a syntax error or raises while it is imported is a :class:`ConfigError` naming
    ``where``."""
    module_name, _, attr_path = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    except SyntaxError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: SyntaxError: {exc.msg} "
                          f"({exc.filename}, line {exc.lineno})") from exc
    except Exception as exc:
        raise ConfigError(f"{where}: importing {module_name!r} raised {type(exc).__name__}: "
                          f"{exc}") from exc
    for part in filter(None, attr_path.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{where}: {module_name!r} has no attribute path {attr_path!r}"
                              ) from None
    return obj


_path_lock = threading.RLock()


@contextmanager
def importable_from(folder: Path | None) -> Iterator[None]:
    """Modules in ``folder`` are importable while the block runs: the folder is appended to
    ``sys.path`` (after everything installed) and removed again afterwards, also when the
    import fails, so that loading a source does not change what the rest of the process
    imports. Siblings a module imports while it is imported are found; a package's
    relative imports keep working later (they follow the package's ``__path__``)."""
    entry = str(folder) if folder is not None else None
    with _path_lock:
        if entry is None or entry in sys.path:
            yield
            return
        sys.path.append(entry)
        try:
            yield
        finally:
            for i in range(len(sys.path) - 1, -1, -1):
                if sys.path[i] == entry:
                    del sys.path[i]
                    break
            sys.path_importer_cache.pop(entry, None)


def load_python(registry: ToolRegistry, target: Any, **options: Any) -> list[Tool]:
    """The kernel's ``python`` source kind: a callable, a class or a module by import path
    (``pkg.module:attr``); modules next to the registry's configuration file are importable.

    Options: ``namespace``, ``replace``.
    """
    if not isinstance(target, str):
        raise ConfigError(f"a python source needs target = \"pkg.module:attr\", got {target!r}")
    where = f"python source {target!r}"
    namespace = options.pop("namespace", None)
    replace = options.pop("replace", False)
    if not isinstance(replace, bool):  # "false" would count as true
        raise ConfigError(f"{where}: replace must be true or false, got {replace!r}")
    if options:
        raise ConfigError(f"{where}: unknown option(s) for a python source: "
                          f"{', '.join(sorted(options))} (known: target, namespace, replace)")
    path = registry.config.path
    with importable_from(path.parent if path is not None else None):
        obj = import_target(target, where)
    if isinstance(obj, type):
        if not isinstance(namespace, (str, bool, type(None))):
            raise ConfigError(f"{where}: namespace must be a string or true (the class's "
                              f"name), got {namespace!r}")
        return registry.register_from_class(obj, namespace=namespace, replace=replace)
    if namespace is not None and not isinstance(namespace, str):
        raise ConfigError(f"{where}: namespace must be a string, got {namespace!r}"
                          + (" (true names a class's tools after the class)"
                             if isinstance(namespace, bool) else ""))
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [
            n for n, v in vars(obj).items()
            if not n.startswith("_") and _defined_in(v, obj.__name__)
        ]
        members = [getattr(obj, n) for n in names]
        tools = [m if isinstance(m, Tool) else Tool.from_function(m)
                 for m in members if isinstance(m, Tool) or callable(m)]
        return registry.register_tools(tools, namespace=namespace, replace=replace)
    if isinstance(obj, Tool):
        return registry.register_tools([obj], namespace=namespace, replace=replace)
    if callable(obj):
        return registry.register_tools([Tool.from_function(obj)], namespace=namespace,
                                        replace=replace)
    raise ConfigError(f"{where}: {target!r} is not a callable, class, module or Tool")


def _defined_in(value: Any, module: str) -> bool:
    """A public function of ``module``, or a :class:`Tool` (``@tool``) made from one: what a
    module source registers when the module has no ``__all__``."""
    if isinstance(value, Tool):
        value = value.callable
    return inspect.isfunction(value) and value.__module__ == module
