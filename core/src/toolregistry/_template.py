"""``toolregistry new-plugin``: a new plugin distribution written from a template.

The project it writes installs as it stands (hatchling, the entry point in
``toolregistry.plugins``), and its tests pass: the kernel's :class:`PluginContract` and a test
of its one hook, which reads the plugin's settings table.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from .errors import ConfigError

__all__ = ["write_plugin"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

_PYPROJECT = '''\
[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "$dist"
version = "0.1.0"
description = "A toolregistry plugin: $name."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["toolregistry>=1.0.0.dev0,<2", "pydantic>=2.7"]

[project.optional-dependencies]
test = ["pytest>=8"]

# The entry-point name is the plugin's name everywhere: `toolregistry plugins`, its table
# [tool.toolregistry.plugins.$name], the disable-plugins / load-plugins / plugin-order lists.
[project.entry-points."toolregistry.plugins"]
$name = "$package"

[tool.hatch.build.targets.wheel]
packages = ["src/$package"]

[tool.pytest.ini_options]
testpaths = ["tests"]
filterwarnings = [
    "error",
    # a deprecation another pytest plugin of the environment raises about its own settings
    # (pytest-asyncio's unset loop scope) is shown, not turned into this suite's failure
    "default::pytest.PytestDeprecationWarning",
]
'''

_README = '''\
# $dist

A [toolregistry](https://pypi.org/project/toolregistry/) plugin. Install it next to
`toolregistry` and every registry finds it (`toolregistry plugins` lists `$name`):

    pip install -e '.[test]'
    pytest

Configure it in `pyproject.toml`:

    [tool.toolregistry.plugins.$name]
    prefix = "[beta]"
'''

_INIT = '''\
"""$dist: a toolregistry plugin (entry point ``$name``).

Its ``register`` hook puts the ``prefix`` of ``[tool.toolregistry.plugins.$name]`` in front
of the description of every tool that enters a registry. Keep this module cheap to import:
the kernel imports it when it loads plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import hookimpl

if TYPE_CHECKING:
    from pydantic import BaseModel
    from toolregistry import Tool, ToolRegistry

PLUGIN = "$name"


@hookimpl
def settings_model() -> type[BaseModel]:
    """The model of [tool.toolregistry.plugins.$name] (the kernel validates the table)."""
    from ._settings import Settings

    return Settings


@hookimpl
def register(registry: ToolRegistry, tool: Tool) -> Tool | None:
    """A tool is entering ``registry``: return a replacement, or ``None`` to keep it."""
    from ._settings import Settings

    settings = registry.plugin_settings(PLUGIN, Settings)
    if not settings.prefix:
        return None
    return tool.evolve(description=f"{settings.prefix} {tool.description}".strip())
'''

_SETTINGS = '''\
"""The options of [tool.toolregistry.plugins.$name]."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """[tool.toolregistry.plugins.$name]; dashes in the file are underscores here."""

    model_config = ConfigDict(frozen=True)

    prefix: str = Field("", description="put in front of every tool's description")
'''

_TESTS = '''\
"""The $name plugin: the kernel's plugin contract, and what its hook does."""

from __future__ import annotations

from pathlib import Path

from toolregistry import ToolRegistry
from toolregistry.testing import PluginContract


class TestContract(PluginContract):
    plugin_name = "$name"
    settings_table = {"prefix": "[beta]"}


def test_the_prefix_goes_in_front_of_descriptions(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.$name]\\nprefix = "[beta]"\\n')
    with ToolRegistry(config=config, load_plugins=["$name"]) as registry:

        @registry.register
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        assert registry["add"].description == "[beta] Add two integers."
        assert registry.invoke("add", {"a": 1, "b": 2}).text == "3"


def test_without_a_prefix_tools_are_kept(registry: ToolRegistry) -> None:
    registry.register(lambda: "hi", name="hi", description="Say hi.")
    assert registry["hi"].description == "Say hi."
'''


def write_plugin(name: str, folder: str | Path | None = None) -> Path:
    """Write the project of a new plugin called ``name`` into ``folder`` (default:
    ``toolregistry-<name>`` in the working directory), which must not exist or be empty;
    returns the folder."""
    if not _NAME.match(name):
        raise ConfigError(f"new-plugin: the plugin name must be a lowercase identifier "
                          f"(letters, digits, underscores), got {name!r}")
    dist = f"toolregistry-{name.replace('_', '-')}"
    package = f"toolregistry_{name}"
    root = Path(folder) if folder is not None else Path.cwd() / dist
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ConfigError(f"new-plugin: {root} exists and is not an empty folder; "
                          "choose another with --dir")
    values = {"name": name, "dist": dist, "package": package}
    files = {
        "pyproject.toml": _PYPROJECT,
        "README.md": _README,
        f"src/{package}/__init__.py": _INIT,
        f"src/{package}/_settings.py": _SETTINGS,
        f"src/{package}/py.typed": "",
        f"tests/test_{name}.py": _TESTS,
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values), encoding="utf-8")
    return root
