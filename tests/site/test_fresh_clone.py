"""A newcomer's path on a fresh machine: the README's first command in a clean copy of the
repository, then docs/getting-started.md in the environment it made, with only what the page
tells the reader to add.

The copy holds the files git knows (tracked, or new and not ignored) as they are in this
checkout: no `.nox`, `.venv` or build output of ours leaks in. Everything is really installed
(pip, from the package index), so this takes minutes; it runs in the ``docs`` session.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs._blocks import REPO, parse

pytestmark = pytest.mark.timeout(1800)


def _readme_commands() -> list[str]:
    """The README's two commands: the lines of its first sh block."""
    block = next(b for b in parse(REPO / "README.md") if b.lang == "sh")
    lines = [ln.strip() for ln in block.code.splitlines() if ln.strip()]
    assert len(lines) == 2, lines
    return lines


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clone") / "toolregistry"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a file deleted in this checkout is not in a clone of it either
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def _bash(command: str, cwd: Path, timeout: int = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def test_the_readme_first_command_runs_the_main_job_from_a_clean_clone(clone: Path) -> None:
    proc = _bash(_readme_commands()[0], clone)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # every plugin loaded, and tools came from every kind of source
    plugins = {p.name for p in (clone / "plugins").iterdir() if (p / "pyproject.toml").exists()}
    loaded = set(re.findall(r"^  (\w+) +loaded ", proc.stdout, re.M))
    assert loaded == plugins, proc.stdout[:1500]
    for kind in ("[function]", "[class]", "[mcp]", "[openapi]"):
        assert kind in proc.stdout, proc.stdout[:3000]
    shown = subprocess.run([str(clone / ".venv/bin/python"), "-m", "pip", "list", "--format",
                            "freeze", "--editable"], capture_output=True, text=True, check=True)
    editable = {line.split("==")[0] for line in shown.stdout.splitlines()}
    assert {"toolregistry", *(f"toolregistry-{p}" for p in plugins)} <= editable, editable


def test_getting_started_runs_in_that_environment(clone: Path) -> None:
    """The page's second install block (what a clone adds), then every block of the page, run
    by the same harness as in the nox sessions but with this fresh environment's Python."""
    if not (clone / ".venv/bin/python").exists():
        pytest.fail("the README's first command did not make .venv (see the test before)")
    page = parse(REPO / "docs" / "getting-started.md")
    adds = [b for b in page if b.lang == "sh" and "pip install" in b.code
            and "workspace.txt" in b.code]
    assert adds, "getting-started.md no longer says how to install from a clone"
    extra = re.findall(r"^pip install (.+)$", adds[0].code, re.M)
    assert extra, adds[0].code
    python = clone / ".venv/bin/python"
    harness = "pytest>=8 pytest-timeout>=2.3"  # the harness itself, not something a reader needs
    proc = _bash(f"{python} -m pip install -q {extra[-1]} {harness}", clone)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/docs/test_blocks.py", "-k", "getting"],
                          cwd=clone, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout, proc.stdout[-2000:]
