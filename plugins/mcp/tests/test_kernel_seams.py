"""The mcp plugin on the kernel's seams: its typed source kind, its validated table, and the
``toolregistry serve`` command it contributes (the real console script in a subprocess)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

TOOLREGISTRY = Path(sys.executable).parent / "toolregistry"


def _console(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    return subprocess.run([str(TOOLREGISTRY), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)


def test_the_source_kind_is_typed(registry: ToolRegistry) -> None:
    kind = registry.plugins.source_kind("mcp")
    assert (kind.name, kind.target, kind.aload is not None) == ("mcp", "server", True)
    assert registry.plugins.provider("mcp") == "mcp"


@pytest.mark.parametrize(("table", "message"), [
    ('session-loop = "elsewhere"', "session-loop"),
    ("timeout = -1", "timeout: Input should be greater than 0"),
    ("timeout = inf", "timeout: Input should be a finite number"),
    ("connect-timeout = \"soon\"", "connect-timeout"),
])
def test_a_bad_mcp_table_is_refused_when_the_configuration_loads(
        tmp_path: Path, table: str, message: str) -> None:
    """It used to surface at the first register_from_mcp, or never."""
    config = tmp_path / "pyproject.toml"
    config.write_text(f"[tool.toolregistry.plugins.mcp]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[tool.toolregistry.plugins.mcp\] \(.*pyproject"
                                          rf"\.toml\): invalid option: .*{message}"):
        ToolRegistry(config=config)
    proc = _console("--config", str(config), "schemas", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "plugins.mcp" in proc.stderr


def test_help_lists_serve_from_the_plugin(tmp_path: Path) -> None:
    proc = _console("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "serve" in proc.stdout and "[plugin: mcp]" in proc.stdout
    proc = _console("serve", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "--transport" in proc.stdout


def test_the_serve_usage_line_of_docs_cli_md(tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
    if not page.exists():  # the plugin tested outside this repository
        pytest.skip(f"{page} not present")
    # serve's usage runs to the next command's usage line or the end of the block
    match = re.search(r"toolregistry \[--config PYPROJECT\] serve (.*?)\n(?:toolregistry |```\n)",
                      page.read_text(encoding="utf-8"), re.S)
    assert match, "docs/cli.md has no usage line for serve"
    documented = match[1]
    proc = _console("serve", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    usage = proc.stdout.split("options:")[0]
    option = r"--[a-z-]+"
    assert set(re.findall(option, documented)) == set(re.findall(option, usage))
    (choices,) = re.findall(r"--transport \{([^}]*)\}", usage)
    assert f"--transport {choices.replace(',', '|')}" in documented


def test_the_console_script_serves_over_stdio(registry: ToolRegistry, tmp_path: Path) -> None:
    (tmp_path / "served_tools.py").write_text(
        "def shout(text: str) -> str:\n    \"\"\"Upper-case the text.\"\"\"\n"
        "    return text.upper()\n", encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry]\n[[tool.toolregistry.sources]]\n'
                      'kind = "python"\ntarget = "served_tools:shout"\n', encoding="utf-8")
    registry.register_from_mcp(
        {"command": str(TOOLREGISTRY), "args": ["--config", str(config), "serve"],
         "cwd": str(tmp_path)}, namespace="script")
    assert registry.invoke("script-shout", {"text": "loud"}).content == "LOUD"
