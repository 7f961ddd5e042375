"""Plugins meet only through the kernel: no plugin's source imports another plugin
(``import toolregistry_x``, ``from toolregistry_x... import``, ``import_module("toolregistry_x")``,
``__import__``) or reads another plugin's state or settings (``registry.plugin_state("x")``,
``registry.plugin_settings("x", ...)``), with the name written out or held in a module-level
constant of the plugin's package. Read from the sources with ``ast``, not by importing them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "plugins"
PACKAGE = "toolregistry_"
READS = ("plugin_state", "plugin_settings")



def _packages(root: Path) -> Iterator[tuple[str, Path]]:
    for src in sorted(root.glob(f"plugins/*/src/{PACKAGE}*")):
        if src.is_dir():
            yield src.name.removeprefix(PACKAGE), src


def _constants(package: Path) -> dict[str, str | None]:
    """Module-level ``NAME = "text"`` of the package (``None``: names with several values)."""
    found: dict[str, str | None] = {}
    for path in package.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        value = node.value.value
                        found[target.id] = value if found.get(target.id, value) == value \
                            else None
    return found


def _text(node: ast.expr | None, constants: dict[str, str | None]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _plugin_of(module: str | None) -> str | None:
    """``toolregistry_x.y`` -> ``x`` (``None`` for anything else)."""
    if not module or not module.startswith(PACKAGE):
        return None
    return module.split(".", 1)[0].removeprefix(PACKAGE) or None


def crossings(root: Path) -> set[tuple[str, str, str, str]]:
    """``(plugin, "imports" | "reads", other plugin, where)`` for every crossing under
    ``root``'s ``plugins/*/src``."""
    names = {name for name, _ in _packages(root)}
    found: set[tuple[str, str, str, str]] = set()
    for name, package in _packages(root):
        constants = _constants(package)
        for path in sorted(package.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                targets: list[tuple[str, str | None]] = []
                if isinstance(node, ast.Import):
                    targets = [("imports", _plugin_of(a.name)) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    targets = [("imports", _plugin_of(node.module))]
                elif isinstance(node, ast.Call) and node.args:
                    func = node.func
                    called = func.attr if isinstance(func, ast.Attribute) else \
                        func.id if isinstance(func, ast.Name) else ""
                    first = _text(node.args[0], constants)
                    if called in ("import_module", "__import__"):
                        targets = [("imports", _plugin_of(first))]
                    elif called in READS:
                        targets = [("reads", first)]
                for kind, other in targets:
                    if other is not None and other != name and other in names:
                        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                        found.add((name, kind, other, where))
    return found


def test_no_plugin_imports_another_or_reads_its_state() -> None:
    if not PLUGINS.is_dir():
        pytest.skip("the plugins' sources are not beside these tests")
    found = sorted(crossings(ROOT))
    assert not found, "plugins meet only through the kernel's seams; found:\n" + \
        "\n".join(f"  {p} {kind} {other} ({where})" for p, kind, other, where in found)


def test_the_check_finds_each_kind_of_crossing(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        (tmp_path / "plugins" / name / "src" / f"{PACKAGE}{name}").mkdir(parents=True)
    alpha = tmp_path / "plugins" / "alpha" / "src" / f"{PACKAGE}alpha"
    (alpha / "_names.py").write_text('OTHER = "beta"\nPLUGIN_NAME = "alpha"\n')
    (alpha / "mod.py").write_text(
        "import importlib\n"
        "import toolregistry_beta\n"
        "from toolregistry_beta._x import y\n"
        "from toolregistry import plugin\n"
        "from . import _names\n"
        "importlib.import_module('toolregistry_beta')\n"
        "def f(registry):\n"
        "    registry.plugin_state('beta')\n"
        "    registry.plugin_state(OTHER)\n"
        "    registry.plugin_settings('beta', object)\n"
        "    registry.plugin_state(PLUGIN_NAME)\n"
        "    registry.plugin_state('alpha')\n"
        "    registry.plugin_state('gamma')\n")
    found = sorted((kind, where.rsplit(":", 1)[1]) for _, kind, _, where in
                   crossings(tmp_path))
    assert found == [("imports", "2"), ("imports", "3"), ("imports", "6"), ("reads", "10"),
                     ("reads", "8"), ("reads", "9")]
