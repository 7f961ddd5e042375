"""docs/migrating-from-0.19.md: what the mapping table says replaces a 0.19 name exists here.

tests/site/test_migration.py checks the first column (every 0.19 export is listed); this checks
the second with every plugin installed: each dotted name imports, each `registry.x` / `tool.x` /
`ctx.x` / ... is an attribute of that object, and each keyword a call in the table shows is a
parameter of the real signature. A renamed method or argument fails here, naming the row.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from toolregistry import ChangeEvent, Tool, ToolContext, ToolMetadata, ToolRegistry, ToolResult
from toolregistry.tool_discovery import ToolDiscoveryTool

PAGE = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-0.19.md"
IDENT = re.compile(r"[A-Za-z_]\w*")


def _targets() -> list[tuple[int, str]]:
    """(line, backticked text) of the second column of the API mapping tables, in order."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## API mapping"))
    found = []
    for number, line in enumerate(lines[start:], start + 1):
        cells = line.strip().strip("|").split("|")
        if not line.startswith("|") or len(cells) < 3 or set(line) <= {"|", "-", " "}:
            continue
        found += [(number, text) for text in re.findall(r"`([^`]+)`", cells[1])]
    return found


def _resolve_dotted(name: str) -> Any:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def _has(cls: type, attr: str) -> bool:
    if hasattr(cls, attr):
        return True
    return attrs.has(cls) and attr in attrs.fields_dict(cls)


@pytest.fixture(scope="module")
def registry() -> Any:
    with ToolRegistry() as reg:
        yield reg


def _owners(registry: ToolRegistry) -> dict[str, Any]:
    return {"registry": registry, "ToolRegistry": ToolRegistry, "tool": Tool, "Tool": Tool,
            "ctx": ToolContext, "metadata": ToolMetadata, "ToolMetadata": ToolMetadata,
            "ToolResult": ToolResult,
            "ChangeEvent": ChangeEvent}


def _attribute(owner: Any, attr: str) -> Any:
    if isinstance(owner, type):
        assert _has(owner, attr), f"{owner.__name__} has no {attr!r}"
        return getattr(owner, attr, None)
    return getattr(owner, attr)


def _check_keywords(func: Any, args: str, where: str) -> None:
    """Every keyword the table shows in a call (`name=...`, or a name after `*`) is a parameter
    of func."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    params = signature.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        named = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    else:
        named = set(params)
    keyword_only = False  # names before a `*` are placeholders for positional arguments
    for part in (p.strip() for p in args.split(",")):
        keyword_only = keyword_only or part == "*"
        name = part.split("=")[0].strip()
        if not (keyword_only or "=" in part) or not IDENT.fullmatch(name):
            continue
        if any(p.kind is p.VAR_KEYWORD for p in params.values()) and name not in named:
            continue  # passed on through **options (a plugin's loader checks those)
        assert name in named, f"{where}: {func.__qualname__}() has no parameter {name!r}"


def test_every_replacement_in_the_mapping_table_exists(registry: ToolRegistry) -> None:
    owners = _owners(registry)
    bare = [registry, ToolDiscoveryTool, Tool]  # where a bare `name(...)` of the table lives
    checked = 0
    row, named = 0, []  # a bare `name(...)` may be a method of a class named before it in its cell
    for line, text in _targets():
        where = f"{PAGE.name}:{line}: `{text}`"
        if line != row:
            row, named = line, []
        text = text.removeprefix("await ").removeprefix("@")
        if m := re.fullmatch(r"(toolregistry(?:_\w+)?(?:\.\w+)*)(?:\((.*)\))?", text):
            try:
                target = _resolve_dotted(m[1])
            except (ImportError, AttributeError) as exc:
                raise AssertionError(f"{where}: {exc}") from None
            if isinstance(target, type):
                named.append(target)
            if m[2] is not None:
                _check_keywords(target, m[2], where)
        elif m := re.fullmatch(r"(\w+)\.(\w+)(?:\((.*)\))?(?:\.(\w+))?", text):
            if m[1] not in owners:
                continue
            target = _attribute(owners[m[1]], m[2])
            if m[3] is not None and target is not None:
                _check_keywords(target, m[3], where)
        elif (m := re.fullmatch(r"(\w+)\((.*)\)", text)) and m[1] in owners:
            _check_keywords(owners[m[1]], m[2], where)  # a constructor: Tool(...), ToolRegistry(...)
        elif m := re.fullmatch(r"(\w+)\((.*)\)", text):
            holder = next((h for h in [*named, *bare] if hasattr(h, m[1])), None)
            assert holder is not None, (f"{where}: no method {m[1]!r} of the registry, discovery, "
                                        f"Tool, or a class named before it in its cell")
            _check_keywords(getattr(holder, m[1]), m[2], where)
        else:
            continue
        checked += 1
    print(f"{checked} replacements of the mapping table checked")
    assert checked >= 60, f"only {checked} replacements recognised: has the table's form changed?"
