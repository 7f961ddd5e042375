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


# --- commands from plugins, through the cli_commands hook, with the real console script -------

GREETER = '''
from toolregistry.plugin import Command, hookimpl

def _arguments(parser):
    parser.add_argument("--name", default="world")

def _run(context):
    registry = context.registry()
    print(f"hello {context.args.name}: {sorted(registry.list_tools())}")
    return 3 if context.args.name == "three" else 0

@hookimpl
def cli_commands():
    return [Command(name="greet", help="say hello", run=_run, arguments=_arguments)]
'''
RAISES = '''
from toolregistry.plugin import hookimpl

@hookimpl
def cli_commands():
    raise RuntimeError("no commands today")
'''
BAD_ARGUMENTS = '''
from toolregistry.plugin import Command, hookimpl

def _arguments(parser):
    parser.add_argument("--name")
    parser.add_argument("--name")  # argparse refuses a second --name

@hookimpl
def cli_commands():
    return [Command(name="twice", help="broken options", run=lambda c: 0, arguments=_arguments)]
'''
CRASHES = '''
from toolregistry.plugin import Command, hookimpl

def _run(context):
    raise KeyError("lost\\nits way")

@hookimpl
def cli_commands():
    return [Command(name="crash", help="always fails", run=_run)]
'''
TAKES_SCHEMAS = '''
from toolregistry.plugin import Command, hookimpl

@hookimpl
def cli_commands():
    return [Command(name="schemas", help="not allowed", run=lambda c: 0)]
'''
WRONG_TYPE = '''
from toolregistry.plugin import hookimpl

@hookimpl
def cli_commands():
    return {"greet": "not a Command"}
'''
BROKEN_IMPORT = '''
raise ImportError("this plugin cannot be imported")
'''


@pytest.fixture(scope="module")
def command_plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ._dists import install_dist

    return install_dist(tmp_path_factory.mktemp("cmds"), "toolregistry-cmds", {
        "greeter": ("tr_greeter", GREETER),
        "raises": ("tr_raises", RAISES),
        "badargs": ("tr_badargs", BAD_ARGUMENTS),
        "crasher": ("tr_crasher", CRASHES),
        "taker": ("tr_taker", TAKES_SCHEMAS),
        "wrongtype": ("tr_wrongtype", WRONG_TYPE),
        "unimportable": ("tr_unimportable", BROKEN_IMPORT),
    })


def _console(*args: str, site: Path | None = None, cwd: Path | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    exe = Path(sys.executable).parent / "toolregistry"
    full = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    if site is not None:
        full["PYTHONPATH"] = str(site)
    full.update(env or {})
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                          env=full, cwd=cwd)


def test_help_lists_plugin_commands_and_survives_broken_plugins(command_plugins: Path,
                                                                tmp_path: Path) -> None:
    proc = _console("--help", site=command_plugins, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "greet" in proc.stdout and "say hello [plugin: greeter]" in proc.stdout
    assert "crash" in proc.stdout
    for left_out in ("twice", "not allowed"):
        assert left_out not in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_plugin_command_runs_with_the_configured_registry(command_plugins: Path,
                                                            config: Path) -> None:
    proc = _console("--config", str(config), "greet", "--name", "you", site=command_plugins)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello you: ['add', 'fail']"
    proc = _console("--config", str(config), "greet", "--name", "three", site=command_plugins)
    assert proc.returncode == 3


def test_broken_plugin_commands_are_reported_never_raised(command_plugins: Path,
                                                          tmp_path: Path) -> None:
    proc = _console("crash", site=command_plugins, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    *reported, last = proc.stderr.splitlines()
    assert "crash (plugin 'crasher') failed: KeyError" in last
    report = {r["name"]: r for r in json.loads(
        _console("plugins", site=command_plugins, cwd=tmp_path).stdout)}
    # every plugin left out, or whose commands are, is one line of every command's stderr
    assert sorted(reported) == sorted(
        f"toolregistry: plugin {name!r} ({r['distribution']})"
        f"{' is left out' if r['status'] == 'broken' else ''}: {r['error']} "
        "(see toolregistry plugins)" for name, r in report.items() if r["error"])
    assert report["greeter"]["error"] is None
    assert "RuntimeError: no commands today" in report["raises"]["error"]
    assert report["raises"]["status"] == "loaded"  # its other hooks still work
    assert "the command name(s) schemas are taken" in report["taker"]["error"]
    assert "must return a list of toolregistry.plugin.Command" in report["wrongtype"]["error"]
    assert report["unimportable"]["status"] == "broken"
    # The kernel's own command is untouched by the plugin that tried to take its name.
    proc = _console("schemas", site=command_plugins, cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []


def test_strict_mode_makes_a_broken_command_an_error(command_plugins: Path,
                                                     tmp_path: Path) -> None:
    proc = _console("greet", site=command_plugins, cwd=tmp_path,
                    env={"TOOLREGISTRY_STRICT_PLUGINS": "1"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "plugin" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_without_the_mcp_plugin_names_the_distribution(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("toolregistry_mcp"):
        pytest.skip("toolregistry-mcp is installed")
    proc = _console("serve", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("toolregistry: toolregistry serve needs the 'mcp' plugin: install "
                           "toolregistry-mcp\n")
    proc = _console("--help", cwd=tmp_path)
    assert proc.returncode == 0 and "serve" not in proc.stdout


def test_call_refuses_bad_timeouts(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("nan", "inf", "0", "-1", "1e10", "soon"):
        with pytest.raises(SystemExit) as info:
            main(["--config", str(config), "call", "add", "--timeout", bad])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "--timeout" in err and err.count("\n") == 1


# --- a newcomer's first commands --------------------------------------------------------------

@pytest.mark.parametrize("command", [["plugins"], ["schemas"]])
def test_output_into_a_closed_pipe_ends_quietly(config: Path, command: list[str]) -> None:
    """``toolregistry plugins | head -2``: the reader went away; no traceback, and the exit
    status of a command killed by SIGPIPE."""
    import os

    exe = Path(sys.executable).parent / "toolregistry"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    proc = subprocess.Popen([str(exe), "--config", str(config), *command], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # before the command writes: its first write finds no reader
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 141, err
    assert err == "", err


def test_a_config_warning_is_one_line_shown_once(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\nthink-augmnt = true\n")
    proc = _console("schemas", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    lines = [line for line in proc.stderr.splitlines() if "think-augmnt" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("toolregistry: warning: [tool.toolregistry] in "), proc.stderr
    assert "did you mean 'think-augment'?" in lines[0]
    assert ".py:" not in proc.stderr and "load_config(" not in proc.stderr, proc.stderr


def test_without_a_configuration_the_commands_say_so(tmp_path: Path) -> None:
    proc = _console("schemas", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
    assert proc.stderr.startswith("toolregistry: no configuration found"), proc.stderr
    assert str(tmp_path) in proc.stderr and "--config" in proc.stderr
    proc = _console("call", "foo", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert "no tool named 'foo'" in proc.stderr and "no configuration found" in proc.stderr
    assert "Call only the tools you were given" not in proc.stderr  # that is for a model


def test_call_of_an_unknown_tool_names_the_configuration_read(config: Path) -> None:
    proc = _console("--config", str(config), "call", "ad")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "no tool named 'ad'" in proc.stderr and str(config) in proc.stderr
    assert "did you mean 'add'" in proc.stderr, proc.stderr
