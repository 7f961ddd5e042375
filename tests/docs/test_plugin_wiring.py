"""Every plugins/<name> is wired into the repository the way docs/contributing.md lists: the
install extra, the workspace (uv and pip), its nox session, lint and types, and the pages that
list the plugins. Runs in the ``core`` session (standard library only); each failure names the
file and the exact line to add.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from ._blocks import DOCS, PLUGINS, REPO

# Other names for a plugin's extra: 0.19's `ptc` extra is programmatic tool calling (codemode).
ALIASES = {"ptc": "codemode"}


def _toml(path: str) -> dict[str, Any]:
    return tomllib.loads((REPO / path).read_text(encoding="utf-8"))


def _meta(name: str) -> tuple[str, str]:
    project = _toml(f"plugins/{name}/pyproject.toml")["project"]
    return project["name"], project["version"]


def _nav_section(title: str) -> str:
    """The lines of one top-level section of mkdocs.yml's nav."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    m = re.search(rf"^  - {re.escape(title)}:\n((?:    .*\n)*)", nav, re.M)
    assert m, f"mkdocs.yml: no nav section {title!r}"
    return m[1]


def test_plugins_are_found() -> None:
    assert {"think", "discovery", "mcp", "openapi", "langchain", "spool"} <= set(PLUGINS)


def test_every_plugin_is_an_install_extra_resolved_in_the_workspace() -> None:
    """`toolregistry[<name>]` pinned to the plugin's version and part of `all`; a uv workspace
    source and a workspace.txt line, so a clone resolves it to plugins/<name>."""
    extras = _toml("core/pyproject.toml")["project"]["optional-dependencies"]
    sources = _toml("pyproject.toml")["tool"]["uv"]["sources"]
    workspace = (REPO / "workspace.txt").read_text(encoding="utf-8").split()
    m = re.fullmatch(r"toolregistry\[(.*)\]", extras["all"][0])
    assert m and len(extras["all"]) == 1, f"core/pyproject.toml: all = {extras['all']}"
    in_all = set(m[1].split(","))
    missing = []
    for name in PLUGINS:
        dist, version = _meta(name)
        if extras.get(name) != [f"{dist}=={version}"]:
            missing.append(f'core/pyproject.toml [project.optional-dependencies]: '
                           f'{name} = ["{dist}=={version}"]')
        if name not in in_all:
            missing.append(f"core/pyproject.toml: {name!r} in all = [\"toolregistry[...]\"]")
        if sources.get(dist) != {"workspace": True}:
            missing.append(f"pyproject.toml [tool.uv.sources]: {dist} = {{ workspace = true }}")
        if f"./plugins/{name}" not in workspace:
            missing.append(f"workspace.txt: -e ./plugins/{name}")
    assert not missing, "a plugin is not wired in; add:\n" + "\n".join(missing)
    for alias, name in ALIASES.items():
        if name in PLUGINS:
            dist, version = _meta(name)
            assert extras.get(alias) == [f"{dist}=={version}"], (
                f'core/pyproject.toml: {alias} = ["{dist}=={version}"] (an alias of {name})')
    stray = set(extras) - set(PLUGINS) - set(ALIASES) - {"all"}
    assert not stray, f"core/pyproject.toml: extras for no plugin of plugins/: {sorted(stray)}"
    assert sources.get("toolregistry") == {"workspace": True}


def test_every_plugin_has_its_session_lint_and_types() -> None:
    """noxfile.py derives its sessions from plugins/*/pyproject.toml (a session per plugin, its
    ``test`` extra installed); lint and types are configured by name in the root pyproject."""
    nox_source = (REPO / "noxfile.py").read_text(encoding="utf-8")
    assert 'ROOT.glob("plugins/*/pyproject.toml")' in nox_source, (
        "noxfile.py: PLUGINS must be derived from plugins/*/pyproject.toml")
    config = _toml("pyproject.toml")["tool"]
    first_party = config["ruff"]["lint"]["isort"]["known-first-party"]
    mypy_path = config["mypy"]["mypy_path"]
    missing = []
    for name in PLUGINS:
        if f"toolregistry_{name}" not in first_party:
            missing.append(f"pyproject.toml [tool.ruff.lint.isort]: 'toolregistry_{name}' in "
                           "known-first-party")
        if f"plugins/{name}/src" not in mypy_path:
            missing.append(f"pyproject.toml [tool.mypy]: 'plugins/{name}/src' in mypy_path")
    assert not missing, "a plugin is not wired in; add:\n" + "\n".join(missing)


def test_every_plugin_is_listed_where_readers_choose_plugins() -> None:
    """The README's and installation.md's tables name every plugin; a plugin's page, once it
    exists, is in the Plugins section of the site, on the home page and in the API reference."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = (DOCS / "installation.md").read_text(encoding="utf-8")
    reference = (DOCS / "reference" / "plugins.md").read_text(encoding="utf-8")
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    plugins_nav = _nav_section("Plugins")
    missing = []
    for name in PLUGINS:
        dist, _ = _meta(name)
        if f"| `{dist}` |" not in readme:
            missing.append(f"README.md, the distributions table: | `{dist}` | what it gives |")
        if not re.search(rf"^\| `{name}` \| `{dist}` \|", install, re.M):
            missing.append(f"docs/installation.md, the extras table: | `{name}` | `{dist}` | ... |")
        if (DOCS / f"{name}.md").exists():
            if not re.search(rf"^      - [^:\n]+: {name}\.md$", plugins_nav, re.M):
                missing.append(f"mkdocs.yml, nav > Plugins: - <Title>: {name}.md")
            if f"::: toolregistry_{name}\n" not in reference:
                missing.append(f"docs/reference/plugins.md: ::: toolregistry_{name}")
            if f"]({name}.md)" not in index:
                missing.append(f"docs/index.md, the Plugins paragraph: [<Title>]({name}.md)")
    assert not missing, "a plugin is missing from a page; add:\n" + "\n".join(missing)


def test_plugin_pages_in_the_nav_are_pages_of_plugins() -> None:
    """A typo in the Plugins section (a page that is no plugin's) is caught as well."""
    pages = re.findall(r"^      - [^:\n]+: ([\w.]+)\.md$", _nav_section("Plugins"), re.M)
    others = {"hooks"}  # "Writing a plugin"
    stray = [p for p in pages if p.split(".")[0] not in {*PLUGINS, *others}]
    assert not stray, f"mkdocs.yml nav > Plugins lists pages of no plugin: {stray}"
