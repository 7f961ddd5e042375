"""The private attributes of the SDK's ``ClientSession`` that the client uses, all of them in
``_sdk_private``: still there, still shaped as used, on a real session at both revisions. When
an SDK release changes them, these tests fail first and say which one."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolregistry_mcp._sdk_private import SDKChanged, send_unvalidated

MODERN = Path(__file__).parent / "servers" / "modern_server.py"


async def _with_session(mode: str, body: Any) -> Any:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(MODERN)])
    async with Client(stdio_client(params), mode=mode) as client:
        return await body(client.session)


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_the_private_attributes_used_are_there_and_work(mode: str, version: str,
                                                        no_orphans: None) -> None:
    async def body(session: Any) -> dict[str, Any]:
        stamp = session._stamp
        assert list(inspect.signature(stamp).parameters) == ["data", "opts"]
        data: dict[str, Any] = {"method": "tools/list", "params": {}}
        opts: dict[str, Any] = {}
        stamp(data, opts)
        assert opts["headers"]["mcp-protocol-version"] == version
        assert callable(session._dispatcher.send_raw_request)
        return await send_unvalidated(session, "tools/list", {}, timeout=30)

    listing = anyio.run(_with_session, mode, body)
    assert "add" in [tool["name"] for tool in listing["tools"]]


def test_a_session_without_them_is_a_clear_error() -> None:
    class Changed:
        """A session of an SDK that renamed what this client uses."""

    with pytest.raises(SDKChanged, match=r"ClientSession\._stamp"):
        anyio.run(send_unvalidated, Changed(), "tools/list", {})
