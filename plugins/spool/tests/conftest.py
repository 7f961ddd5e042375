from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

MakeRegistry = Callable[..., ToolRegistry]


def write_config(folder: Path, **options: Any) -> Path:
    """A pyproject.toml with a [tool.toolregistry.plugins.spool] table (TOML keys dashed)."""
    lines = ["[tool.toolregistry.plugins.spool]"]
    for key, value in options.items():
        if value is None:
            continue  # None: leave the option to its default
        lines.append(f"{key.replace('_', '-')} = {json.dumps(value)}")
    path = folder / "pyproject.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def make_registry(tmp_path: Path) -> Iterator[MakeRegistry]:
    """Registries spooling under tmp_path (threshold 1000 tokens unless overridden)."""
    made: list[ToolRegistry] = []
    count = 0

    def make(*, plugins: tuple[Any, ...] = (), **options: Any) -> ToolRegistry:
        nonlocal count
        count += 1
        folder = tmp_path / f"cfg{count}"
        folder.mkdir()
        options.setdefault("directory", str(tmp_path / "spool"))
        options.setdefault("threshold_tokens", 1000)
        registry = ToolRegistry(config=write_config(folder, **options), plugins=plugins)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()
