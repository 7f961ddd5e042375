"""The kernel's plugin contract, with the plugin idle and with the reader tool registered."""

from __future__ import annotations

import toolregistry_spool
from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestSpoolContract(PluginContract):
    plugin_name = "spool"


class TestSpoolContractAllTools(PluginContract):
    plugin_name = "spool"

    def make_registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        toolregistry_spool.configure(registry, all_tools=True)
        return registry

    def test_reader_is_registered(self, contract_registry: ToolRegistry) -> None:
        assert toolregistry_spool.reader_name(contract_registry) == "read_tool_output"
