"""The toolregistry command: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolregistry.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "cli_tools.py").write_text(textwrap.dedent('''
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        def fail() -> None:
            """Always fails."""
            raise RuntimeError("it broke")
    '''))
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(textwrap.dedent("""
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "cli_tools"
    """))
    return cfg


def test_plugins_lists_installed_plugins_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert isinstance(report, list)
    for record in report:
        assert set(record) == {"name", "distribution", "version", "status", "hooks", "error"}


def test_schemas(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "schemas", "--format", "anthropic"]) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in schemas] == ["add", "fail"]
    assert schemas[0]["input_schema"]["required"] == ["a", "b"]


def test_call_exit_codes(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "call", "add", "--args", '{"a": 2, "b": 3}']) == 0
    assert capsys.readouterr().out.strip() == "5"
    assert main(["--config", str(config), "call", "fail"]) == 1
    assert "RuntimeError: it broke" in capsys.readouterr().out
    assert main(["--config", str(config), "call", "add", "--args", "{nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolregistry: --args is not valid JSON") and err.count("\n") == 1


def test_usage_and_configuration_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
    bad = tmp_path / "pyproject.toml"
    bad.write_text("[tool.toolregistry\n")
    assert main(["--config", str(bad), "schemas"]) == 2
    err = capsys.readouterr().err
    assert "is not valid TOML" in err and err.count("\n") == 1
    assert main(["--config", str(tmp_path / "missing.toml"), "schemas"]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_the_console_script_runs(config: Path) -> None:
    exe = Path(sys.executable).parent / "toolregistry"
    proc = subprocess.run([str(exe), "--config", str(config), "call", "add", "--args",
                           '{"a": 1, "b": 1}'], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"


def test_demo_runs_with_whatever_is_installed() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "main_job.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "== executing a batch of 14 tool calls" in out
    assert "calc-add (anthropic)" in out and "3.5" in out
    assert "Did you mean: get_weather?" in out
    assert "errors are returned to the model, never raised" in out
