"""The kernel's plugin manager finds exactly the hook implementations pluggy's own finds:
module plugins (with specname, hook wrappers, re-exported and lazily exported hooks), class
plugins and instance plugins, compared with a real ``pluggy.PluginManager`` on the same
objects."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from toolregistry import hookimpl, hookspecs
from toolregistry._manager import PluginManager
from toolregistry._plugins import PluginHost, PluginSettings

HELPERS = '''
from toolregistry import hookimpl


@hookimpl
def on_change(registry, event):
    """Re-exported by the plugin module below: a hook there too."""


def helper():
    return None
'''

PLUGIN = '''
"""A plugin module with every kind of name a module holds."""
import json
import os.path
from collections import OrderedDict
from functools import partial

from toolregistry import hookimpl
from tr_mgr_helpers import helper, on_change

LIMIT = 3
NAMES = ["a", "b"]
Alias = OrderedDict
bound = "text".upper  # a builtin method: a routine without a marker
shout = partial(print, "!")
statically = staticmethod(lambda: None)


class Touchy:
    """Any attribute read fails: a scan that reads attributes of values breaks on it."""

    def __getattr__(self, name):
        raise RuntimeError(f"read {name}")


touchy = Touchy()


@hookimpl(specname="register")
def keep_tools(registry, tool):
    return None


@hookimpl(hookwrapper=True)
def pre_invoke(registry, tool, call):
    yield


@hookimpl(wrapper=True, tryfirst=True)
def post_invoke(registry, tool, call, result):
    return (yield)


@hookimpl(trylast=True)
def suggest_tools(registry, name, limit):
    return None


def _private_helper():
    return None


def __getattr__(name):
    if name == "schema_transform":  # a lazily exported attribute: never a hook
        @hookimpl
        def schema_transform(registry, tool, schema, api_format):
            return None
        return schema_transform
    raise AttributeError(name)


def __dir__():
    return sorted([*globals(), "schema_transform"])
'''


class ClassPlugin:
    @staticmethod
    @hookimpl
    def loaders() -> list[Any]:
        return []

    @classmethod
    @hookimpl(specname="suggest_tools")
    def suggest(cls, registry: Any, name: str, limit: int) -> list[str] | None:
        return None

    @hookimpl
    def on_change(self, registry: Any, event: Any) -> None:
        pass

    def helper(self) -> None:
        pass


@pytest.fixture
def plugin_module(tmp_path: Path) -> Iterator[Any]:
    (tmp_path / "tr_mgr_helpers.py").write_text(textwrap.dedent(HELPERS))
    (tmp_path / "tr_mgr_plugin.py").write_text(textwrap.dedent(PLUGIN))
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("tr_mgr_plugin")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("tr_mgr_plugin", "tr_mgr_helpers"):
            sys.modules.pop(name, None)


def _found(pm: pluggy.PluginManager, plugin: Any) -> list[tuple[str, str, Any, bool, bool]]:
    """Every implementation registered for ``plugin``: hook, function name, options and
    wrapper kind, in a stable order."""
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="p")
    rows = []
    for caller in pm.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin:
                rows.append((caller.name, impl.function.__name__, impl.opts["specname"],
                             impl.hookwrapper, impl.wrapper))
    return sorted(rows)


def test_a_module_plugin_gives_what_pluggy_finds(plugin_module: Any) -> None:
    ours = _found(PluginManager(hookspecs.PROJECT_NAME), plugin_module)
    assert ours == _found(pluggy.PluginManager(hookspecs.PROJECT_NAME), plugin_module)
    assert ours == [("on_change", "on_change", None, False, False),
                    ("post_invoke", "post_invoke", None, False, True),
                    ("pre_invoke", "pre_invoke", None, True, False),
                    ("register", "keep_tools", "register", False, False),
                    ("suggest_tools", "suggest_tools", None, False, False)]


def test_class_and_instance_plugins_give_what_pluggy_finds() -> None:
    for plugin in (ClassPlugin, ClassPlugin()):
        ours = _found(PluginManager(hookspecs.PROJECT_NAME), plugin)
        assert ours == _found(pluggy.PluginManager(hookspecs.PROJECT_NAME), plugin)
        assert [row[0] for row in ours] == ["loaders", "on_change", "suggest_tools"]


def test_the_host_records_the_hooks_of_a_module_plugin(plugin_module: Any) -> None:
    host = PluginHost(PluginSettings(load=frozenset()))
    record = host.add(plugin_module, name="mgr")
    assert record.status == "loaded", record.error
    assert record.hooks == ["on_change", "post_invoke", "pre_invoke", "register",
                            "suggest_tools"]


def test_a_misspelt_hook_in_a_module_is_still_named(tmp_path: Path) -> None:
    (tmp_path / "tr_mgr_misspelt.py").write_text(textwrap.dedent('''
        from toolregistry import hookimpl

        @hookimpl
        def on_chnage(registry, event):
            pass
    '''))
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("tr_mgr_misspelt")
        record = PluginHost(PluginSettings(load=frozenset())).add(module, name="misspelt")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tr_mgr_misspelt", None)
    assert record.status == "broken"
    assert "'on_chnage' (did you mean 'on_change'?)" in (record.error or "")

