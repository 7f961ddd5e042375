"""docs/configuration.md, docs/cli.md and the ``cli_commands`` example of docs/hooks.md say
what is true: their examples run (with what is installed) and the messages they quote are the
ones the code gives. The plugin sessions check the parts that need a plugin (mcp: ``serve``'s
usage; spool: the plugin table's message and accessor; integration: every source of the
example loaded)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.cli import _parser
from toolregistry.errors import ConfigError

from ._docs import blocks, config_example, quoted, usage_lines, usage_options


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_the_sources_example_runs_with_what_is_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config_example(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PETSTORE_URL", "http://127.0.0.1:9/api")
    (run,) = [b for b in blocks("configuration.md", "python") if "from_config" in b]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the spool table of an absent plugin is left alone
        exec(compile(run, "configuration.md:from_config", "exec"), {"__name__": "docs"})
    names, argument, file = capsys.readouterr().out.splitlines()
    assert "'calc-add'" in names
    assert argument == "argument"
    assert file.replace(str(tmp_path), "/path/to") == quoted(
        "configuration.md", "[tool.toolregistry] in /path/to/")


def test_the_sources_example_without_its_variable_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config_example(tmp_path)
    monkeypatch.delenv("PETSTORE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"sources\[2\].base_url: environment variable "
                                          r"PETSTORE_URL is not set"):
        ToolRegistry.from_config(cfg, skip_unavailable=True)


def test_the_quoted_timeout_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "pyproject.toml"
    empty.write_text("")
    monkeypatch.setenv("TOOLREGISTRY_DEFAULT_TIMEOUT", "inf")
    with pytest.raises(ConfigError) as info:
        ToolRegistry(config=empty)
    assert str(info.value) == quoted(
        "configuration.md", "environment variable TOOLREGISTRY_DEFAULT_TIMEOUT:")


@pytest.mark.parametrize("command", ["plugins", "schemas", "call", "demo", "new-plugin"])
def test_the_usage_lines_of_the_kernel_commands(command: str) -> None:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    actual = {opt: action.required for action in parser._actions
              for opt in action.option_strings if opt.startswith("--") and opt != "--help"}
    assert usage_options(usage_lines()[command]) == actual
    positional = [a.dest.upper() for a in parser._actions if not a.option_strings]
    assert usage_lines()[command].split()[:len(positional)] == positional


def test_every_command_of_the_usage_block_is_described() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    for command in usage_lines():
        assert f"- `{command}`" in text, command


def _console(*args: str, site: Path | None = None, cwd: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "toolregistry"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def test_the_quoted_missing_plugin_message(tmp_path: Path) -> None:
    if _installed("toolregistry_mcp"):
        pytest.skip("toolregistry-mcp is installed")
    proc = _console("serve", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == quoted("cli.md", "toolregistry: toolregistry serve needs") + "\n"


def test_the_cli_commands_example_of_hooks_md(tmp_path_factory: pytest.TempPathFactory) -> None:
    from ._dists import install_dist

    code = next(b for b in blocks("hooks.md", "python") if "def cli_commands():" in b)
    site = install_dist(tmp_path_factory.mktemp("counter"), "toolregistry-counter",
                        {"counter": ("tr_counter", code)})
    project = tmp_path_factory.mktemp("project")
    (project / "my_tools.py").write_text(next(b for b in blocks("configuration.md", "python") if "class Calculator" in b))
    cfg = project / "pyproject.toml"
    cfg.write_text(textwrap.dedent("""
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "my_tools:Calculator"
        namespace = "calc"
    """))
    described = quoted("hooks.md", "count the configured tools")
    help_text = _console("--help", site=site, cwd=project)
    assert help_text.returncode == 0, help_text.stderr
    assert described in " ".join(help_text.stdout.split())
    counted = _console("--config", str(cfg), "count", "--prefix", "calc-", site=site)
    assert (counted.returncode, counted.stdout) == (0, "1\n"), counted.stderr
    none = _console("--config", str(cfg), "count", "--prefix", "nothing-", site=site)
    assert (none.returncode, none.stdout) == (1, "0\n"), none.stderr
