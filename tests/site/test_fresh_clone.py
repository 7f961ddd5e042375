"""A newcomer's path on a fresh machine: the README's first command in a clean copy of the
repository, then docs/getting-started.md in the environment it made, with only what the page
tells the reader to add.

The copy holds the files git knows (tracked, or new and not ignored) as they are in this
checkout: no `.nox`, `.venv` or build output of ours leaks in. Everything is really installed
(pip, from the package index), so this takes minutes; it runs in the ``docs`` session, started
in the background when the session begins (``_fresh.py``), and these tests run last.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.docs._blocks import plugins_of, readme_requirements
from tests.site._fresh import HARNESS, FreshClone, getting_started_install

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def clone(fresh_clone: FreshClone | None) -> Path:
    assert fresh_clone is not None  # conftest.py starts it when these tests are selected
    return fresh_clone.root


def test_the_readme_first_command_runs_the_main_job_from_a_clean_clone(
        clone: Path, fresh_clone: FreshClone) -> None:
    proc = fresh_clone.readme()  # the README's first command, run in the clone from the start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # every plugin the command installs loaded, and tools came from every kind of source
    plugins = plugins_of(readme_requirements())
    loaded = set(re.findall(r"^  (\w+) +loaded ", proc.stdout, re.M))
    assert loaded == plugins, proc.stdout[:1500]
    for kind in ("[function]", "[class]", "[mcp]", "[openapi]"):
        assert kind in proc.stdout, proc.stdout[:3000]
    shown = subprocess.run([str(clone / ".venv/bin/python"), "-m", "pip", "list", "--format",
                            "freeze", "--editable"], capture_output=True, text=True, check=True)
    editable = {line.split("==")[0] for line in shown.stdout.splitlines()}
    assert {"toolregistry", *(f"toolregistry-{p}" for p in plugins)} <= editable, editable


def test_getting_started_runs_in_that_environment(clone: Path, fresh_clone: FreshClone) -> None:
    """The page's second install block (what a clone adds), then every block of the page, run
    by the same harness as in the nox sessions but with this fresh environment's Python (both
    run in the clone right after the README's command, see _fresh.py)."""
    if not (clone / ".venv/bin/python").exists():
        pytest.fail("the README's first command did not make .venv (see the test before)")
    extra = getting_started_install()
    install, blocks = fresh_clone.getting_started()
    assert install.args[-1] == f"{clone / '.venv/bin/python'} -m pip install -q {extra} {HARNESS}"
    assert install.returncode == 0, install.stderr[-3000:]
    assert blocks is not None
    assert blocks.returncode == 0, blocks.stdout[-5000:] + blocks.stderr[-2000:]
    assert "1 passed" in blocks.stdout, blocks.stdout[-2000:]
