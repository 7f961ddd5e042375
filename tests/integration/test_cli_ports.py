"""The plugins' commands take ``--port`` as a port number: anything else is a usage error
(exit 2, one line naming the option), never the command failing on it (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("command", ["inspect", "serve"])
@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_bad_port_is_a_usage_error(tmp_path: Path, command: str, port: str) -> None:
    exe = Path(sys.executable).parent / "toolregistry"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    args = [str(exe), command, "--port", port]
    if command == "serve":
        args += ["--transport", "streamable-http"]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "--port" in proc.stderr and repr(port) in proc.stderr, proc.stderr
