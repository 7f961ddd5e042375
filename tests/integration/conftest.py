"""Shared fixtures of the integration tests: the demo HTTP service of examples/, server
processes on a free loopback port (Debian's chromium is the ``chromium`` fixture of
``toolregistry.testing``)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def _private_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches written by default (discovery's embeddings, on where its semantic extra is
    installed) go to the test's folder, never to the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    """The demo pet service (examples/demo_api.py) on 127.0.0.1, for one test module."""
    sys.path.insert(0, str(EXAMPLES))
    from demo_api import start

    server, url = start()
    yield url
    server.shutdown()
    server.server_close()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def listening(args: list[str], port: int, timeout: float = 30, **popen: Any
              ) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``args``, a server that listens on 127.0.0.1:``port``; yield the process once it
    accepts connections; stop it (SIGTERM, then SIGKILL) whatever happens."""
    popen.setdefault("stdout", subprocess.DEVNULL)
    popen.setdefault("stderr", subprocess.DEVNULL)
    proc = subprocess.Popen(args, **popen)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{args[:4]} exited with {proc.returncode} before listening")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
