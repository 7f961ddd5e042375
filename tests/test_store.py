"""The store seam: one URL (``store``) for the state workers and hosts share, resolved for
plugins by the kernel, and the small database layer on it (SQLite and a real PostgreSQL)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry.plugin import StoreURL, masked_url, open_store, store_url


def _config(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f"[tool.toolregistry]\n{body}\n", encoding="utf-8")
    return folder / "pyproject.toml"


def test_unset_means_no_store(registry: ToolRegistry) -> None:
    assert registry.settings.store is None
    assert registry.store_url() is None


def test_relative_sqlite_path_is_taken_from_the_config_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _config(tmp_path, 'store = "sqlite:///state/shared.db"')
    monkeypatch.chdir(tmp_path)
    reg = ToolRegistry(config=cfg)
    try:
        url = reg.store_url()
        assert url is not None and url.kind == "sqlite"
        assert url.path == cfg.parent / "state" / "shared.db"
        # A plugin's own setting overrides it: a URL relative to the file's folder, a bare
        # path (a ConfigPath: resolved when read from the file) from the working directory.
        own = store_url(reg, "sqlite:///own.db")
        assert own is not None and own.path == cfg.parent / "own.db"
        bare = store_url(reg, "own.db")
        assert bare is not None and bare.path == tmp_path / "own.db"
    finally:
        reg.close()


def test_environment_variables_are_expanded(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASS_FOR_TEST", "s3cret")
    cfg = _config(tmp_path, 'store = "postgresql://app:${PGPASS_FOR_TEST}@db.internal/tools"')
    reg = ToolRegistry(config=cfg)
    try:
        url = reg.store_url()
        assert url is not None and url.kind == "postgresql"
        assert url.url == "postgresql://app:s3cret@db.internal/tools"
        assert "s3cret" not in str(url) and "s3cret" not in repr(url)
    finally:
        reg.close()


def test_a_missing_variable_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_STORE_VAR", raising=False)
    cfg = _config(tmp_path, 'store = "${NO_SUCH_STORE_VAR}"')
    with pytest.raises(ConfigError, match=r"store.*NO_SUCH_STORE_VAR is not set"):
        ToolRegistry(config=cfg)


@pytest.mark.parametrize("bad", ["mysql://u@h/db", "sqlite://relative.db", "/just/a/path",
                                 "postgresql:///db"])
def test_bad_urls_are_refused_naming_the_option(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"^argument store: store "):
        ToolRegistry(store=bad)


def test_passwords_are_masked_in_errors() -> None:
    with pytest.raises(ConfigError) as info:
        ToolRegistry(store="mysql://app:hunter2@h/db")
    assert "hunter2" not in str(info.value) and "***" in str(info.value)
    assert masked_url("postgresql://h/db?user=a&password=x") == \
        "postgresql://h/db?user=a&password=***"


def _schema_is_versioned(url: StoreURL) -> None:
    store = open_store(url)
    try:
        ddl = ["CREATE TABLE IF NOT EXISTS demo_items (k TEXT PRIMARY KEY, n INTEGER)"]
        store.ensure_schema("demo", 1, ddl)
        store.ensure_schema("demo", 1, ddl)  # again: nothing to do
        with store.transaction(lock="demo") as tx:
            tx.execute("INSERT INTO demo_items (k, n) VALUES (?, ?)", ("a", 1))
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.execute("INSERT INTO demo_items (k, n) VALUES (?, ?)", ("b", 2))
            raise RuntimeError("rolled back")
        with store.transaction() as tx:
            assert tx.execute("SELECT k, n FROM demo_items") == [("a", 1)]
            tx.execute("UPDATE toolregistry_schema SET version = 7 WHERE component = 'demo'")
        with pytest.raises(ConfigError, match="demo schema version 7, newer than this "
                                              r"version understands \(1\)"):
            store.ensure_schema("demo", 1, ddl)
    finally:
        store.close()


def test_sqlite_schema_is_created_versioned_and_transactional(tmp_path: Path) -> None:
    _schema_is_versioned(StoreURL("sqlite:///" + str(tmp_path / "s.db")))


def test_postgres_schema_is_created_versioned_and_transactional(postgres_url: str) -> None:
    pytest.importorskip("psycopg", reason="the postgres store needs psycopg 3")
    _schema_is_versioned(StoreURL(postgres_url))


def test_an_unreachable_server_is_named_with_its_password_masked() -> None:
    pytest.importorskip("psycopg", reason="the postgres store needs psycopg 3")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = StoreURL(f"postgresql://app:hunter2@127.0.0.1:{port}/tools")
    with pytest.raises(ConfigError) as info:
        open_store(url)
    message = str(info.value)
    assert f"postgresql://app:***@127.0.0.1:{port}/tools cannot be reached" in message
    assert "hunter2" not in message
