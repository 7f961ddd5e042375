"""Tools of connected sources selected for Ray are refused with the documented reason (their
connection lives in this process), at registration: a real MCP server over stdio and the demo
OpenAPI service. No Ray starts: the refusal comes before anything is shipped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolregistry_ray
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError, ToolRejected

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REASON = r"cannot run on Ray: .*its connection lives in this process"


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    import ray

    reg = ToolRegistry()
    yield reg
    reg.close()
    assert not ray.is_initialized()


def test_mcp_tools_selected_for_ray_are_refused(registry: ToolRegistry) -> None:
    toolregistry_ray.enable_ray(registry, namespaces=["demo"])
    with pytest.raises(ToolRejected, match=REASON):
        registry.register_from_mcp({"command": sys.executable,
                                    "args": [str(EXAMPLES / "demo_mcp_server.py")]},
                                   namespace="demo")


def test_openapi_tools_already_registered_are_refused_by_enable_ray(
        registry: ToolRegistry, api_url: str) -> None:
    registry.register_from_openapi(str(EXAMPLES / "demo_api.yaml"), base_url=api_url,
                                   namespace="pets")
    with pytest.raises(ConfigError, match="enable_ray: tool 'pets-.*" + REASON):
        toolregistry_ray.enable_ray(registry, namespaces=["pets"])
