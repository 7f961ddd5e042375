"""``toolregistry.testing.PluginContract`` catches what it says it checks: each check is run on
an in-process plugin that breaks it."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from pydantic import BaseModel

from toolregistry import ToolRegistry, hookimpl
from toolregistry.plugin import Command, SourceKind
from toolregistry.testing import PluginContract


class Faulty:
    """A plugin with a source kind, a settings model that refuses everything, and a command
    whose arguments cannot be added."""

    __name__ = "faulty"

    @hookimpl
    def loaders(self) -> list[SourceKind]:
        return [SourceKind(name="faultykind", load=lambda registry, source, **kw: [])]

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        class Strict(BaseModel):
            level: int = 0

        return Strict

    @hookimpl
    def cli_commands(self) -> list[Command]:
        def arguments(parser: argparse.ArgumentParser) -> None:
            raise RuntimeError("no arguments today")

        return [Command(name="faulty-cmd", help="breaks", run=lambda ctx: 0,
                        arguments=arguments)]


@pytest.fixture
def contract() -> Any:
    class Contract(PluginContract):
        plugin_name = "faulty"

    return Contract()


@pytest.fixture
def faulty_registry() -> Any:
    with ToolRegistry(plugins=[Faulty()]) as reg:
        yield reg


def test_sources_that_load_nothing_fail_the_contract(contract: Any, faulty_registry: Any
                                                     ) -> None:
    contract.sources = {"faultykind": "anything"}
    faulty_registry.register_from_faultykind("anything")
    with pytest.raises(AssertionError, match="the sources registered no tool"):
        contract.test_source_kinds(faulty_registry)
    contract.sources = {"otherkind": "x"}
    with pytest.raises(AssertionError, match="kinds the plugin does not provide"):
        contract.test_source_kinds(faulty_registry)


def test_a_settings_table_the_model_refuses_fails_the_contract(contract: Any,
                                                               faulty_registry: Any) -> None:
    contract.settings_table = {"level": "high"}
    with pytest.raises(Exception, match="level"):
        contract.test_settings_table(faulty_registry)
    contract.settings_table = {"level": 3}
    contract.test_settings_table(faulty_registry)


def test_a_command_that_cannot_be_added_fails_the_contract(contract: Any,
                                                           faulty_registry: Any) -> None:
    with pytest.raises(AssertionError, match="no arguments today"):
        contract.test_cli_commands(faulty_registry)


def test_the_contract_registry_loads_only_the_plugin_under_test(contract: Any) -> None:
    contract.plugin_name = "nosuch"
    with pytest.warns(UserWarning, match="load-plugins names 'nosuch'"):
        reg = contract.make_registry()
    with reg:
        assert all(r.status == "blocked" for r in reg.plugins.records.values()
                   if r.distribution is not None)
