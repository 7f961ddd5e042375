"""List everything toolregistry 0.19 exports, one dotted name a line (standard library only).

Run it with the interpreter of a virtual environment that holds the PyPI ``toolregistry``
0.19.0 (never one of this project's environments: the import name is the same):

    python3 -m venv /tmp/venv019
    /tmp/venv019/bin/pip install "toolregistry[mcp,ptc]==0.19.0" langchain-core
    /tmp/venv019/bin/python tests/site/list_019_exports.py > docs/_data/toolregistry-0.19-exports.txt

``python tests/site/list_019_exports.py --venv /tmp/venv019`` builds that environment first.
What counts as an export: every name in ``toolregistry.__all__``; every public module (no
``_``-prefixed part in its dotted name) and the names it defines or lists in its ``__all__``;
and the public methods and properties of every exported class, with those it inherits from
private bases (0.19's ToolRegistry is built of private mixins). Each object is listed once, under its
shortest public path. ``tests/site/test_migration.py`` checks that each line is in the mapping
table of ``docs/migrating-from-0.19.md``.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

VERSION = "0.19.0"
REQUIREMENTS = [f"toolregistry[mcp,ptc]=={VERSION}", "langchain-core"]


def _public(name: str) -> bool:
    return not name.startswith("_")


def _ours(obj: object, package: str) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == package


def exports(package: str = "toolregistry") -> list[str]:
    root = importlib.import_module(package)
    modules = {package: root}
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if all(_public(part) for part in info.name.split(".")):
            try:
                modules[info.name] = importlib.import_module(info.name)
            except ImportError as exc:  # an optional dependency is missing: say so
                print(f"# {info.name}: not importable ({exc})", file=sys.stderr)
    seen: dict[int, str] = {}
    lines: list[str] = []

    def add(path: str, obj: object) -> None:
        key = id(obj)
        if key in seen and len(seen[key]) <= len(path):
            return
        seen[key] = path
        lines.append(path)

    # Shortest paths first: the package's own __all__, then each module in dotted order.
    for modname in sorted(modules, key=lambda m: (m.count("."), m)):
        module = modules[modname]
        if modname != package:
            lines.append(modname)
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n, v in vars(module).items()
                     if _public(n) and not inspect.ismodule(v) and _ours(v, package)
                     and getattr(v, "__module__", None) == modname]
        for name in names:
            obj = getattr(module, name, None)
            if obj is None or inspect.ismodule(obj):
                continue
            if id(obj) in seen:
                continue
            add(f"{modname}.{name}", obj)
    # Members of every listed class.
    for path in list(lines):
        modname, _, name = path.rpartition(".")
        module = modules.get(modname)
        cls = getattr(module, name, None) if module else None
        if not inspect.isclass(cls):
            continue
        for member in sorted(_members(cls, package)):
            lines.append(f"{path}.{member}")
    return sorted(set(lines), key=lambda p: (p.count("."), p))


def _members(cls: type, package: str) -> set[str]:
    found: set[str] = set()
    for klass in cls.__mro__:
        # The class itself and its private bases (0.19's ToolRegistry is built of private
        # mixins); a public base's members are listed under that base.
        private = not all(_public(p) for p in (*klass.__module__.split("."), klass.__name__))
        if not _ours(klass, package) or (klass is not cls and not private):
            continue
        for name, value in vars(klass).items():
            if not _public(name) or (issubclass(cls, enum.Enum) and not callable(value)):
                continue
            if isinstance(value, (staticmethod, classmethod, property)) or inspect.isfunction(value):
                found.add(name)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="build this virtual environment and run in it")
    args = parser.parse_args()
    if args.venv:
        python = args.venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(args.venv)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
        raise SystemExit(subprocess.run([str(python), __file__]).returncode)
    import toolregistry

    if getattr(toolregistry, "__version__", None) != VERSION:
        raise SystemExit(f"this is toolregistry {getattr(toolregistry, '__version__', '?')}, "
                         f"not {VERSION}: run me in a virtual environment of its own")
    print(f"# Everything toolregistry {VERSION} exports (tests/site/list_019_exports.py).")
    for line in exports():
        print(line)


if __name__ == "__main__":
    main()
