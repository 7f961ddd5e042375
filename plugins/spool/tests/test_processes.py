"""Spooled outputs outlive the process that wrote them: any registry configured with the same
spool directory reads a handle until retention removes it (a resumed agent thread, another
worker of a served registry), and nothing outside the spool folders can be read that way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import toolregistry_spool as ts
from toolregistry import ToolMetadata
from toolregistry.errors import ToolCallError

from .conftest import MakeRegistry, write_config

WRITER = textwrap.dedent('''
    import json, sys
    from toolregistry import ToolMetadata, ToolRegistry

    registry = ToolRegistry(config=sys.argv[1])

    def big() -> str:
        """Return a long text."""
        return "".join(f"line {i:07d} {'x' * 40}\\n" for i in range(2000))

    registry.register(big, metadata=ToolMetadata(too_long_to_file=True))
    info = registry.invoke("big", {}).metadata["spool"]
    registry.close()
    print(json.dumps({"handle": info["handle"], "path": info["path"]}))
''')


def spool_in_another_process(tmp_path: Path, **options: Any) -> dict[str, str]:
    """Run a registry in a child process that spools one output, closes and exits."""
    folder = tmp_path / "writer"
    folder.mkdir()
    config = write_config(folder, threshold_tokens=1000, **options)
    done = subprocess.run([sys.executable, "-c", WRITER, str(config)], capture_output=True,
                          text=True, timeout=120, check=True)
    info: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return info


def test_kept_handle_is_read_by_a_new_process(tmp_path: Path,
                                              make_registry: MakeRegistry) -> None:
    info = spool_in_another_process(tmp_path, directory=str(tmp_path / "spool"), keep=True)
    assert Path(info["path"]).exists()
    registry = make_registry()
    page = ts.read_output(registry, info["handle"], offset=1990, limit=5)
    assert "line 0001990" in page and "line 0001994" in page
    # through the model's API too (the reader is there once a tool may spool)
    registry.register(lambda: "x", name="small", metadata=ToolMetadata(too_long_to_file=True))
    result = registry.invoke("read_tool_output", {"handle": info["handle"], "tail": 1})
    assert result.ok and "line 0001999" in result.text


def test_handle_of_a_closed_unkept_process_is_gone(tmp_path: Path,
                                                   make_registry: MakeRegistry) -> None:
    info = spool_in_another_process(tmp_path, directory=str(tmp_path / "spool"))
    assert not Path(info["path"]).exists()
    with pytest.raises(ToolCallError, match="no spooled output"):
        ts.read_output(make_registry(), info["handle"])


def test_another_spool_directory_is_not_searched(tmp_path: Path,
                                                 make_registry: MakeRegistry) -> None:
    info = spool_in_another_process(tmp_path, directory=str(tmp_path / "one"), keep=True)
    with pytest.raises(ToolCallError, match="no spooled output"):
        ts.read_output(make_registry(directory=str(tmp_path / "two")), info["handle"])


def test_retention_applies_to_outputs_of_other_processes(tmp_path: Path,
                                                         make_registry: MakeRegistry) -> None:
    info = spool_in_another_process(tmp_path, directory=str(tmp_path / "spool"), keep=True)
    past = time.time() - 3600
    os.utime(info["path"], (past, past))
    with pytest.raises(ToolCallError, match="retention"):
        ts.read_output(make_registry(max_age_seconds=60), info["handle"])


def test_planted_files_in_the_base_directory_are_not_read(tmp_path: Path,
                                                          make_registry: MakeRegistry) -> None:
    base = tmp_path / "spool"
    base.mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "sp_00000000000000aa.txt").write_text("TOP SECRET\n")
    os.symlink(secret, base / "spool-evil1234")  # a spool folder that is a symlink
    real = base / "spool-real1234"
    real.mkdir()
    os.symlink(secret / "sp_00000000000000aa.txt", real / "sp_00000000000000bb.txt")
    os.link(secret / "sp_00000000000000aa.txt", real / "sp_00000000000000cc.txt")
    (base / "other").mkdir()  # not a spool folder's name
    (base / "other" / "sp_00000000000000dd.txt").write_text("TOP SECRET\n")
    registry = make_registry()
    for handle in ("sp_00000000000000aa", "sp_00000000000000bb", "sp_00000000000000cc",
                   "sp_00000000000000dd", "../secret/sp_00000000000000aa"):
        with pytest.raises(ToolCallError) as caught:
            ts.read_output(registry, handle)
        assert "TOP SECRET" not in str(caught.value)
