"""Test helpers for plugin authors (loaded by pytest through the ``pytest11`` entry point).

Fixtures: ``registry`` (a fresh :class:`~toolregistry.ToolRegistry`, closed after the test),
``registry_factory`` (build several, each closed after the test), ``chromium`` (the path of
Debian's chromium for Playwright's ``executable_path``) and ``postgres_url`` (a fresh database
on a PostgreSQL cluster the session starts in a temporary folder, ``postgres_cluster``, and
stops; see :class:`PostgresCluster`); ``any_store_url`` runs a test once on a SQLite store and
once on a PostgreSQL one.

:class:`PluginContract` is a base class whose tests check that an installed plugin honours the
hook contract: subclass it in your plugin's tests and set ``plugin_name``::

    from toolregistry.testing import PluginContract

    class TestMyPlugin(PluginContract):
        plugin_name = "myplugin"

Its registry loads only the plugin under test (``load_plugins=[plugin_name]``), so other
installed plugins cannot make the contract pass or fail. ``registry_options`` adds
``ToolRegistry`` keywords; override ``make_registry()`` to build it another way. The contract
also checks what the plugin provides: its source kinds (``sources`` gives a source per kind
to load), its settings table (``settings_table``: a valid table) and its CLI commands.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from ._config import RegistryConfig, plugin_settings
from ._plugins import HOOK_NAMES
from ._registry import ToolRegistry
from .errors import ConfigError
from .tool import Tool, ToolMetadata

__all__ = ["REQUIRE_BROWSER", "REQUIRE_POSTGRES", "PluginContract", "PostgresCluster",
           "any_store_url", "chromium", "postgres_cluster", "postgres_url", "registry", "registry_factory",
           "sample_tools"]

REQUIRE_BROWSER = "TOOLREGISTRY_REQUIRE_BROWSER"
REQUIRE_POSTGRES = "TOOLREGISTRY_REQUIRE_POSTGRES"

RegistryFactory = Callable[..., ToolRegistry]


@pytest.fixture(autouse=True)
def _structlog_hygiene() -> Iterator[None]:
    """Undo a structlog configuration a test leaked (``structlog.testing.capture_logs``
    leaves structlog marked as configured, which would send later events to stdout)."""
    import structlog

    configured = structlog.is_configured()
    yield
    if not configured and structlog.is_configured():
        structlog.reset_defaults()


@pytest.fixture
def registry_factory() -> Iterator[RegistryFactory]:
    """Build registries with ``registry_factory(**options)``; all are closed after the test."""
    made: list[ToolRegistry] = []

    def make(**options: Any) -> ToolRegistry:
        reg = ToolRegistry(**options)
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()


@pytest.fixture
def registry(registry_factory: RegistryFactory) -> ToolRegistry:
    """A fresh registry, closed after the test."""
    return registry_factory()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Debian's chromium, which browser tests drive through Playwright's
    ``executable_path``. Without it a test is skipped, saying so (a machine with only Python
    and pip runs the suite); with ``TOOLREGISTRY_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) it
    fails instead."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    reason = "this browser test needs Debian's chromium: apt-get install -y chromium"
    if _required(REQUIRE_BROWSER):
        pytest.fail(f"{reason} ({REQUIRE_BROWSER} is set: browser tests are required)",
                    pytrace=False)
    pytest.skip(reason)


def _required(variable: str) -> bool:
    return os.environ.get(variable, "") not in ("", "0")


class PostgresCluster:
    """A throwaway PostgreSQL cluster: ``initdb`` in a temporary folder, the server on a free
    loopback port (and a unix socket in that folder), trust authentication, ``stop()``
    removes it all. As root, the server runs as ``nobody`` (``initdb`` refuses root)."""

    def __init__(self, bindir: Path) -> None:
        import socket
        import subprocess
        import tempfile

        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="toolregistry-pg-"))
        self._as: list[str] = []
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            import pwd

            os.chown(self.folder, pwd.getpwnam("nobody").pw_uid, -1)
            self._as = ["runuser", "-u", "nobody", "--"]
        self.port = 0
        self.user = "toolregistry"
        self._run = subprocess.run
        self._count = 0
        data = self.folder / "data"
        try:
            self._tool("initdb", "-D", str(data), "-U", self.user, "--auth=trust", "-E",
                       "UTF8", "--no-locale")
            for attempt in range(3):
                # A free port now may be taken before the server binds it: try another.
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", 0))
                    self.port = sock.getsockname()[1]
                try:
                    self.start_server()
                    break
                except RuntimeError as exc:
                    if attempt == 2:
                        log = self.folder / "server.log"
                        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                        raise RuntimeError(f"{exc}\nserver log:\n{tail}") from None
        except BaseException:
            self.stop()
            raise

    def _tool(self, name: str, *args: str) -> None:
        done = self._run([*self._as, str(self.bindir / name), *args], capture_output=True,
                         text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()}")

    def start_server(self) -> None:
        """Start the server (again, after :meth:`stop_server`: same port, same data)."""
        self._tool("pg_ctl", "-D", str(self.folder / "data"), "-l",
                   str(self.folder / "server.log"), "-w", "-t", "60", "-o",
                   f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off", "start")

    def stop_server(self) -> None:
        """Stop the server, keeping its data: a database gone under running clients
        (:meth:`start_server` brings it back)."""
        self._tool("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this cluster."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        self._count += 1
        name = f"test_{os.getpid()}_{self._count}"
        self._tool("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name)
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and remove its folder (idempotent)."""
        data = self.folder / "data"
        if (data / "postmaster.pid").exists():
            try:
                self._tool("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
            except RuntimeError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)


POSTGRES_HOMES: tuple[Path, ...] = (Path("/usr/lib/postgresql"),)
"""Where PostgreSQL's versions are installed (Debian: ``<home>/<version>/bin``), besides
``PATH``."""


def _postgres_bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found and (Path(found).resolve().parent / "initdb").exists():
        return Path(found).resolve().parent
    versions = sorted((p for home in POSTGRES_HOMES for p in home.glob("*/bin/initdb")),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else 0)
    return versions[-1].parent if versions else None


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster for this test session, stopped after it. Without ``initdb`` /
    ``pg_ctl`` the test is skipped, saying so; with ``TOOLREGISTRY_REQUIRE_POSTGRES=1``
    (``.ci/run`` sets it) it fails instead."""
    bindir = _postgres_bindir()
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if bindir is None or (as_root and shutil.which("runuser") is None):
        reason = ("this test needs PostgreSQL's initdb and pg_ctl (and runuser as root): "
                  "apt-get install -y postgresql")
        if _required(REQUIRE_POSTGRES):
            pytest.fail(f"{reason} ({REQUIRE_POSTGRES} is set: PostgreSQL tests are required)",
                        pytrace=False)
        pytest.skip(reason)
    cluster = PostgresCluster(bindir)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a fresh database on the session's PostgreSQL cluster."""
    return postgres_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL, once per kind: a SQLite file in the test's folder, then a fresh
    PostgreSQL database (``postgres_url``: skipped without PostgreSQL, as it is)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def sample_tools() -> list[Tool]:
    """A few tools covering the usual shapes: sync, async, optional, enum, nested, schema-first."""

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: First addend.
            b: Second addend.
        """
        return a + b

    async def greet(name: str, style: Literal["plain", "loud"] = "plain",
                    suffix: str | None = None) -> str:
        """Greet someone."""
        text = f"hello {name}" + (suffix or "")
        return text.upper() if style == "loud" else text

    def tag_items(items: list[str], tags: dict[str, int] | None = None) -> dict[str, Any]:
        """Tag a list of items."""
        return {"items": items, "tags": tags or {}}

    def echo(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    manual = Tool(
        name="echo_schema",
        description="Echo a message (schema-first).",
        parameters={"type": "object", "properties": {"message": {"type": "string"}},
                    "required": ["message"], "additionalProperties": False},
        callable=echo,
        metadata=ToolMetadata(read_only_hint=True),
    )
    return [Tool.from_function(add), Tool.from_function(greet), Tool.from_function(tag_items),
            manual]


class PluginContract:
    """Contract tests every plugin must pass (see the module docstring).

    Class attributes a subclass sets:

    - ``plugin_name``: the entry-point name of the plugin under test (required);
    - ``registry_options``: ``ToolRegistry`` keywords of the contract's registry;
    - ``sources``: ``{kind: source}``, a source for source kinds the plugin provides, loaded
      into the contract's registry with ``register_from_<kind>(source)`` (recommended: one
      per kind, so that the contract runs over the tools they bring);
    - ``settings_table``: a valid ``[tool.toolregistry.plugins.<name>]`` table (keys as in
      the file), validated with the plugin's settings model.
    """

    plugin_name: str = ""
    registry_options: dict[str, Any] = {}  # noqa: RUF012 - overridden by subclasses
    sources: dict[str, Any] = {}  # noqa: RUF012 - overridden by subclasses
    settings_table: dict[str, Any] | None = None

    def make_registry(self) -> ToolRegistry:
        """The registry the contract runs on: ``ToolRegistry(load_plugins=[plugin_name],
        **registry_options)``. Override to build it the way your plugin needs."""
        options = {"load_plugins": [self.plugin_name], **self.registry_options}
        return ToolRegistry(**options)

    @pytest.fixture
    def contract_registry(self) -> Iterator[ToolRegistry]:
        """``make_registry()`` with :func:`sample_tools` and ``sources`` loaded; closed after."""
        reg = self.make_registry()
        try:
            reg.register_tools(sample_tools())
            for kind, source in self.sources.items():
                getattr(reg, f"register_from_{kind}")(source)
            yield reg
        finally:
            reg.close()

    def test_plugin_is_loaded(self, contract_registry: ToolRegistry) -> None:
        assert self.plugin_name, "set plugin_name on your PluginContract subclass"
        record = contract_registry.plugins.records.get(self.plugin_name)
        assert record is not None, f"plugin {self.plugin_name!r} was not found"
        assert record.status == "loaded", record.error
        assert set(record.hooks) <= set(HOOK_NAMES)

    def test_schemas_in_every_format(self, contract_registry: ToolRegistry) -> None:
        import jsonschema_rs

        formats = contract_registry.formats
        for fmt in formats.names("schemas"):
            schemas = contract_registry.get_schemas(fmt)
            assert len(schemas) == len(contract_registry.list_tools())
            json.dumps(schemas)  # JSON-serialisable
            for schema in schemas:
                definition = formats.get(fmt).read_definition(schema)
                assert definition.name in contract_registry
                jsonschema_rs.meta.validate(definition.parameters or {"type": "object"})
        again = contract_registry.get_schemas()
        assert again == contract_registry.get_schemas()

    def test_calls_work_and_bad_calls_never_raise(self, contract_registry: ToolRegistry
                                                  ) -> None:
        calls: list[Any] = [
            {"id": "1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
            {"id": "2", "type": "function", "function": {"name": "add", "arguments": "{oops"}},
            {"id": "3", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
            {"id": "4", "type": "function", "function": {"name": "greet", "arguments": '{"name": 5}'}},
            {"type": "tool_use", "id": "5", "name": "echo_schema", "input": {"message": "hi"}},
            42,
        ]
        results = contract_registry.execute_tool_calls(calls)
        assert len(results) == len(calls)
        assert results[0].ok and results[0].text == "3"
        assert [r.is_error for r in results[1:4]] == [True, True, True]
        assert results[4].ok
        assert results[5].is_error

    def test_change_events_do_not_break(self, contract_registry: ToolRegistry) -> None:
        reg = contract_registry
        reg.disable("add", reason="maintenance")
        assert reg.invoke("add", {"a": 1, "b": 1}).error_kind == "disabled"
        reg.enable("add")
        reg.update_tool_metadata("greet", defer=True)
        reg.unregister("tag_items")
        assert "tag_items" not in reg
        assert reg.invoke("add", {"a": 1, "b": 1}).text == "2"

    def test_source_kinds(self, contract_registry: ToolRegistry) -> None:
        """Each source kind the plugin provides is a ``register_from_<kind>`` method, and
        the ``sources`` given (kinds the plugin provides) load tools."""
        host = contract_registry.plugins
        kinds = sorted(k for k, (owner, _) in host.kinds.items() if owner == self.plugin_name)
        assert set(self.sources) <= set(kinds), (
            f"sources names kinds the plugin does not provide (it provides: {kinds})")
        for kind in kinds:
            kind_object = host.source_kind(kind)
            assert callable(kind_object.load), kind
            assert callable(getattr(contract_registry, f"register_from_{kind}")), kind
            assert callable(getattr(contract_registry, f"aregister_from_{kind}")), kind
        if self.sources:
            loaded = set(contract_registry.list_tools()) - {t.name for t in sample_tools()}
            assert loaded, "the sources registered no tool"

    def test_settings_table(self, contract_registry: ToolRegistry) -> None:
        """The settings model (if any) accepts ``settings_table`` and refuses an unknown key,
        naming the plugin and the key."""
        model = contract_registry.plugins.settings_model(self.plugin_name)
        if model is None:
            assert not self.settings_table, (
                f"plugin {self.plugin_name!r} has no settings_model() for settings_table")
            return
        table = dict(self.settings_table or {})
        plugin_settings(self.plugin_name, model, _config_with(self.plugin_name, table),
                        strict=True)
        bad = {**table, "no-such-option": 1}
        with pytest.raises(ConfigError) as caught:
            plugin_settings(self.plugin_name, model, _config_with(self.plugin_name, bad),
                            strict=True)
        assert self.plugin_name in str(caught.value)
        assert "no-such-option" in str(caught.value)

    def test_cli_commands(self, contract_registry: ToolRegistry) -> None:
        """The plugin's commands are added (no failure recorded) and each one's
        ``toolregistry <name> --help`` works."""
        from .cli import KERNEL_COMMANDS, _parser

        host = contract_registry.plugins
        commands = [(p, c) for p, c in host.commands(taken=KERNEL_COMMANDS)
                    if p == self.plugin_name]
        record = host.records[self.plugin_name]
        assert record.error is None, record.error
        parser = _parser(commands, host)
        assert record.error is None, record.error
        for _, command in commands:
            with pytest.raises(SystemExit) as caught:
                parser.parse_args([command.name, "--help"])
            assert caught.value.code == 0, command.name


def _config_with(plugin: str, table: dict[str, Any]) -> RegistryConfig:
    """A configuration holding only ``[tool.toolregistry.plugins.<plugin>]`` = ``table``."""
    return RegistryConfig(None, {"plugins": {plugin: table}}, {"plugins": {plugin: table}})
