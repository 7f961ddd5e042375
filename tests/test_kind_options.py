"""A source kind's own options model (``SourceKind(options=...)``): validated by the kernel
before the loader runs, with the messages of plugin tables, naming options as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from toolregistry import Tool, ToolRegistry, hookimpl
from toolregistry._config import ConfigWarning
from toolregistry.errors import ConfigError
from toolregistry.plugin import SourceKind


class GreetingOptions(BaseModel):
    greeting: str = "hello"
    repeat_count: int = Field(1, ge=1)


class Greeter:
    """Provides the ``greetings`` kind: one tool per name of the source."""

    __name__ = "greeter"

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []

    def _load(self, registry: ToolRegistry, source: list[str], **options: Any) -> list[Tool]:
        self.received.append(dict(options))
        greeting = options.pop("greeting", "hello")
        count = options.pop("repeat_count", 1)
        tools = [Tool(name=f"greet_{n}", description="Greet.",
                      callable=lambda n=n: " ".join([f"{greeting} {n}"] * count))
                 for n in source]
        return registry.register_tools(tools, **options)

    @hookimpl
    def loaders(self) -> list[SourceKind]:
        return [SourceKind(name="greetings", load=self._load, options=GreetingOptions)]


@pytest.fixture
def greeter() -> Greeter:
    return Greeter()


def test_the_loader_gets_validated_values(greeter: Greeter) -> None:
    with ToolRegistry(plugins=[greeter]) as reg:
        reg.register_from_greetings(["ann"], repeat_count="2", namespace="g")
        assert greeter.received == [{"repeat_count": 2, "namespace": "g"}]
        assert reg.invoke("g-greet_ann").text == "hello ann hello ann"


def test_a_bad_value_names_the_option(greeter: Greeter) -> None:
    with ToolRegistry(plugins=[greeter]) as reg, pytest.raises(ConfigError) as caught:
        reg.register_from_greetings(["ann"], repeat_count=0)
    assert str(caught.value) == (
        "a greetings source: invalid option: repeat_count: Input should be greater than or "
        "equal to 1 (got 0)")
    assert greeter.received == []


def test_an_unknown_option_warns_with_a_close_match_or_fails_when_strict(greeter: Greeter
                                                                         ) -> None:
    with ToolRegistry(plugins=[greeter]) as reg:
        with pytest.warns(ConfigWarning, match="a greetings source: unknown option 'greting' "
                                               r"\(did you mean 'greeting'\?\)"):
            reg.register_from_greetings(["ann"], greting="hi")
        assert greeter.received == [{}]
    with ToolRegistry(plugins=[greeter], strict_plugins=True) as strict, \
            pytest.raises(ConfigError, match="unknown option 'greting'"):
        strict.register_from_greetings(["bob"], greting="hi")


def test_from_a_file_options_are_named_as_written(greeter: Greeter, tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[[tool.toolregistry.sources]]\nkind = "greetings"\nsource = ["ann"]\n'
                      "repeat-count = -1\n")
    with pytest.raises(ConfigError) as caught:
        ToolRegistry.from_config(config, plugins=[greeter])
    assert str(caught.value) == (
        f"[tool.toolregistry] in {config}, sources[0]: a greetings source: invalid option: "
        "repeat-count: Input should be greater than or equal to 1 (got -1)")
    config.write_text('[[tool.toolregistry.sources]]\nkind = "greetings"\nsource = ["ann"]\n'
                      'repeat-cuont = 2\n')
    with pytest.warns(ConfigWarning) as warned:
        ToolRegistry.from_config(config, plugins=[greeter]).close()
    assert [str(w.message) for w in warned] == [
        f"[tool.toolregistry] in {config}, sources[0]: a greetings source: unknown option "
        "'repeat-cuont' (did you mean 'repeat-count'?)"]


def test_a_kind_without_a_model_gets_its_options_as_given() -> None:
    received: list[dict[str, Any]] = []

    class Plain:
        __name__ = "plain"

        @hookimpl
        def loaders(self) -> list[SourceKind]:
            def load(registry: ToolRegistry, source: Any, **options: Any) -> list[Tool]:
                received.append(options)
                return []

            return [SourceKind(name="plainkind", load=load)]

    with ToolRegistry(plugins=[Plain()]) as reg:
        reg.register_from_plainkind("x", anything="goes")
    assert received == [{"anything": "goes"}]
