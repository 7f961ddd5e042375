"""The README's first command installs what its main job uses, and nothing more: the demo runs
in seconds, so a newcomer should not wait minutes for plugins it never touches (Ray, LangChain,
OpenTelemetry...). ``workspace.txt`` keeps every plugin, for the test command and ``[all]``.
"""

from __future__ import annotations

import tomllib

from toolregistry._settings import Settings

from ._blocks import PLUGINS, REPO, plugins_of, readme_commands, readme_requirements


def demo_plugins() -> set[str]:
    """The plugins examples/pyproject.toml (the main job's configuration) uses: its source
    kinds, its settings that need a plugin and its plugin tables."""
    with (REPO / "examples/pyproject.toml").open("rb") as fh:
        cfg = tomllib.load(fh)["tool"]["toolregistry"]
    used = {source["kind"] for source in cfg.get("sources", [])} - {"python"}
    used |= set(cfg.get("plugins", {}))
    options = Settings.options()
    for key, value in cfg.items():
        info = options.get(key.replace("-", "_"))
        if value and info is not None and info.needs_plugin:
            used.add(info.needs_plugin)
    assert used <= set(PLUGINS), used - set(PLUGINS)
    return used


def test_the_first_command_installs_exactly_what_the_main_job_uses() -> None:
    requirements = readme_requirements()
    installs = plugins_of(requirements)
    needed = demo_plugins()
    assert installs == needed, (
        f"README.md's first command ({requirements.name}) installs the plugins {sorted(installs)}; the main "
        f"job (examples/pyproject.toml) uses {sorted(needed)}")
    assert "examples/main_job.py" in readme_commands()[0]


def test_workspace_txt_still_installs_every_plugin() -> None:
    assert plugins_of(REPO / "workspace.txt") == set(PLUGINS)
