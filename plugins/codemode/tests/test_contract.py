"""The kernel's plugin contract, with the plugin idle and with run_code registered."""

from __future__ import annotations

import toolregistry_codemode
from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestCodeModeContract(PluginContract):
    plugin_name = "codemode"


class TestCodeModeContractEnabled(PluginContract):
    plugin_name = "codemode"

    def make_registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        toolregistry_codemode.enable_code_mode(registry)
        return registry

    def test_run_code_lists_the_sample_tools(self, contract_registry: ToolRegistry) -> None:
        description = contract_registry["run_code"].description
        assert "async def add(a: int, b: int) -> int:" in description
        assert "async def echo_schema(message: str) -> Any:" in description
        result = contract_registry.invoke("run_code", {"code": "await add(2, 3)"})
        assert result.ok and result.text == "5"
