"""The kernel's settings model: one resolver, every option documented, bad values refused with
the option and its source named."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry._config import ConfigWarning, load_config
from toolregistry._settings import Settings, check_timeout
from toolregistry.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "core" / "src" / "toolregistry"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("TOOLREGISTRY_"):
            monkeypatch.delenv(name)


def write(folder: Path, body: str, name: str = "pyproject.toml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _documented() -> dict[str, tuple[str | None, str, str]]:
    """option -> (environment variable, default, meaning) from the table in
    docs/configuration.md (links in the meaning reduced to their text)."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z-]+)` \| (`[A-Z_]+`|–) \| `([^`]*)` \| (.*) \|$", text, re.M)
    return {name: (None if env == "–" else env.strip("`"), default,
                   re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", meaning))
            for name, env, default, meaning in rows}


def test_settings_are_documented() -> None:
    """Every option of the model is a row of the table, with its variable, its default and
    its meaning (the model's text, which the page may follow with more)."""
    documented = _documented()
    options = {name.replace("_", "-"): info for name, info in Settings.options().items()}
    assert sorted(documented) == sorted(options), "docs/configuration.md and Settings differ"
    for name, info in options.items():
        env, default, meaning = documented[name]
        assert (env, default) == (info.env, info.default), name
        assert meaning.startswith(info.doc), (name, meaning, info.doc)


def test_every_environment_variable_goes_through_the_model() -> None:
    """Each TOOLREGISTRY_* name in the kernel is an option's variable (or the config file's),
    and only the settings and config modules read the environment."""
    known = {info.env for info in Settings.options().values()} | {"TOOLREGISTRY_CONFIG"}
    for path in SRC.rglob("*.py"):
        if path.name == "testing.py":  # the test harness's switches (REQUIRE_BROWSER) are no
            continue                   # registry option; a registry never reads them
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"TOOLREGISTRY_[A-Z_]+", text):
            assert name in known, f"{path.name} names {name}, which is no option's variable"
        if path.name not in ("_settings.py", "_config.py"):
            assert "os.environ" not in text and "getenv" not in text, path.name


def test_every_scalar_option_is_a_constructor_argument() -> None:
    import inspect

    params = inspect.signature(ToolRegistry).parameters
    for name, info in Settings.options().items():
        if not info.file_only:
            assert name in params, name


def test_strict_schemas_is_gone(tmp_path: Path) -> None:
    """It was accepted and never read."""
    cfg = write(tmp_path, "[tool.toolregistry]\nstrict-schemas = true\n")
    with pytest.warns(ConfigWarning, match="unknown option 'strict-schemas'"):
        load_config(cfg)


# --- precedence, option by option -------------------------------------------------------------

CASES: dict[str, tuple[str, str, Any, Any, Any]] = {
    # option: (file value, env text, argument, expected from file, from env)
    "default_timeout": ("7", "9", 3.0, 7.0, 9.0),
    "max_workers": ("5", "6", 2, 5, 6),
    "think_augment": ("true", "0", True, True, False),
    "strict_plugins": ("true", "0", False, True, False),
    "disable_plugins": ('["a"]', "b, c", ["d"], frozenset({"a"}), frozenset({"b", "c"})),
    "load_plugins": ('["think", "x"]', "y", ["z"], frozenset({"think", "x"}), frozenset({"y"})),
    "trace_hooks": ("true", "no", False, True, False),
    "plugin_order": ('["b", "a"]', "c, a", ["x", "y"], ("b", "a"), ("c", "a")),
    "inline_calls": ("false", "on", True, False, True),
    "handoff_pinning": ("false", "auto", True, False, "auto"),
    "process_namespaces": ('["heavy"]', "a, b", ["x"], frozenset({"heavy"}),
                           frozenset({"a", "b"})),
    "store": ('"sqlite:///state.db"', "postgresql://u@db/x", "sqlite:////tmp/a.db",
              "sqlite:///state.db", "postgresql://u@db/x"),
    "deferral": ('"registry"', "native", "auto", "registry", "native"),
    "undiscovered_calls": ('"refuse"', "reveal", "run", "refuse", "reveal"),
    "tool_discovery": ("{field-weights = {name = 2}}", "off", True,
                       {"field_weights": {"name": 2.0}}, False),
}


def test_cases_cover_every_option() -> None:
    scalar = [n for n, o in Settings.options().items() if not o.file_only]
    assert sorted(CASES) == sorted(scalar)


@pytest.mark.parametrize("name", sorted(CASES))
def test_precedence_argument_env_file_default(name: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    file_value, env_text, argument, from_file, from_env = CASES[name]
    info = Settings.options()[name]
    cfg = load_config(write(tmp_path, f"[tool.toolregistry]\n{name.replace('_', '-')} = "
                                      f"{file_value}\n"))
    default = Settings.resolve()
    assert default.origin(name) == "default"
    assert getattr(Settings.resolve(cfg), name) == from_file
    assert Settings.resolve(cfg).origin(name) == f"[tool.toolregistry] in {cfg.path}"
    assert info.env is not None
    monkeypatch.setenv(info.env, env_text)
    assert getattr(Settings.resolve(cfg), name) == from_env
    assert Settings.resolve(cfg).origin(name) == f"environment variable {info.env}"
    given = Settings.resolve(cfg, **{name: argument})
    expected = argument
    if isinstance(argument, list):
        expected = tuple(argument) if isinstance(from_file, tuple) else frozenset(argument)
    assert getattr(given, name) == expected and given.origin(name) == "argument"


def test_the_registry_reads_its_settings_from_the_model(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\ndefault-timeout = 7\nmax-workers = 3\n")
    monkeypatch.setenv("TOOLREGISTRY_MAX_WORKERS", "4")
    with ToolRegistry(config=cfg) as reg:
        assert (reg.default_timeout, reg.max_workers) == (7.0, 4)
        assert reg.settings.origin("max_workers") == "environment variable TOOLREGISTRY_MAX_WORKERS"

        @reg.register
        def echo(n: int) -> int:
            """Echo."""
            return n

        results = reg.execute_tool_calls([{"name": "echo", "arguments": {"n": i}}
                                          for i in range(8)])
        assert [r.text for r in results] == [str(i) for i in range(8)]
    with ToolRegistry(config=cfg, default_timeout="none") as reg:
        assert reg.default_timeout is None


# --- invalid values, from every source --------------------------------------------------------

BAD_TIMEOUTS_FILE = ["nan", "inf", "-inf", "1e10", "-1", "0", '"soon"', "true"]
BAD_TIMEOUTS_ENV = ["nan", "inf", "1e10", "-1", "0", "soon"]
BAD_TIMEOUTS_ARG: list[Any] = [float("nan"), float("inf"), 1e10, -1, 0, "soon", True]


@pytest.mark.parametrize("value", BAD_TIMEOUTS_FILE)
def test_bad_timeouts_in_the_file(value: str, tmp_path: Path) -> None:
    cfg = write(tmp_path, f"[tool.toolregistry]\ndefault-timeout = {value}\n")
    with pytest.raises(ConfigError) as info:
        ToolRegistry(config=cfg)
    message = str(info.value)
    assert "default-timeout must be a finite number of seconds > 0" in message
    assert str(cfg) in message


@pytest.mark.parametrize("value", BAD_TIMEOUTS_ENV)
def test_bad_timeouts_in_the_environment(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREGISTRY_DEFAULT_TIMEOUT", value)
    with pytest.raises(ConfigError, match=r"^environment variable TOOLREGISTRY_DEFAULT_TIMEOUT: "
                                          r"default-timeout must be a finite number"):
        ToolRegistry()


@pytest.mark.parametrize("value", BAD_TIMEOUTS_ARG)
def test_bad_timeouts_as_arguments(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"^argument default_timeout: default-timeout must be"):
        ToolRegistry(default_timeout=value)


def test_the_largest_timeout_works_off_the_main_thread() -> None:
    """A year is accepted, and a call with it runs from a worker thread (1e10 used to raise
    OverflowError there)."""
    out: list[Any] = []
    with ToolRegistry(default_timeout=31_536_000) as reg:
        reg.register(lambda: "ok", name="ok")
        thread = threading.Thread(target=lambda: out.append(reg.invoke("ok").text))
        thread.start()
        thread.join(30)
    assert out == ["ok"]


def test_check_timeout_names_the_option() -> None:
    assert check_timeout(None, "timeout") is None
    assert check_timeout(2, "timeout") == 2.0
    for bad in (float("nan"), float("inf"), 1e10, 0, -2):
        with pytest.raises(ConfigError, match=r"^ToolMetadata\.timeout must be a finite number"):
            check_timeout(bad, "ToolMetadata.timeout")


@pytest.mark.parametrize(("where", "value"), [("file", "-3"), ("file", "0"), ("file", "2.5"),
                                              ("env", "-3"), ("env", "0"), ("env", "many"),
                                              ("arg", -3), ("arg", 0), ("arg", True)])
def test_max_workers_must_be_at_least_one(where: str, value: Any, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16.7: max-workers = -3 gave a pool with no workers (every pooled call timed out)."""
    kwargs: dict[str, Any] = {}
    if where == "file":
        kwargs["config"] = write(tmp_path, f"[tool.toolregistry]\nmax-workers = {value}\n")
        source = r"\[tool.toolregistry\] in .*pyproject.toml"
    elif where == "env":
        monkeypatch.setenv("TOOLREGISTRY_MAX_WORKERS", value)
        source = "environment variable TOOLREGISTRY_MAX_WORKERS"
    else:
        kwargs["max_workers"] = value
        source = "argument max_workers"
    with pytest.raises(ConfigError, match=f"^{source}: max-workers must be an integer >= 1"):
        ToolRegistry(**kwargs)


@pytest.mark.parametrize(("body", "message"), [
    ("think-augment = 1", "think-augment must be true or false"),
    ('handoff-pinning = "sometimes"', 'handoff-pinning must be "auto", true or false'),
    ('disable-plugins = "think"', "disable-plugins must be a list of plugin names"),
    ("load-plugins = [1]", "load-plugins must be a list of plugin names"),
    ("tool-discovery = {field-weights = {name = -1}}", "field-weights must be a table of finite"),
    ("tool-discovery = {weights = 1}", "unknown key"),
    ("plugins = [1, 2]", "plugins must be a table of plugin tables"),
    ("plugins = {spool = 3}", r"plugins entry 'spool' must be a table "
                              r"\(\[tool.toolregistry.plugins.spool\]\), got \{'spool': 3\}$"),
    ("sources = {kind = 'python'}", "sources must be an array of tables"),
])
def test_wrong_types_are_refused_when_the_file_is_loaded(body: str, message: str,
                                                         tmp_path: Path) -> None:
    cfg = write(tmp_path, f"[tool.toolregistry]\n{body}\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(cfg)
    assert str(cfg) in str(info.value)


def test_bad_booleans_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREGISTRY_INLINE_CALLS", "maybe")
    with pytest.raises(ConfigError, match=r"^environment variable TOOLREGISTRY_INLINE_CALLS: "
                                          r"inline-calls must be true or false"):
        ToolRegistry()


# --- strictness from every layer (issue 16.13) -------------------------------------------------

def test_strict_plugins_in_the_file_makes_unknown_keys_errors(tmp_path: Path) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\nstrict-plugins = true\nthink-augmnet = true\n")
    with pytest.raises(ConfigError, match="unknown option 'think-augmnet'"):
        ToolRegistry(config=cfg)
    with pytest.raises(ConfigError, match="unknown option 'think-augmnet'"):
        ToolRegistry.from_config(cfg)
    # An explicit argument still wins over the file.
    with pytest.warns(ConfigWarning, match="think-augmnet"):
        ToolRegistry(config=cfg, strict_plugins=False).close()


def test_strict_plugins_in_the_environment_makes_unknown_keys_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\nthink-augmnet = true\n")
    monkeypatch.setenv("TOOLREGISTRY_STRICT_PLUGINS", "1")
    with pytest.raises(ConfigError, match="unknown option 'think-augmnet'"):
        ToolRegistry(config=cfg)
    monkeypatch.setenv("TOOLREGISTRY_STRICT_PLUGINS", "0")
    cfg2 = write(tmp_path, "[tool.toolregistry]\nstrict-plugins = true\nbogus = 1\n", "b.toml")
    with pytest.warns(ConfigWarning, match="bogus"):  # the environment beats the file
        ToolRegistry(config=cfg2).close()


def test_strict_plugins_in_the_file_applies_to_plugin_tables(tmp_path: Path) -> None:
    from pydantic import BaseModel

    from toolregistry import hookimpl

    class Options(BaseModel):
        size: int = 1

    class Sized:
        __name__ = "sized"  # the plugin's name, as an entry point's would be

        @hookimpl
        def settings_model(self) -> type[BaseModel]:
            return Options

    cfg = write(tmp_path, """
        [tool.toolregistry]
        strict-plugins = true
        [tool.toolregistry.plugins.sized]
        sise = 2
    """)
    with pytest.raises(ConfigError, match=r"plugins.sized\].*unknown option 'sise' "
                                          r"\(did you mean 'size'\?\)"):
        ToolRegistry(config=cfg, plugins=[Sized()])


# --- options that used to bypass the layering ---------------------------------------------------

def test_trace_hooks_from_the_file(tmp_path: Path) -> None:
    """It used to be read from the environment only."""
    from structlog.testing import capture_logs

    from toolregistry import Tool, hookimpl

    class Watcher:
        @hookimpl
        def register(self, registry: ToolRegistry, tool: Tool) -> None:
            return None

    cfg = write(tmp_path, "[tool.toolregistry]\ntrace-hooks = true\n")
    for explicit, traced in ((None, True), (False, False)):
        with capture_logs() as logs, ToolRegistry(config=cfg, trace_hooks=explicit,
                                                  plugins=[Watcher()]) as reg:
            reg.register(lambda: 1, name="one")
        assert reg.plugins.settings.trace is traced
        assert any(e["event"] == "hook.trace" for e in logs) is traced


def _ran_on(config: Path) -> int:
    """The thread a sync tool with a deadline ran on, called from the main thread."""
    with ToolRegistry(config=config) as reg:
        seen: list[int] = []
        reg.register(lambda: seen.append(threading.get_ident()), name="where")
        assert reg.invoke("where", timeout=5).ok
        return seen[0]


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="inline calls happen on the main thread")
def test_inline_calls_from_the_file(tmp_path: Path) -> None:
    import signal

    if not hasattr(signal, "SIGRTMIN"):
        pytest.skip("no real-time signals here: calls never run inline")
    on = write(tmp_path, "[tool.toolregistry]\ninline-calls = true\n", "on.toml")
    off = write(tmp_path, "[tool.toolregistry]\ninline-calls = false\n", "off.toml")
    assert _ran_on(on) == threading.get_ident()
    assert _ran_on(off) != threading.get_ident()


def test_inline_calls_off_from_the_environment_in_a_fresh_process(tmp_path: Path) -> None:
    code = ("import threading; from toolregistry import ToolRegistry\n"
            "r = ToolRegistry(); seen = []\n"
            "r.register(lambda: seen.append(threading.get_ident()), name='w')\n"
            "r.invoke('w', timeout=5); print(seen[0] == threading.get_ident())\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    for value, inline in (("0", "False"), ("1", "True")):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**env, "TOOLREGISTRY_INLINE_CALLS": value}, cwd=tmp_path,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        if value == "1" and proc.stdout.strip() == "False":
            pytest.skip("this platform never runs calls inline")
        assert proc.stdout.strip() == inline
