"""A refused enable leaves the setting as it was."""

from __future__ import annotations

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ToolNameCollisionError


def test_enabling_over_a_users_discover_tools_fails_and_rolls_back() -> None:
    reg = ToolRegistry()

    @reg.register
    def discover_tools(query: str) -> str:
        """The user's own tool of that name."""
        return query

    with pytest.raises(ToolNameCollisionError):
        reg.enable_tool_discovery()
    assert reg.get_setting("tool_discovery") is False
    assert reg["discover_tools"].provenance.kind == "function"
    reg.close()
