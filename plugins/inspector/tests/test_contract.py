"""The kernel's plugin contract, with the log in memory and with the log written to a file."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolregistry_inspector
from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestInspectorContract(PluginContract):
    plugin_name = "inspector"

    def test_calls_are_logged(self, contract_registry: ToolRegistry) -> None:
        log = toolregistry_inspector.execution_log(contract_registry)
        contract_registry.invoke("add", {"a": 1, "b": 2}, call_id="c1")
        entry = log.last()
        assert entry is not None and (entry.tool, entry.call_id, entry.outcome) == (
            "add", "c1", "ok")


class TestInspectorContractWithFile(PluginContract):
    plugin_name = "inspector"

    @pytest.fixture(autouse=True)
    def _config(self, tmp_path: Path) -> None:
        self.file = tmp_path / "pyproject.toml"
        self.file.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n'
                             'arguments = "full"\n', encoding="utf-8")

    def make_registry(self) -> ToolRegistry:
        return ToolRegistry(config=self.file)

    def test_calls_reach_the_file(self, contract_registry: ToolRegistry) -> None:
        contract_registry.invoke("add", {"a": 1, "b": 2}, call_id="c1")
        log = toolregistry_inspector.execution_log(contract_registry)
        log.flush()
        assert log.db == self.file.parent / "calls.sqlite"
        rows = toolregistry_inspector.query_log(log.db, call_id="c1")
        assert [(r.tool, r.arguments) for r in rows] == [("add", {"a": 1, "b": 2})]
