"""Runs tests in a pytest subprocess where a system tool cannot be found (``PATH`` holds only
this interpreter's folder), to check that they skip saying why, or fail when required."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_without_tools(tmp_path: Path, tests: list[str], required: str, *pytest_args: str,
                      **env: str) -> subprocess.CompletedProcess[str]:
    """pytest over ``tests`` with ``required`` (the variable that makes them required) unset
    unless given in ``env``, ``HOME`` in ``tmp_path``."""
    environ = {k: v for k, v in os.environ.items() if k != required}
    environ.update(PATH=str(Path(sys.executable).parent), HOME=str(tmp_path), **env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *pytest_args, *tests],
                          cwd=REPO, env=environ, capture_output=True, text=True, timeout=300)
