"""The stamp plugin, installed as a distribution of its own: the kernel's plugin contract,
then each of its parts."""

from __future__ import annotations

from pathlib import Path

import pytest
import toolregistry_stamp

from toolregistry import ToolRegistry
from toolregistry.cli import main
from toolregistry.errors import ConfigError
from toolregistry.testing import PluginContract


class TestContract(PluginContract):
    plugin_name = "stamp"
    sources = {"constants": {"answer": 42}}
    settings_table = {"text": "checked"}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.toolregistry.plugins.stamp]\ntext = "seen"\n', encoding="utf-8")
    return path


def test_results_are_stamped_and_counted(config: Path) -> None:
    with ToolRegistry(config=config, load_plugins=["stamp"]) as registry:
        registry.register_from_constants({"answer": 42, "name": "stamp"}, namespace="k")
        first = registry.invoke("k-answer")
        second = registry.invoke("k-name")
        assert (first.text, second.text) == ("42", "stamp")
        assert first.metadata["stamp"] == second.metadata["stamp"] == "seen"
        assert toolregistry_stamp.stamps(registry) == 2
    with ToolRegistry(load_plugins=["stamp"]) as other:  # state is per registry
        assert toolregistry_stamp.stamps(other) == 0


def test_a_bad_source_is_named() -> None:
    with ToolRegistry(load_plugins=["stamp"]) as registry, \
            pytest.raises(TypeError, match="the source must be a table"):
        registry.register_from_constants(["answer"])


def test_source_options_are_checked_by_the_kernel(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[[tool.toolregistry.sources]]\nkind = "constants"\n'
                    'source = {answer = 42}\ndescription = "Always {name}."\n',
                    encoding="utf-8")
    with ToolRegistry.from_config(path, load_plugins=["stamp"]) as registry:
        assert registry["answer"].description == "Always answer."
    with ToolRegistry(load_plugins=["stamp"]) as registry, \
            pytest.raises(ConfigError, match="description: Input should be a valid string"):
        registry.register_from_constants({"answer": 42}, description=7)


def test_a_bad_table_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.toolregistry.plugins.stamp]\ntext = ""\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"plugins\.stamp.*text"):
        ToolRegistry(config=path, load_plugins=["stamp"])


def test_the_command(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "stamp-text", "--upper"]) == 0
    assert capsys.readouterr().out == "SEEN\n"
