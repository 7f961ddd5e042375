"""[tool.toolregistry]: discovery of the file, validation, precedence, sources, plugin tables."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from toolregistry import ToolRegistry
from toolregistry._config import ConfigWarning, load_config, plugin_settings
from toolregistry.errors import ConfigError, MissingPluginError


def write(tmp_path: Path, body: str, name: str = "pyproject.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_nearest_pyproject_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "[tool.toolregistry]\ndefault-timeout = 7\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    monkeypatch.delenv("TOOLREGISTRY_CONFIG", raising=False)
    assert ToolRegistry().default_timeout == 7


def test_precedence_argument_env_pyproject_default(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\ndefault-timeout = 7\n")
    monkeypatch.delenv("TOOLREGISTRY_DEFAULT_TIMEOUT", raising=False)
    assert ToolRegistry(config=cfg).default_timeout == 7
    monkeypatch.setenv("TOOLREGISTRY_DEFAULT_TIMEOUT", "9")
    assert ToolRegistry(config=cfg).default_timeout == 9
    assert ToolRegistry(config=cfg, default_timeout=3).default_timeout == 3
    assert ToolRegistry(config=cfg, default_timeout=0).default_timeout is None
    monkeypatch.delenv("TOOLREGISTRY_DEFAULT_TIMEOUT")
    assert ToolRegistry(config=write(tmp_path, "", "empty.toml")).default_timeout == 60


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "[tool.toolregistry\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml is not valid TOML"):
        load_config(cfg)


def test_wrong_types_name_the_option(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[tool.toolregistry]\ndefault-timeout = "soon"\n')
    with pytest.raises(ConfigError, match="default-timeout must be a number"):
        ToolRegistry(config=cfg)
    cfg = write(tmp_path, '[tool.toolregistry]\nthink-augment = "yes"\n', "b.toml")
    with pytest.raises(ConfigError, match="think-augment must be true or false"):
        ToolRegistry(config=cfg)
    cfg = write(tmp_path, '[tool.toolregistry]\ndisable-plugins = "think"\n', "c.toml")
    with pytest.raises(ConfigError, match="disable-plugins must be a list"):
        ToolRegistry(config=cfg)
    cfg = write(tmp_path, '[tool]\ntoolregistry = 3\n', "d.toml")
    with pytest.raises(ConfigError, match=r"\[tool.toolregistry\] must be a table"):
        load_config(cfg)


def test_unknown_options_warn_with_a_suggestion(tmp_path: Path) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\nthink-augmnet = true\n")
    with pytest.warns(ConfigWarning, match="unknown option 'think_augmnet' "
                                           r"\(did you mean 'think-augment'\?\)"):
        load_config(cfg)
    cfg = write(tmp_path, "[tool.toolregistry]\nbogus = 1\n", "strict.toml")
    with pytest.raises(ConfigError, match="unknown option 'bogus'"):
        load_config(cfg, strict=True)


class SpoolLike(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold_tokens: int = 20000
    keep: bool = False


def test_plugin_tables_are_validated_by_the_plugin_model(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, """
        [tool.toolregistry.plugins.spool]
        threshold-tokens = 500
    """))
    assert plugin_settings("spool", SpoolLike, cfg).threshold_tokens == 500
    bad = load_config(write(tmp_path, """
        [tool.toolregistry.plugins.spool]
        threshold-tokens = "lots"
    """, "bad.toml"))
    with pytest.raises(ConfigError, match=r"\[tool.toolregistry.plugins.spool\].*"
                                          r"threshold-tokens: Input should be a valid integer"):
        plugin_settings("spool", SpoolLike, bad)
    unknown = load_config(write(tmp_path, """
        [tool.toolregistry.plugins.spool]
        keeep = true
    """, "unknown.toml"))
    with pytest.warns(ConfigWarning, match=r"plugins.spool\]: unknown option 'keeep' "
                                           r"\(did you mean 'keep'\?\)"):
        assert plugin_settings("spool", SpoolLike, unknown).keep is False
    with pytest.raises(ConfigError, match="unknown option 'keeep'"):
        plugin_settings("spool", SpoolLike, unknown, strict=True)


def test_python_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "demo_tools_mod.py").write_text(textwrap.dedent('''
        __all__ = ["shout", "whisper"]

        def shout(text: str) -> str:
            """Shout."""
            return text.upper()

        def whisper(text: str) -> str:
            """Whisper."""
            return text.lower()

        class Greeter:
            def hello(self, name: str) -> str:
                return f"hello {name}"
    '''))
    monkeypatch.setenv("DEMO_NS", "env")
    cfg = write(tmp_path, """
        [tool.toolregistry]
        default-timeout = 5

        [[tool.toolregistry.sources]]
        kind = "python"
        target = "demo_tools_mod"
        namespace = "${DEMO_NS}"

        [[tool.toolregistry.sources]]
        kind = "python"
        target = "demo_tools_mod:Greeter"
        namespace = "greet"

        [[tool.toolregistry.sources]]
        kind = "python"
        target = "demo_tools_mod:shout"
    """)
    reg = ToolRegistry.from_config(cfg)
    assert reg.list_tools() == ["env-shout", "env-whisper", "greet-hello", "shout"]
    assert reg.invoke("greet-hello", {"name": "x"}).text == "hello x"
    reg.close()


@pytest.mark.parametrize(("body", "message"), [
    ('[[tool.toolregistry.sources]]\ntarget = "x"\n', "needs a 'kind'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\n', "needs target"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "no_such_module_xyz"\n',
     "cannot import 'no_such_module_xyz'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:nope"\n',
     "has no attribute path 'nope'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:dumps"\nextra = 1\n',
     "unknown option.*extra"),
    ('[[tool.toolregistry.sources]]\nkind = "carrier-pigeon"\nsource = "x"\n',
     "no plugin provides the source kind 'carrier-pigeon'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "${UNSET_VAR_XYZ}"\n',
     "environment variable UNSET_VAR_XYZ is not set"),
    ("sources = 3\n", "'sources' must be an array of tables"),
])
def test_bad_sources_are_named(tmp_path: Path, body: str, message: str) -> None:
    cfg = write(tmp_path, "[tool.toolregistry]\n" + body)
    with pytest.raises(ConfigError, match=message) as info:
        ToolRegistry.from_config(cfg)
    assert "sources" in str(info.value) or "kind" in message or "sources" in message


def test_plugin_sources_without_the_plugin_can_be_skipped(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("toolregistry_mcp"):
        pytest.skip("toolregistry-mcp is installed")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "mcp"
        server = {command = "nothing"}
    """)
    with pytest.raises(MissingPluginError, match="install toolregistry-mcp"):
        ToolRegistry.from_config(cfg)
    reg = ToolRegistry.from_config(cfg, skip_unavailable=True)
    assert reg.skipped_sources and reg.skipped_sources[0][0] == "mcp"
