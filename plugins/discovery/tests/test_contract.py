"""The discovery plugin honours the kernel's hook contract (toolregistry.testing), enabled or not."""

from __future__ import annotations

from toolregistry.testing import PluginContract


class TestContract(PluginContract):
    plugin_name = "discovery"


class TestContractEnabled(PluginContract):
    plugin_name = "discovery"
    registry_options = {"tool_discovery": True}
