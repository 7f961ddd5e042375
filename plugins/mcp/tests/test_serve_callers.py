"""Whom a served call is made for (``toolregistry.types.current_caller``): each client's
session over streamable HTTP, or its bearer token; the same for every call of one client,
different for another. Authorizers key approvals by it. A real ``toolregistry serve`` and the
SDK's streamable HTTP client."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio

TOOLS = '''
from toolregistry.types import current_caller

__all__ = ["whoami"]


def whoami() -> str:
    """Whom this call is for."""
    return str(current_caller())
'''


def _serve(tmp_path: Path, procs: Any, auth: str = "") -> tuple[Any, str]:
    port = procs.free_port()
    (tmp_path / "caller_tools.py").write_text(TOOLS, encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "caller_tools"
        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        port = {port}
    """) + auth, encoding="utf-8")
    return procs.listening(
        [sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve"], port,
        "/mcp", cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path),
                                   "TOKEN_A": "token-a-0123456789",
                                   "TOKEN_B": "token-b-0123456789"}), "/mcp"


async def _whoami(url: str, times: int, token: str | None = None) -> list[str]:
    """One client (one session) calling ``whoami`` ``times`` times."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        answers = []
        for _ in range(times):
            result = await client.call_tool("whoami", {})
            assert not result.is_error, result.content
            answers.append(result.content[0].text)
        return answers


def test_each_session_is_a_caller_of_its_own(tmp_path: Path, procs: Any,
                                             no_orphans: None) -> None:
    server, _ = _serve(tmp_path, procs)
    with server as url:
        first = anyio.run(_whoami, url, 2)
        second = anyio.run(_whoami, url, 1)
    assert first[0] == first[1] and first[0].startswith("mcp-session:")
    assert second[0].startswith("mcp-session:") and second[0] != first[0]


def test_a_bearer_token_is_the_caller_and_never_shown(tmp_path: Path, procs: Any,
                                                      no_orphans: None) -> None:
    tokens = textwrap.dedent("""
        auth = "bearer"
        [[tool.toolregistry.plugins.mcp.serve.tokens]]
        name = "a"
        env = "TOKEN_A"
        [[tool.toolregistry.plugins.mcp.serve.tokens]]
        name = "b"
        env = "TOKEN_B"
    """)
    server, _ = _serve(tmp_path, procs, tokens)
    with server as url:
        a1 = anyio.run(_whoami, url, 1, "token-a-0123456789")
        a2 = anyio.run(_whoami, url, 1, "token-a-0123456789")  # another session, same token
        b = anyio.run(_whoami, url, 1, "token-b-0123456789")
    assert a1 == a2 and a1[0].startswith("mcp-token:") and b[0] != a1[0]
    assert "token-a" not in a1[0] and "token-b" not in b[0]
