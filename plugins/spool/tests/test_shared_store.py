"""The spool on the registry's store: a handle written by one process reads from another
(SQLite: same host, the text stays in the writer's file; PostgreSQL: the text is in the store,
so two hosts need no shared folder), retention applies whichever process runs, and bad or
expired handles answer clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import toolregistry_spool as ts
from toolregistry import ToolMetadata, ToolRegistry
from toolregistry.errors import ToolCallError

# A registry in its own process: spools one output of `lines` lines, prints the handle, then
# (with `stay`) waits for a line on stdin before it closes, as a running worker would.
WRITER = textwrap.dedent('''
    import json, sys
    from toolregistry import ToolMetadata, ToolRegistry

    config, lines, stay = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "stay"
    registry = ToolRegistry(config=config)

    def big() -> str:
        """Return a long text."""
        return "".join(f"line {i:07d} {'x' * 40}\\n" for i in range(lines))

    registry.register(big, metadata=ToolMetadata(too_long_to_file=True))
    info = registry.invoke("big", {}).metadata["spool"]
    print(json.dumps(info), flush=True)
    if stay:
        sys.stdin.readline()
    registry.close()
''')


@pytest.fixture
def store(any_store_url: str) -> str:
    return any_store_url


def config(folder: Path, store: str, **spool: Any) -> Path:
    """A configuration with ``store`` and a spool table (each process its own folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    options = {"directory": str(folder / "spool"), "threshold-tokens": 1000, **spool}
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in options.items())
    path = folder / "pyproject.toml"
    path.write_text(f'[tool.toolregistry]\nstore = "{store}"\n'
                    f"[tool.toolregistry.plugins.spool]\n{table}", encoding="utf-8")
    return path


class Writer:
    """A writer process that stays up until :meth:`stop` (a running worker)."""

    def __init__(self, cfg: Path, lines: int = 2000, stay: bool = True) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cfg), str(lines), "stay" if stay else "exit"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(self.proc.communicate(timeout=60)[1])
        self.info: dict[str, Any] = json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.communicate("\n", timeout=60)
        else:
            self.proc.communicate()


def test_a_handle_from_another_process_reads_here(tmp_path: Path, store: str) -> None:
    writer = Writer(config(tmp_path / "a", store))
    reader = ToolRegistry(config=config(tmp_path / "b", store))
    try:
        handle = writer.info["handle"]
        page = ts.read_output(reader, handle, offset=1990, limit=5)
        assert "line 0001990" in page and "line 0001994" in page
        reader.register(lambda: "x", name="small", metadata=ToolMetadata(too_long_to_file=True))
        result = reader.invoke("read_tool_output", {"handle": handle, "grep": "line 0001999"})
        assert result.ok and "line 0001999" in result.text, result.text
    finally:
        writer.stop()
        reader.close()


def test_a_server_keeps_the_text_after_the_writer_exits(tmp_path: Path,
                                                        postgres_url: str) -> None:
    writer = Writer(config(tmp_path / "a", postgres_url), stay=False)
    writer.stop()
    assert not Path(writer.info["path"]).exists()  # the writer's folder went with it
    reader = ToolRegistry(config=config(tmp_path / "b", postgres_url))
    try:
        assert "line 0000007" in ts.read_output(reader, writer.info["handle"], offset=7,
                                                limit=1)
    finally:
        reader.close()


def test_a_sqlite_index_forgets_the_outputs_of_a_closed_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/state.db"
    writer = Writer(config(tmp_path / "a", store), stay=False)
    writer.stop()
    reader = ToolRegistry(config=config(tmp_path / "b", store))
    try:
        with pytest.raises(ToolCallError, match="no spooled output"):
            ts.read_output(reader, writer.info["handle"])
    finally:
        reader.close()


def test_an_expired_handle_of_another_process_says_so(tmp_path: Path, store: str) -> None:
    writer = Writer(config(tmp_path / "a", store, **{"max-age-seconds": 600}))
    reader = ToolRegistry(config=config(tmp_path / "b", store, **{"max-age-seconds": 0.5}))
    try:
        time.sleep(1.0)
        with pytest.raises(ToolCallError, match=r"has expired: written \d+ s ago, and "
                                                r"retention keeps outputs 0\.5 s"):
            ts.read_output(reader, writer.info["handle"])
    finally:
        writer.stop()
        reader.close()


def test_retention_is_applied_by_whichever_process_writes(tmp_path: Path, store: str) -> None:
    first = Writer(config(tmp_path / "a", store))
    # The second writer's limit admits its own output only: the first one's goes, from the
    # index and (same host) from the disk, although its process is still running.
    second = Writer(config(tmp_path / "b", store, **{"max-total-bytes": 100_000}))
    reader = ToolRegistry(config=config(tmp_path / "c", store))
    try:
        assert first.info["size"] + second.info["size"] > 100_000
        if store.startswith("sqlite"):
            assert not Path(first.info["path"]).exists()
        with pytest.raises(ToolCallError, match="no spooled output"):
            ts.read_output(reader, first.info["handle"])
        assert "line 0000000" in ts.read_output(reader, second.info["handle"], limit=1)
    finally:
        first.stop()
        second.stop()
        reader.close()


def test_bad_handles_are_named(tmp_path: Path, store: str) -> None:
    reader = ToolRegistry(config=config(tmp_path / "b", store))
    try:
        with pytest.raises(ToolCallError, match=r"'sp_123' is not a spool handle"):
            ts.read_output(reader, "sp_123")
        with pytest.raises(ToolCallError, match="no spooled output 'sp_00000000000000aa'"):
            ts.read_output(reader, "sp_00000000000000aa")
    finally:
        reader.close()
