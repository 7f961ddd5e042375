"""The kernel's plugin contract, with the plugin idle and with every tool on Ray."""

from __future__ import annotations

import pytest

import toolregistry_ray
from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestRayContract(PluginContract):
    plugin_name = "ray"


class TestRayContractEveryToolOnRay(PluginContract):
    plugin_name = "ray"

    @pytest.fixture(autouse=True)
    def _ray(self, ray_anchor: ToolRegistry) -> None:
        """The session's Ray (started once)."""

    def make_registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        toolregistry_ray.enable_ray(registry, tools=["*"])
        return registry

    def test_calls_ran_in_ray_workers(self, contract_registry: ToolRegistry) -> None:
        import os

        @contract_registry.register
        def pid() -> int:
            return os.getpid()

        assert contract_registry.invoke("pid", {}).value != os.getpid()
