"""The installation commands of docs/installation.md resolve the kernel's extras to the plugin
folders of this repository, with pip and with uv, in fresh virtual environments.

Each command runs as ``--dry-run`` (everything is resolved and the editable projects' metadata
built, nothing installed), which is what decides where each distribution comes from.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs._blocks import PLUGINS, REPO

# A fresh resolution of every plugin's dependencies from the index: minutes on a loaded machine.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def fresh_pip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment with pip, for the module's tests: each runs pip with
    ``--dry-run``, which installs nothing, so the environment stays fresh for the next."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    frozen = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True,
                            text=True, check=True).stdout
    yield python
    after = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True,
                           text=True, check=True).stdout
    assert after == frozen, "a dry run installed something"


def _pip_report(python: Path, tmp_path: Path, *args: str) -> dict[str, str]:
    """{distribution: where it would come from} for ``pip install --dry-run args``."""
    report = tmp_path / "report.json"
    proc = subprocess.run([str(python), "-m", "pip", "install", "--dry-run", "--quiet",
                           "--report", str(report), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    items = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["download_info"]["url"] for i in items}


def _from_folders(where: dict[str, str], names: list[str]) -> None:
    for name in names:
        folder = "core" if name == "toolregistry" else f"plugins/{name.removeprefix('toolregistry-')}"
        assert where.get(name) == (REPO / folder).as_uri(), (name, where.get(name))


def test_pip_workspace_file_installs_every_plugin_from_its_folder(fresh_pip: Path,
                                                                  tmp_path: Path) -> None:
    where = _pip_report(fresh_pip, tmp_path, "-r", "workspace.txt")
    _from_folders(where, ["toolregistry", *(f"toolregistry-{p}" for p in PLUGINS)])


def test_pip_extras_with_the_plugin_folders(fresh_pip: Path, tmp_path: Path) -> None:
    where = _pip_report(fresh_pip, tmp_path, "-e", "./core[mcp,discovery]",
                        "-e", "./plugins/mcp", "-e", "./plugins/discovery")
    _from_folders(where, ["toolregistry", "toolregistry-mcp", "toolregistry-discovery"])
    assert not {f"toolregistry-{p}" for p in PLUGINS} - {"toolregistry-mcp",
                                                          "toolregistry-discovery"} & set(where)


def test_pip_never_takes_a_plugin_from_the_index(fresh_pip: Path) -> None:
    """Without the folders, the extra's pinned plugin is not found: nothing else is taken."""
    proc = subprocess.run([str(fresh_pip), "-m", "pip", "install", "--dry-run", "-e", "./core[spool]"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "toolregistry-spool==1.0.0.dev0" in proc.stderr, proc.stderr


@pytest.mark.parametrize("extras", ["all", "mcp,discovery"])
def test_uv_resolves_the_extras_through_the_workspace(tmp_path: Path, extras: str) -> None:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(tmp_path / "venv")],
                   check=True, cwd=tmp_path)
    proc = subprocess.run([uv, "pip", "install", "--dry-run", "--python",
                           str(tmp_path / "venv" / "bin" / "python"), "-e", f"./core[{extras}]"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    chosen = PLUGINS if extras == "all" else extras.split(",")
    for name in chosen:
        uri = re.escape((REPO / "plugins" / name).as_uri())
        assert re.search(rf"\+ toolregistry-{name}(==[^ ]+ \(from {uri}\)| @ {uri})\n",
                         proc.stderr), proc.stderr
    others = set(PLUGINS) - set(chosen)
    assert not [n for n in others if f"+ toolregistry-{n}==" in proc.stderr]
