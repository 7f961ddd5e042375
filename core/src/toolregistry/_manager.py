"""The plugin manager: pluggy's, finding the hook implementations of a plain module cheaply.

pluggy looks at every name ``dir(plugin)`` lists through ``inspect.getattr_static``, which
walks the plugin type's MRO for each one: most names of a plugin module are imports,
constants, classes and helper functions, and that walk is most of what registering a module
costs. A module's names are its namespace, so for a plain module the names bound to
something that cannot be a hook implementation (not a routine, or a function without the
marker) are skipped by a look in that namespace, and every other name is left to pluggy,
which decides exactly as before. Class-based and instance plugins go to pluggy unchanged.
"""

from __future__ import annotations

import inspect
from types import FunctionType, ModuleType
from typing import Any

import pluggy

__all__ = ["PluginManager"]


class PluginManager(pluggy.PluginManager):
    """A ``pluggy.PluginManager`` that skips a module's names that cannot be hooks without
    pluggy's static attribute walk (see the module's docstring)."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self._toolregistry_impl_attr = f"{project_name}_impl"

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if type(plugin) is ModuleType:
            namespace = plugin.__dict__
            if name in namespace:
                value = namespace[name]
                if isinstance(value, FunctionType):
                    if getattr(value, self._toolregistry_impl_attr, None) is None:
                        return None  # a helper function: no marker
                elif not (inspect.isroutine(value)
                          or isinstance(value, (staticmethod, classmethod))):
                    return None  # an import, a constant, a class: never a hook
        return super().parse_hookimpl_opts(plugin, name)
