"""Approvals of a served registry: a real ``toolregistry serve`` over streamable HTTP, two
clients (the ``mcp`` SDK's), the policy's SQLite approvals store shared with this process,
where a person decides. Each client's held call gets an approval of its own; an approval runs
only the call of the client it was given for; a later identical request is asked again, also
after the server restarted."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from toolregistry import ToolRegistry

from .conftest import free_port, listening

TOOLS = '''
import os

__all__ = ["send_mail"]


def send_mail(to: str, body: str) -> str:
    """Send a mail."""
    with open(os.environ["SENT_FILE"], "a", encoding="utf-8") as fh:
        fh.write(to + "\\n")
    return f"sent to {to}"
'''
MAIL = {"to": "ceo@example.com", "body": "hi"}


@contextmanager
def _served(config: Path, port: int, sent: Path) -> Iterator[str]:
    """``toolregistry serve`` of ``config``, its tools writing what they send to ``sent``."""
    with listening([sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve"],
                   port, 60, cwd=config.parent,
                   env={**os.environ, "PYTHONPATH": str(config.parent), "SENT_FILE": str(sent)}):
        yield f"http://127.0.0.1:{port}/mcp"


def write_served(folder: Path, port: int, rule: str = "") -> tuple[Path, Path]:
    """(the configuration serving the mail tools on ``port``, the policy asking before every
    ``send_*`` call with ``rule``'s extra keys; the file they write what they send to)."""
    (folder / "mailtools.py").write_text(TOOLS, encoding="utf-8")
    config = folder / "pyproject.toml"
    config.write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "mailtools"
        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        port = {port}
        [tool.toolregistry.plugins.policy]
        store = "approvals.db"
        rules = [{{ tools = ["send_*"], decision = "ask"{rule} }}]
    """), encoding="utf-8")
    sent = folder / "sent.txt"
    sent.write_text("", encoding="utf-8")
    return config, sent


def _mail(client: Any) -> Any:
    return client.call_tool("send_mail", MAIL)


def _text(result: Any) -> str:
    return str(result.content[0].text)


def test_each_client_gets_its_own_approval_and_only_its_call_runs(tmp_path: Path) -> None:
    port = free_port()
    config, sent = write_served(tmp_path, port)
    person = ToolRegistry(config=config)  # where a person decides: another process
    approvals = person.approvals
    try:
        with _served(config, port, sent) as url:
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async def main() -> dict[str, Any]:
                seen: dict[str, Any] = {}
                async with Client(streamable_http_client(url), mode="legacy") as a, \
                        Client(streamable_http_client(url), mode="legacy") as b:
                    seen["a1"] = await _mail(a)
                    seen["b1"] = await _mail(b)
                    held = {x.request.caller: x for x in approvals.list()}
                    assert len(held) == 2, held  # one approval per client
                    mine = next(x for x in held.values()
                                if x.id in _text(seen["a1"]))
                    approvals.decide(mine.id, "approve", by="ann")
                    seen["b2"] = await _mail(b)  # B's identical call: not on A's approval
                    seen["a2"] = await _mail(a)  # A sends it again: it runs, once
                    seen["a3"] = await _mail(a)  # and once more: asked again
                    seen["mine"] = approvals.get(mine.id)
                return seen

            seen = anyio.run(main)
        for key in ("a1", "b1", "b2", "a3"):
            assert seen[key].is_error and "waits for a person's approval" in _text(
                seen[key]), (key, _text(seen[key]))
        assert not seen["a2"].is_error and _text(seen["a2"]) == "sent to ceo@example.com"
        assert seen["mine"].status == "done"
        assert sent.read_text().split() == ["ceo@example.com"]
        pending = approvals.list()
        assert len(pending) == 2  # B's first request and A's third
        assert len({x.request.caller for x in pending}) == 2

        # After a restart, the same request from a new session is asked, not refused.
        with _served(config, port, sent) as url:
            async def again() -> Any:
                async with Client(streamable_http_client(url), mode="legacy") as c:
                    return await _mail(c)

            later = anyio.run(again)
        assert later.is_error and "waits for a person's approval" in _text(later), _text(later)
        assert "does not run twice" not in _text(later)
        assert len(approvals.list()) == 3
        assert sent.read_text().split() == ["ceo@example.com"]
    finally:
        person.close()
