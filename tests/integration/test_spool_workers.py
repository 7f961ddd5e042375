"""A spooled output of ``toolregistry serve --workers 2`` is readable whichever worker the
reader's call lands on: every worker spools into its own folder of the one configured spool
directory, and a handle is looked up in all of them (a real supervisor, two worker processes,
the ``mcp`` SDK's client over streamable HTTP); and across two served "hosts" with spool
folders of their own, through the handle index on one PostgreSQL store."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .conftest import free_port, listening

TOOLS = '''
import os

from toolregistry.decorators import tool

__all__ = ["big"]


@tool(too_long_to_file=True)
def big(tag: int) -> str:
    """A long text naming the worker that made it."""
    return "".join(f"pid {os.getpid()} tag {tag} line {i:05d} {'x' * 40}\\n"
                   for i in range(2000))
'''

HANDLE = re.compile(r'handle "(sp_[0-9a-f]{16})"')


async def one_call(url: str, name: str, arguments: dict[str, Any]) -> str:
    """One call on a client of its own (its own connections, so any worker may take it)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), mode="legacy") as client:
        result = await client.call_tool(name, arguments)
    text = "".join(getattr(part, "text", "") for part in result.content)
    assert not result.is_error, text
    return text


def write_config(folder: Path, port: int, *, workers: int = 1, store: str | None = None
                 ) -> Path:
    """A served registry of ``TOOLS`` in ``folder``, spooling into ``folder/spool``."""
    folder.mkdir(exist_ok=True)
    (folder / "long_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")
    config = folder / "pyproject.toml"
    store_line = f'store = "{store}"' if store else ""
    config.write_text(textwrap.dedent(f'''
        [tool.toolregistry]
        {store_line}
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "long_tools"

        [tool.toolregistry.plugins.spool]
        threshold-tokens = 1000
        directory = "{folder / 'spool'}"

        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        stateless = true
        workers = {workers}
        host = "127.0.0.1"
        port = {port}
    '''), encoding="utf-8")
    return config


@contextlib.contextmanager
def serving(config: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``toolregistry serve`` of ``config`` until the block ends; its log printed when the
    block fails."""
    log = config.parent / "serve.log"
    try:
        with log.open("wb") as err, listening(
                [sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve"],
                port, timeout=90, cwd=config.parent, stderr=err,
                env={**os.environ, "PYTHONPATH": str(config.parent)}) as proc:
            yield proc
    except BaseException:
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:])
        raise


def test_every_worker_reads_every_workers_handles(tmp_path: Path) -> None:
    port = free_port()
    with serving(write_config(tmp_path, port, workers=2), port) as proc:
        spool_and_read_everywhere(f"http://127.0.0.1:{port}/mcp")
    assert proc.returncode == 0


def spool_and_read_everywhere(url: str) -> None:
    """Spool outputs until both workers wrote some (each call on a new client; the second
    worker may still be starting), then read every handle three times on new clients."""
    import anyio

    written: dict[str, str] = {}
    writers: set[str] = set()
    deadline = time.monotonic() + 90
    for tag in range(1000):
        if time.monotonic() > deadline:
            break
        text = anyio.run(one_call, url, "big", {"tag": tag})
        found = HANDLE.search(text)
        assert found, text[-400:]
        writer = text.split()[1]
        written[found.group(1)] = writer
        writers.add(writer)
        if len(writers) == 2 and tag >= 7:
            break
    assert len(writers) == 2, f"one worker served every call: {writers}"
    # Every handle reads back, three times each on new clients, wherever the call lands.
    for handle, writer in written.items():
        for _ in range(3):
            page = anyio.run(one_call, url, "read_tool_output",
                             {"handle": handle, "tail": 1})
            assert f"pid {writer} " in page and "line 01999" in page, page


async def call_result(url: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """One call on a client of its own: whether it failed, and its text."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), mode="legacy") as client:
        result = await client.call_tool(name, arguments)
    return bool(result.is_error), "".join(getattr(p, "text", "") for p in result.content)


def test_a_handle_spooled_on_one_host_reads_on_another(tmp_path: Path,
                                                       postgres_url: str) -> None:
    """Two ``toolregistry serve`` processes on different ports, their own spool folders (no
    shared path, as on two hosts), one PostgreSQL store: a handle from A reads through B's
    reader tool; a bad handle and an unknown one answer errors that say so."""
    import anyio

    ports = free_port(), free_port()
    urls = [f"http://127.0.0.1:{port}/mcp" for port in ports]
    with contextlib.ExitStack() as stack:
        for name, port in zip(("a", "b"), ports):
            stack.enter_context(serving(write_config(tmp_path / name, port,
                                                     store=postgres_url), port))
        text = anyio.run(one_call, urls[0], "big", {"tag": 1})
        found = HANDLE.search(text)
        assert found, text[-400:]
        writer = text.split()[1]
        page = anyio.run(one_call, urls[1], "read_tool_output",
                         {"handle": found.group(1), "offset": 1995, "limit": 2})
        assert f"pid {writer} tag 1 line 01995" in page and "line 01996" in page, page
        failed, said = anyio.run(call_result, urls[1], "read_tool_output",
                                 {"handle": "sp_00000000000000aa"})
        assert failed and "no spooled output 'sp_00000000000000aa'" in said, said
        failed, said = anyio.run(call_result, urls[1], "read_tool_output",
                                 {"handle": "../etc/passwd"})
        assert failed and "handle" in said, said
