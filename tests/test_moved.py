"""Unported toolregistry 0.19 code fails with a pointer to the migration guide and the
replacement, not a bare ImportError / AttributeError (docs/migrating-from-0.19.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolregistry
from toolregistry import ToolRegistry

EXPORTS = Path(__file__).resolve().parents[1] / "docs" / "_data" / "toolregistry-0.19-exports.txt"
GUIDE = "migrating-from-0.19.md"


def _019(prefix: str) -> list[str]:
    """The names 0.19 exports directly under ``prefix`` (one more dotted part)."""
    lines = [line.strip() for line in EXPORTS.read_text(encoding="utf-8").splitlines()]
    return [line[len(prefix):] for line in lines
            if line.startswith(prefix) and "." not in line[len(prefix):]]


def test_importing_a_019_name_says_what_replaces_it() -> None:
    with pytest.raises(ImportError) as info:
        from toolregistry import ErrorResult  # noqa: F401
    assert "toolregistry.ErrorResult was toolregistry 0.19's" in str(info.value)
    assert "toolregistry.ToolResult" in str(info.value) and GUIDE in str(info.value)


def test_every_019_top_level_name_missing_here_points_to_the_guide() -> None:
    names = [n for n in _019("toolregistry.") if n[:1].isupper()]  # classes and constants
    assert len(names) > 30, names
    for name in names:
        if name in toolregistry.__all__:
            continue
        with pytest.raises(ImportError) as info:
            getattr(toolregistry, name)
        assert GUIDE in str(info.value), name


def test_an_unknown_name_is_still_a_plain_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'frobnicate'"):
        toolregistry.frobnicate  # noqa: B018
    assert not hasattr(toolregistry, "frobnicate")


def test_every_019_registry_method_exists_or_points_to_the_guide() -> None:
    methods = _019("toolregistry.ToolRegistry.")
    assert len(methods) > 60, methods
    gone = 0
    with ToolRegistry() as registry:
        for name in methods:
            try:
                getattr(registry, name)
            except AttributeError as exc:
                gone += 1
                assert GUIDE in str(exc) and "0.19" in str(exc), (name, str(exc))
                assert not hasattr(registry, name)
    assert gone > 30


def test_a_gone_method_names_its_replacement() -> None:
    with ToolRegistry() as registry, pytest.raises(AttributeError) as info:
        registry.get_callable("add")
    assert "'get_callable'" in str(info.value) and "get_tool(name).callable" in str(info.value)
