"""Kernel sources: classes (``register_from_class``) and ``kind = "python"`` config entries."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ToolRegistrationError
from .tool import Provenance, Tool

if TYPE_CHECKING:
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
    """Resolve ``pkg.mod:attr.sub`` (or a plain module path)."""
    module_name, _, attr_path = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    for part in filter(None, attr_path.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{where}: {module_name!r} has no attribute path {attr_path!r}"
                              ) from None
    return obj


def load_python_source(registry: ToolRegistry, options: dict[str, Any], where: str,
                       base: Path | None = None) -> list[Tool]:
    """A ``kind = "python"`` source: a callable, a class or a module by import path
    (modules next to the configuration file are importable)."""
    options = dict(options)
    target = options.pop("target", None)
    if not isinstance(target, str):
        raise ConfigError(f"{where}: a python source needs target = \"pkg.module:attr\"")
    namespace = options.pop("namespace", None)
    replace = bool(options.pop("replace", False))
    if options:
        raise ConfigError(f"{where}: unknown option(s) for a python source: "
                          f"{', '.join(sorted(options))} (known: target, namespace, replace)")
    if base is not None and str(base) not in sys.path:
        sys.path.append(str(base))
    obj = import_target(target, where)
    if isinstance(obj, type):
        return registry.register_from_class(obj, namespace=namespace, replace=replace)
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [
            n for n, v in vars(obj).items()
            if inspect.isfunction(v) and v.__module__ == obj.__name__ and not n.startswith("_")
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
