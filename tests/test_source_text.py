"""The text around the code keeps up with it: the module map of docs/architecture.md names
every kernel module and every plugin, and no docstring or comment of the sources cites an issue
(the reasons stay in the code, the history in the commits). Standard library only."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "core" / "src" / "toolregistry"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
ISSUE = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)


def _kernel_modules() -> list[str]:
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


def _first_cells() -> Iterator[str]:
    """The first cell of every table row of docs/architecture.md (header rows included)."""
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            yield line.split("|")[1]


def mapped(modules: list[str], cells: Iterator[str]) -> tuple[set[str], list[str]]:
    """The modules that a module table names (a path under the package, a name no other module
    has, or ``../name`` for a module of the package's top folder), and the names that are none
    of them."""
    by_name: dict[str, list[str]] = {}
    for module in modules:
        by_name.setdefault(module.rsplit("/", 1)[-1], []).append(module)
    found, unknown = set(), []
    for cell in cells:
        for item in re.findall(r"`([^`\s]+\.py)`", cell):
            path = item[3:] if item.startswith("../") else item
            if path in modules:
                found.add(path)
            elif len(by_name.get(path, ())) == 1:
                found.add(by_name[path][0])
            else:
                unknown.append(item)
    return found, unknown


def test_module_map_resolution() -> None:
    modules = ["__init__.py", "_plugins.py", "formats/__init__.py", "formats/_base.py",
               "_execution/_sync.py", "_execution/__init__.py"]
    cells = iter([" `_sync.py` ", " `formats/_base.py`, `_base.py` ", " `../_plugins.py` ",
                  " `__init__.py` ", " `_gone.py`, `formats/_sync.py` "])
    assert mapped(modules, cells) == (
        {"_execution/_sync.py", "formats/_base.py", "_plugins.py", "__init__.py"},
        ["_gone.py", "formats/_sync.py"])


def test_every_kernel_module_is_in_the_module_map() -> None:
    modules = _kernel_modules()
    assert len(modules) > 40
    found, unknown = mapped(modules, _first_cells())
    missing = sorted(set(modules) - found)
    assert not missing, (f"docs/architecture.md: no row of a module table names "
                         f"{', '.join(missing)} (core/src/toolregistry/)")
    assert not unknown, f"docs/architecture.md: module tables name no such module: {unknown}"


def test_every_plugin_is_in_the_distributions_table() -> None:
    plugins = sorted(p.parent.name for p in ROOT.glob("plugins/*/pyproject.toml"))
    assert plugins
    named = {m for cell in _first_cells() for m in re.findall(r"`plugins/([\w-]+)/`", cell)}
    missing = sorted(set(plugins) - named)
    assert not missing, f"docs/architecture.md: the distributions table lacks {missing}"


def notes(source: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment and docstring-like string statement of ``source``."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line


def test_notes_are_comments_and_docstrings() -> None:
    source = ('"""Module (issue 3)."""\nx = "issue 4"  # see issue 5\n'
              'def f() -> None:\n    """Issues #6 and 7."""\n')
    assert [(n, bool(ISSUE.search(t))) for n, t in sorted(notes(source))] == [
        (1, True), (2, True), (4, True)]


def test_no_issue_reference_in_source_docstrings_or_comments() -> None:
    sources = sorted([*PACKAGE.rglob("*.py"), *ROOT.glob("plugins/*/src/**/*.py")])
    assert len(sources) > 100
    found = [f"{path.relative_to(ROOT)}:{line}: {text.strip()}"
             for path in sources
             for line, text in notes(path.read_text(encoding="utf-8"))
             if ISSUE.search(text)]
    assert not found, ("issue numbers belong in commit messages (Refs:), not in the code:\n"
                       + "\n".join(found))
