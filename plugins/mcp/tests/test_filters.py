"""``include`` / ``exclude`` of an MCP source: both at once, bad patterns, typos."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import structlog

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

SERVER = Path(__file__).parent / "servers" / "resilience_server.py"


def mcp_tools(registry: ToolRegistry) -> list[str]:
    import toolregistry_mcp

    return [name for source in toolregistry_mcp.sources(registry) for name in source.tool_names]


def spec(marker: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "--marker", str(marker)]}


def test_include_and_exclude_at_once(registry: ToolRegistry, marker: Path) -> None:
    # Exclude wins over include, whatever the order of the lists.
    registry.register_from_mcp(spec(marker), namespace="r", include=["*e*", "count"],
                               exclude=["r-peek", "end*"])
    assert sorted(mcp_tools(registry)) == ["r-count", "r-progress", "r-silent"]


@pytest.mark.parametrize(("option", "value", "said"), [
    ("include", ["tool_[0-9"], "'[' at position 5 is never closed"),
    ("exclude", "", "it is empty"),
    ("include", ["ok", "  "], "it is empty"),
])
def test_a_bad_pattern_is_refused_before_the_server_starts(
        registry: ToolRegistry, tmp_path: Path, option: str, value: Any, said: str) -> None:
    started = tmp_path / "started"
    server = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    with pytest.raises(ConfigError, match=f"{option} pattern .* is not a valid") as info:
        registry.register_from_mcp(server, **{option: value})
    assert said in str(info.value)
    assert not started.exists()


def test_a_pattern_that_matches_nothing_is_reported(registry: ToolRegistry,
                                                    marker: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        registry.register_from_mcp(spec(marker), include=["count", "peak"],
                                   exclude=["[!a-z]*"])
    unmatched = [e for e in logs if e["event"] == "mcp.pattern_unmatched"]
    assert [(e["option"], e["pattern"]) for e in unmatched] == [
        ("include", "peak"), ("exclude", "[!a-z]*")]
    assert mcp_tools(registry) == ["count"]
