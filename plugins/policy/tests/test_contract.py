"""The kernel's plugin contract, with the policy idle and with rules that concern tools."""

from __future__ import annotations

import toolregistry_policy
from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestPolicyContract(PluginContract):
    plugin_name = "policy"


class TestPolicyContractWithRules(PluginContract):
    plugin_name = "policy"

    def make_registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        toolregistry_policy.configure(registry, rules=[
            {"name": "greet-checked", "tools": ["greet"], "decision": "allow",
             "arguments": {"name": {"one-of": ["ann", "bob"]}}},
            {"tools": ["tag_*"], "decision": "allow"},
        ], budgets={"max-calls": 1000})
        return registry
