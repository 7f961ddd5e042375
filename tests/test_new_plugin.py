"""``toolregistry new-plugin``: the project it writes installs as a distribution of its own and
its tests pass against this kernel; bad names and occupied folders are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolregistry.cli import main


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    env["PYTHONPATH"] = str(site)
    return env


def test_the_generated_plugin_installs_and_its_tests_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "proj"
    assert main(["new-plugin", "stamp_it", "--dir", str(project)]) == 0
    assert capsys.readouterr().out.strip() == str(project)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(project)],
                   check=True, timeout=300)
    report = subprocess.run([sys.executable, "-m", "toolregistry.cli", "plugins"],
                            capture_output=True, text=True, env=_env(site), timeout=120,
                            check=True)
    (record,) = [r for r in json.loads(report.stdout) if r["name"] == "stamp_it"]
    assert (record["distribution"], record["status"], record["hooks"]) == (
        "toolregistry-stamp-it", "loaded", ["register", "settings_model"])
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "no:xdist", "-p", "no:randomly"],
                           capture_output=True, text=True, env=_env(site), cwd=project,
                           timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "skipped" not in tests.stdout, tests.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["new-plugin", "Bad-Name"], "the plugin name must be a lowercase identifier"),
    (["new-plugin", "ok", "--dir", "{occupied}"], "exists and is not an empty folder"),
])
def test_bad_names_and_occupied_folders_are_refused(
        args: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "keep.txt").write_text("mine")
    assert main([a.format(occupied=tmp_path / "occupied") for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert (tmp_path / "occupied" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["occupied"]
