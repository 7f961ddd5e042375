"""The openapi plugin honours the kernel's hook contract (toolregistry.testing)."""

from __future__ import annotations

from toolregistry.testing import PluginContract


class TestContract(PluginContract):
    plugin_name = "openapi"
