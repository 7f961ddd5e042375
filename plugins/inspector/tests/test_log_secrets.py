"""What the execution log keeps of a secret: no argument value in an error the kernel wrote
(memory, the SQLite file, ``toolregistry log --json``, ``/api/log``) unless ``arguments =
"full"``; the file and its ``-wal`` / ``-shm`` readable by their owner only; every stored field
bounded, and the space of deleted rows given back."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from toolregistry import Tool, ToolRegistry
from toolregistry_inspector import execution_log, query_log, serve

SECRET = "hunter2-secret"
TOKEN = "log-secrets-token-0123"


def _config(tmp_path: Path, body: str) -> Path:
    file = tmp_path / "pyproject.toml"
    file.write_text("[tool.toolregistry.plugins.inspector]\n" + body, encoding="utf-8")
    return file


def _login(user: str, pin: int) -> str:
    """Log in."""
    return "welcome"


def _schema_tool() -> Tool:
    """A schema-first tool (JSON Schema validation, as for MCP and OpenAPI tools)."""
    return Tool(name="unlock", description="Unlock the door.",
                parameters={"type": "object", "properties": {"code": {"type": "integer"}},
                            "required": ["code"]},
                callable=lambda code: "open")


def _registry(config: Path) -> ToolRegistry:
    registry = ToolRegistry(config=config)
    registry.register(_login, name="login")
    registry.register(_schema_tool())
    return registry


def _fail_validation(registry: ToolRegistry) -> None:
    for name, arguments in (("login", {"user": "ann", "pin": SECRET}),
                            ("unlock", {"code": SECRET})):
        result = registry.invoke(name, arguments, call_id=name)
        assert result.error_kind == "invalid_arguments"
        assert SECRET in result.text  # the model is told what it sent


def test_validation_errors_keep_no_argument_value(tmp_path: Path) -> None:
    registry = _registry(_config(tmp_path, 'log-db = "calls.sqlite"\n'))
    server = None
    try:
        _fail_validation(registry)
        log = execution_log(registry)
        entries = log.entries()
        assert [e.outcome for e in entries] == ["invalid_arguments"] * 2
        assert all(SECRET not in (e.error or "") for e in entries)
        assert "<str, 14 chars>" in (entries[0].error or "")  # still says what was wrong
        assert "pin" in (entries[0].error or "") and "code" in (entries[1].error or "")
        log.flush()
        server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
        assert server is not None
        request = urllib.request.Request(f"{server.base_url}/api/log",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request) as response:
            body = response.read().decode()
        assert "invalid_arguments" in body and SECRET not in body
    finally:
        if server is not None:
            server.close()
        registry.close()
    for file in tmp_path.glob("calls.sqlite*"):
        assert SECRET.encode() not in file.read_bytes(), file.name
    exe = Path(sys.executable).with_name("toolregistry")
    out = subprocess.run([str(exe), "log", "--json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 2 and SECRET not in out.stdout


def test_full_logging_keeps_the_error_as_the_model_read_it(tmp_path: Path) -> None:
    registry = _registry(_config(tmp_path, 'arguments = "full"\n'))
    try:
        _fail_validation(registry)
        assert all(SECRET in (e.error or "") for e in execution_log(registry).entries())
    finally:
        registry.close()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_log_file_is_private(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    registry = ToolRegistry(config=_config(tmp_path, 'log-db = "logs/calls.sqlite"\n'))
    registry.register(_login, name="login")
    old = os.umask(0o022)  # a usual umask: files 0644 unless made otherwise
    try:
        log = execution_log(registry)
        registry.invoke("login", {"user": "ann", "pin": 1})
        log.flush()
        assert _mode(folder) == 0o700
        files = sorted(p.name for p in folder.iterdir())
        assert files == ["calls.sqlite", "calls.sqlite-shm", "calls.sqlite-wal"]
        assert {name: _mode(folder / name) for name in files} == dict.fromkeys(files, 0o600)
    finally:
        os.umask(old)
        registry.close()
    # A file made before (0644) is made private when a registry opens it again.
    db = folder / "calls.sqlite"
    db.chmod(0o644)
    registry = ToolRegistry(config=_config(tmp_path, 'log-db = "logs/calls.sqlite"\n'))
    try:
        execution_log(registry).flush()
        assert _mode(db) == 0o600
    finally:
        registry.close()


def _size(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def test_stored_fields_are_bounded_and_deleted_rows_give_space_back(tmp_path: Path) -> None:
    db = tmp_path / "calls.sqlite"
    registry = ToolRegistry(config=_config(tmp_path, f'log-db = "{db}"\nlog-max-rows = 5\n'))

    def explode(size: int) -> str:
        """Fail with a long message."""
        raise RuntimeError("x" * size)

    registry.register(explode)
    log = execution_log(registry)
    try:
        for i in range(40):
            registry.invoke("explode", {"size": 500_000}, call_id=f"call-{i}")
        log.flush()
        entry = log.last()
        assert entry is not None and entry.error is not None
        assert 8000 <= len(entry.error) < 8100 and entry.error.endswith("chars)")
    finally:
        registry.close()  # applies the retention: 5 rows stay
    rows = query_log(db)
    assert [r.call_id for r in rows] == [f"call-{i}" for i in range(35, 40)]
    assert all(len(r.error or "") < 8100 for r in rows)
    # 40 rows of 500 kB, cut to 8 kB, were written; 5 are left, and the file is about their size.
    assert _size(db) < 120_000, _size(db)


def test_a_field_limit_below_the_minimum_is_refused(tmp_path: Path) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match=r"inspector.*max-field-chars"):
        ToolRegistry(config=_config(tmp_path, "max-field-chars = 10\n"))

