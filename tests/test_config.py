"""[tool.toolregistry]: discovery of the file, validation, precedence, sources, plugin tables."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from toolregistry import Tool, ToolRegistry, hookimpl
from toolregistry._config import ConfigWarning, load_config, plugin_settings
from toolregistry.errors import ConfigError, MissingPluginError
from toolregistry.plugin import SourceKind


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
    assert ToolRegistry(config=cfg, default_timeout="none").default_timeout is None
    monkeypatch.delenv("TOOLREGISTRY_DEFAULT_TIMEOUT")
    assert ToolRegistry(config=write(tmp_path, "", "empty.toml")).default_timeout == 60


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "[tool.toolregistry\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml is not valid TOML"):
        load_config(cfg)


def test_wrong_types_name_the_option(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[tool.toolregistry]\ndefault-timeout = "soon"\n')
    with pytest.raises(ConfigError, match="default-timeout must be a finite number"):
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
    with pytest.warns(ConfigWarning, match="unknown option 'think-augmnet' "
                                           r"\(did you mean 'think-augment'\?\)"):
        load_config(cfg)
    # named as written: underscores stay underscores, dashes stay dashes
    cfg = write(tmp_path, "[tool.toolregistry]\nmax_wrokers = 3\n", "under.toml")
    with pytest.warns(ConfigWarning, match="unknown option 'max_wrokers' "
                                           r"\(did you mean 'max-workers'\?\)"):
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
    with pytest.warns(ConfigWarning, match=r"plugins.spool\] \(.*unknown.toml\): unknown option "
                                           r"'keeep' "
                                           r"\(did you mean 'keep'\?\)"):
        assert plugin_settings("spool", SpoolLike, unknown).keep is False
    with pytest.raises(ConfigError, match="unknown option 'keeep'"):
        plugin_settings("spool", SpoolLike, unknown, strict=True)


class GuardLike(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unknown_options: ClassVar[str] = "error"  # a misspelt key would fail open
    default: str = "allow"


def test_a_model_may_make_unknown_options_errors(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, """
        [tool.toolregistry.plugins.guard]
        defualt = "deny"
    """))
    with pytest.raises(ConfigError, match=r"plugins.guard\] \(.*\): unknown option 'defualt' "
                                          r"\(did you mean 'default'\?\)"):
        plugin_settings("guard", GuardLike, cfg)


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


def test_python_module_source_keeps_tool_decorated_functions(tmp_path: Path) -> None:
    (tmp_path / "decorated_tools_mod.py").write_text(textwrap.dedent('''
        from toolregistry.decorators import tool
        from toolregistry.tool import Tool

        from textwrap import dedent  # imported: not this module's tool


        @tool(description="Numbered lines, described by the decorator.")
        def fetch_log(n: int) -> str:
            """Numbered lines."""
            return "x" * n


        @tool(name="renamed_tool")
        def original(n: int) -> int:
            """A tool named by the decorator."""
            return n


        def plain(a: int) -> int:
            """A plain function."""
            return a


        def _private() -> None:
            """Not a tool."""


        borrowed = Tool.from_function(dedent)  # a Tool of another module's function
    '''), encoding="utf-8")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "decorated_tools_mod"
    """)
    with ToolRegistry.from_config(cfg) as reg:
        assert sorted(reg.list_tools()) == ["fetch_log", "plain", "renamed_tool"]
        fetch = reg.get_tool("fetch_log")
        assert fetch is not None and fetch.description.startswith("Numbered lines, described")


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
    ("sources = 3\n", "sources must be an array of tables"),
    # a string "false" used to count as true, and a number for a namespace was a raw TypeError
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:loads"\n'
     'replace = "false"\n', r"python source 'json:loads': replace must be true or false, "
                           "got 'false'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:loads"\nnamespace = 5\n',
     r"python source 'json:loads': namespace must be a string, got 5"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:loads"\n'
     'namespace = true\n', r"namespace must be a string, got True \(true names a class's"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:JSONDecoder"\n'
     'namespace = 1.5\n', r"namespace must be a string, got 1.5 \(true: the source's own name"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:loads"\n'
     'defer = "yes"\n', r"python source 'json:loads': defer must be true or false, got 'yes'"),
    ('[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "json:loads"\n'
     'include = 3\n', r"python source 'json:loads': include must be a tool name or glob"),
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


# --- python sources: import failures and sys.path (issues 16.12, 16.15) ------------------------

@pytest.mark.parametrize(("code", "message"), [
    ("def broken(:\n    pass\n", r"cannot import 'bad_tools_mod': SyntaxError: .*line 1"),
    ("raise RuntimeError('no database')\n",
     "importing 'bad_tools_mod' raised RuntimeError: no database"),
])
def test_a_python_source_that_fails_to_import_names_the_source(
        tmp_path: Path, code: str, message: str) -> None:
    (tmp_path / "bad_tools_mod.py").write_text(code, encoding="utf-8")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "bad_tools_mod:anything"
    """)
    with pytest.raises(ConfigError, match=r"sources\[0\]: python source 'bad_tools_mod:anything'"
                                          f": {message}"):
        ToolRegistry.from_config(cfg)


def test_the_cli_reports_a_python_source_that_fails_to_import(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "bad_tools_mod.py").write_text("def broken(:\n", encoding="utf-8")
    cfg = write(tmp_path, '[[tool.toolregistry.sources]]\nkind = "python"\n'
                          'target = "bad_tools_mod"\n')
    proc = subprocess.run([sys.executable, "-m", "toolregistry.cli", "--config", str(cfg),
                           "schemas"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "sources[0]: python source 'bad_tools_mod': cannot import" in proc.stderr


def test_python_sources_leave_sys_path_alone(tmp_path: Path) -> None:
    import sys

    (tmp_path / "path_tools_mod.py").write_text(textwrap.dedent('''
        import path_helper_mod  # a sibling, imported while the source loads

        def twice(x: int) -> int:
            """Twice."""
            return path_helper_mod.double(x)
    '''), encoding="utf-8")
    (tmp_path / "path_helper_mod.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "path_broken_mod.py").write_text("raise ValueError('broken')\n")
    before = list(sys.path)
    ok = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "path_tools_mod:twice"
    """)
    with ToolRegistry.from_config(ok) as reg:
        assert reg.invoke("twice", {"x": 4}).text == "8"
    assert sys.path == before
    broken = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "path_broken_mod"
    """, "broken.toml")
    with pytest.raises(ConfigError, match="raised ValueError: broken"):
        ToolRegistry.from_config(broken)
    assert sys.path == before
    assert str(tmp_path) not in sys.path_importer_cache


def test_a_package_source_keeps_its_lazy_relative_imports(tmp_path: Path) -> None:
    """The folder leaves sys.path after loading; a package's own imports still work later."""
    import sys

    pkg = tmp_path / "lazy_pkg_tools"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        def shout(text: str) -> str:
            """Shout, with a helper imported on first use."""
            from .helpers import upper

            return upper(text)
    '''), encoding="utf-8")
    (pkg / "helpers.py").write_text("def upper(text):\n    return text.upper()\n")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "lazy_pkg_tools:shout"
    """)
    with ToolRegistry.from_config(cfg) as reg:
        assert str(tmp_path) not in sys.path
        assert reg.invoke("shout", {"text": "hi"}).text == "HI"


# --- a third party's source kind gets the kernel's config support ------------------------------

class Notes:
    """An in-process plugin with a source kind whose target is a file path."""

    __name__ = "notes"

    def __init__(self) -> None:
        self.loaded: list[tuple[str, dict[str, Any]]] = []

    def _load(self, registry: ToolRegistry, source: Any, **options: Any) -> list[Tool]:
        self.loaded.append((source, options))
        text = Path(source).read_text(encoding="utf-8")
        tools = [Tool(name=line.split()[0], description=line, callable=lambda line=line: line)
                 for line in text.splitlines() if line.strip()]
        return registry.register_tools(tools, namespace=options.get("namespace"))

    async def _aload(self, registry: ToolRegistry, source: Any, **options: Any) -> list[Tool]:
        return self._load(registry, source, **options, via="async")

    @staticmethod
    def _export(registry: ToolRegistry, names: Any, **options: Any) -> list[str]:
        return [f"note:{n}" for n in (names or registry.list_tools())]

    @hookimpl
    def loaders(self) -> list[SourceKind]:
        return [SourceKind(name="notes", load=self._load, aload=self._aload, target="file",
                           paths=("file", "index"), export=self._export)]


def test_a_third_party_source_kind_in_the_configuration(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("buy milk\ncall mom\n", encoding="utf-8")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "notes"
        file = "notes/todo.txt"          # relative to this file
        index = "notes/index.db"
        url = "notes/not-a-path"         # not declared as a path: left alone
        namespace = "n"
    """)
    plugin = Notes()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with ToolRegistry.from_config(cfg, plugins=[plugin]) as reg:
        assert reg.list_tools() == ["n-buy", "n-call"]
        source, options = plugin.loaded[0]
        assert source == str(tmp_path / "notes" / "todo.txt")
        assert options == {"index": str(tmp_path / "notes" / "index.db"),
                           "url": "notes/not-a-path", "namespace": "n"}
        assert reg.export("notes") == ["note:n-buy", "note:n-call"]
        assert reg.plugins.provider("notes") == "notes"
        import asyncio

        asyncio.run(reg.aregister_from_notes(str(tmp_path / "notes" / "todo.txt"),
                                             namespace="m"))
        assert plugin.loaded[-1][1] == {"namespace": "m", "via": "async"}


def test_a_source_kind_without_its_target_is_named(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[[tool.toolregistry.sources]]\nkind = "notes"\nnamespace = "x"\n')
    with pytest.raises(ConfigError, match=r"sources\[0\]: a notes source needs file = "):
        ToolRegistry.from_config(cfg, plugins=[Notes()])


def test_source_kinds_must_be_typed() -> None:
    class Untyped:
        __name__ = "untyped"

        @hookimpl
        def loaders(self) -> dict[str, Any]:
            return {"untyped": lambda registry, source: []}

    class Clashing:
        __name__ = "clashing"

        @hookimpl
        def loaders(self) -> list[SourceKind]:
            return [SourceKind(name="python", load=lambda registry, source: [])]

    with ToolRegistry(plugins=[Untyped(), Clashing()]) as reg:
        record = reg.plugins.records["untyped"]
        assert record.status == "broken"
        assert "loaders() must return a list of toolregistry.plugin.SourceKind" in (
            record.error or "")
        assert reg.plugins.provider("python") == "toolregistry"  # the kernel's own kind stays
    with pytest.raises(ValueError, match="lowercase identifier"):
        SourceKind(name="Bad Name", load=lambda registry, source: [])


# --- plugin tables are validated when the configuration is loaded (issue 16.14) ---------------

class Sized:
    __name__ = "sized"

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        class SizedOptions(BaseModel):
            model_config = ConfigDict(extra="forbid")
            size: int = 1

        return SizedOptions


class Plain:
    __name__ = "plain"

    @hookimpl
    def on_change(self, registry: ToolRegistry, event: Any) -> None:
        return None


def test_a_bad_plugin_table_is_refused_when_the_registry_is_built(tmp_path: Path) -> None:
    cfg = write(tmp_path, """
        [tool.toolregistry.plugins.sized]
        size = "big"
    """)
    with pytest.raises(ConfigError, match=r"\[tool.toolregistry.plugins.sized\] \(.*pyproject"
                                          r".toml\): invalid option: size: Input should be a "
                                          r"valid integer"):
        ToolRegistry(config=cfg, plugins=[Sized()])
    good = write(tmp_path, "[tool.toolregistry.plugins.sized]\nsize = 3\n", "good.toml")
    with ToolRegistry(config=good, plugins=[Sized()]) as reg:
        model = reg.plugins.settings_model("sized")
        assert reg.plugin_settings("sized", model).size == 3


def test_tables_of_plugins_without_options_or_not_installed(tmp_path: Path) -> None:
    cfg = write(tmp_path, """
        [tool.toolregistry.plugins.plain]
        colour = "blue"
        [tool.toolregistry.plugins.not-installed-anywhere]
        anything = 1
    """)
    with pytest.warns(ConfigWarning, match=r"plugins.plain\].*takes no options.*'colour'"):
        ToolRegistry(config=cfg, plugins=[Plain()]).close()
    with pytest.raises(ConfigError, match="takes no options"):
        ToolRegistry(config=cfg, plugins=[Plain()], strict_plugins=True)


def test_the_cli_exits_2_for_a_malformed_plugins_table(tmp_path: Path) -> None:
    import subprocess
    import sys

    cfg = write(tmp_path, "[tool.toolregistry]\nplugins = [1, 2]\n")
    proc = subprocess.run([sys.executable, "-m", "toolregistry.cli", "--config", str(cfg),
                           "schemas"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "plugins must be a table of plugin tables" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_relative_configuration_path_means_the_file_after_a_chdir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is cached: it used to keep the first caller's relative spelling, so sources
    relative to it were looked for in whatever the working directory was later."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "rel_tools.py").write_text("def ping() -> str:\n    return 'pong'\n")
    (project / "pyproject.toml").write_text(
        '[[tool.toolregistry.sources]]\nkind = "python"\ntarget = "rel_tools:ping"\n')
    monkeypatch.chdir(project)
    with ToolRegistry.from_config("pyproject.toml") as registry:
        assert registry.config.path == project / "pyproject.toml"
    sys.modules.pop("rel_tools")  # imported again, from the file's folder
    monkeypatch.chdir(tmp_path)
    with ToolRegistry.from_config(project / "pyproject.toml") as registry:
        assert registry.invoke("ping", {}).content == "pong"
    sys.modules.pop("rel_tools")


def test_a_class_source_named_after_its_class(tmp_path: Path) -> None:
    (tmp_path / "ns_tools.py").write_text(textwrap.dedent('''
        class Greeter:
            def hello(self) -> str:
                return "hi"
    '''))
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "ns_tools:Greeter"
        namespace = true
        replace = false
    """)
    with ToolRegistry.from_config(cfg) as registry:
        assert registry.list_tools() == ["Greeter-hello"]
    sys.modules.pop("ns_tools")


class _PathsModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folder: str | None = None
    port: int = 0
    nested: dict[str, Any] = {}


def test_env_vars_are_expanded_in_every_table(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TR_TIMEOUT", "12")
    monkeypatch.setenv("TR_SANDBOX", "/srv/sandbox")
    monkeypatch.setenv("TR_PORT", "8123")
    monkeypatch.delenv("TOOLREGISTRY_DEFAULT_TIMEOUT", raising=False)
    cfg = write(tmp_path, """
        [tool.toolregistry]
        default-timeout = "${TR_TIMEOUT}"

        [tool.toolregistry.plugins.paths]
        folder = "${TR_SANDBOX}/scratch"
        port = "${TR_PORT}"
        nested = { rules = [{ inside = ["${TR_SANDBOX}/x", "$${TR_SANDBOX}"] }] }
    """)
    assert ToolRegistry(config=cfg).default_timeout == 12
    settings = plugin_settings("paths", _PathsModel, load_config(cfg))
    assert settings.folder == "/srv/sandbox/scratch" and settings.port == 8123
    assert settings.nested == {"rules": [{"inside": ["/srv/sandbox/x", "${TR_SANDBOX}"]}]}


def test_an_unset_variable_in_a_plugin_table_names_the_table(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.delenv("TR_UNSET", raising=False)
    cfg = write(tmp_path, '[tool.toolregistry.plugins.paths]\nfolder = "${TR_UNSET}"\n')
    config = load_config(cfg)  # not needed by the kernel: no error until the plugin reads it
    with pytest.raises(ConfigError, match=r"plugins\.paths\].*folder: environment variable "
                                          r"TR_UNSET is not set"):
        plugin_settings("paths", _PathsModel, config)


def test_config_paths_are_relative_to_the_configuration_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolregistry.plugin import ConfigPath

    class Model(BaseModel):
        directory: ConfigPath | None = None
        store: ConfigPath = "default.db"
        url: ConfigPath = "x"

    conf = tmp_path / "conf"
    conf.mkdir()
    cfg = write(conf, """
        [tool.toolregistry.plugins.paths]
        directory = "spool"
        url = "sqlite:///rel.db"
    """)
    monkeypatch.chdir(tmp_path)
    settings = plugin_settings("paths", Model, load_config(cfg))
    assert settings.directory == str(conf / "spool")
    assert settings.url == "sqlite:///rel.db"
    # In code, a relative path means the working directory, as everywhere in Python.
    assert Model(directory="spool").directory == "spool"
    assert Model(directory="~/s").directory == str(Path.home() / "s")


def test_every_kind_takes_the_common_source_options(tmp_path: Path) -> None:
    (tmp_path / "common_tools_mod.py").write_text(textwrap.dedent('''
        def shout(text: str) -> str:
            """Shout."""
            return text.upper()

        def whisper(text: str) -> str:
            """Whisper."""
            return text.lower()

        def secret(text: str) -> str:
            """Not for the model."""
            return text
    '''))
    (tmp_path / "notes.txt").write_text("buy milk\ncall mom\nfix bike\n", encoding="utf-8")
    cfg = write(tmp_path, """
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "common_tools_mod"
        namespace = "py"
        defer = true
        tags = ["read_only", "text"]
        exclude = ["secret"]

        [[tool.toolregistry.sources]]
        kind = "notes"
        file = "notes.txt"
        include = ["buy", "c*"]
        exclude = "call"
        defer = true
        tags = "chores"
    """)
    plugin = Notes()
    with ToolRegistry.from_config(cfg, plugins=[plugin]) as reg:
        assert sorted(reg.list_tools()) == ["buy", "py-shout", "py-whisper"]
        assert plugin.loaded[0][1] == {}  # the kernel applied them: the loader saw none
        shout = reg.get_tool("py-shout")
        assert shout is not None and shout.metadata.defer
        assert {str(t) for t in shout.metadata.tags} == {"read_only"}
        assert shout.metadata.custom_tags == {"text"}
        buy = reg.get_tool("buy")
        assert buy is not None and buy.metadata.defer and buy.metadata.custom_tags == {"chores"}
        assert [s["function"]["name"] for s in reg.get_schemas(include_deferred=False)] == []
        # in code the same, for every kind; the loader's own registrations only
        reg.register_from_notes(str(tmp_path / "notes.txt"), namespace="n", include="fix")
        assert "n-fix" in reg.list_tools() and "n-buy" not in reg.list_tools()
        reg.register_from_notes(str(tmp_path / "notes.txt"), namespace="m", exclude="m-b*")
        assert "m-call" in reg.list_tools() and "m-buy" not in reg.list_tools()
