"""The policy plugin on every path a call takes besides the registry's own API: a registry
served over MCP (a real MCP client gets isError results), tools exported to LangChain, calls
made from code mode, and discover_tools, which does not reveal tools denied outright
(issue 20 item 6)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import toolregistry_codemode
import toolregistry_policy as tp
from toolregistry import ToolMetadata, ToolRegistry

SENT: list[str] = []


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    SENT.clear()
    reg = ToolRegistry(tool_discovery=True, default_timeout=20)

    @reg.register
    def delete_file(path: str) -> str:
        """Delete a file from the disk."""
        return f"deleted {path}"

    @reg.register
    def send_mail(to: str, body: str) -> str:
        """Send an email message to someone."""
        SENT.append(to)
        return f"sent to {to}"

    @reg.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @reg.register(metadata=ToolMetadata(defer=True))
    def wipe_disk(device: str) -> str:
        """Erase every file on a disk device."""
        return "wiped"

    tp.configure(reg, rules=[
        tp.Rule("deny", tools=["wipe_*"], reason="never"),
        tp.Rule("allow", tools=["delete_file"], arguments={"path": {"inside": ["/tmp"]}}),
        tp.Rule("deny", tools=["delete_file"], reason="only files under /tmp"),
        tp.Rule("ask", tools=["send_mail"], reason="mail leaves the company"),
    ])
    yield reg
    reg.close()


def test_served_over_mcp_the_client_gets_is_error(registry: ToolRegistry) -> None:
    from mcp import Client

    from toolregistry_mcp import build_server

    async def main() -> Any:
        async with Client(build_server(registry), mode="legacy") as client:
            listed = await client.list_tools()
            ok = await client.call_tool("delete_file", {"path": "/tmp/x"})
            denied = await client.call_tool("delete_file", {"path": "/etc/passwd"})
            pending = await client.call_tool("send_mail", {"to": "a@example.com", "body": "x"})
            return listed, ok, denied, pending

    listed, ok, denied, pending = anyio.run(main)
    assert "wipe_disk" not in [t.name for t in listed.tools]  # denied outright: hidden
    assert not ok.is_error and ok.content[0].text == "deleted /tmp/x"
    assert denied.is_error and "only files under /tmp" in denied.content[0].text
    assert pending.is_error and "waits for a person's approval" in pending.content[0].text
    assert SENT == []
    # The approval is in the serving registry's queue: a person there can let it run.
    policy = tp.get_policy(registry)
    [waiting] = policy.pending()
    assert waiting.request.arguments == {"to": "a@example.com", "body": "x"}
    policy.approve(waiting.id)
    assert policy.resume([waiting.id])[0].text == "sent to a@example.com"


def test_served_over_mcp_a_person_decides_while_the_server_serves(
        registry: ToolRegistry) -> None:
    """A blocking handler of a served registry is awaited on the server's loop: the server
    answers other requests meanwhile (the person here waits for one of them)."""
    import asyncio

    from mcp import Client

    from toolregistry_mcp import build_server

    order: list[str] = []

    async def main() -> Any:
        served = asyncio.Event()

        async def handler(request: Any) -> bool:
            order.append("asked")
            await served.wait()  # only if the server's loop goes on serving
            order.append("approved")
            return True

        tp.configure(registry, handler=handler, handler_timeout=15)
        results: dict[str, Any] = {}
        async with Client(build_server(registry), mode="legacy") as client:

            async def mail() -> None:
                results["mail"] = await client.call_tool("send_mail",
                                                         {"to": "b@example.com", "body": "x"})

            async def other() -> None:
                while "asked" not in order:
                    await asyncio.sleep(0.01)
                results["add"] = await client.call_tool("add", {"a": 2, "b": 3})
                order.append("added")
                served.set()

            async with anyio.create_task_group() as group:
                group.start_soon(mail)
                group.start_soon(other)
        return results

    results = anyio.run(main)
    assert order == ["asked", "added", "approved"]
    assert not results["add"].is_error and results["add"].content[0].text == "5"
    assert not results["mail"].is_error, results["mail"].content[0].text
    assert SENT == ["b@example.com"]


def test_langchain_export(registry: ToolRegistry) -> None:
    tools = {t.name: t for t in registry.to_langchain()}
    assert "wipe_disk" not in tools
    assert tools["delete_file"].invoke({"path": "/tmp/y"}) == "deleted /tmp/y"
    denied = tools["delete_file"].invoke({"path": "/home/me/z"})
    assert "only files under /tmp" in str(denied)
    pending = tools["send_mail"].invoke({"to": "b@example.com", "body": "y"})
    assert "waits for a person's approval" in str(pending)
    assert SENT == []


def test_calls_from_code_mode(registry: ToolRegistry) -> None:
    toolregistry_codemode.enable_code_mode(registry)
    code = ("a = await add(a=1, b=2)\n"
            "d = await delete_file(path='/etc/hosts')\n"
            "[a, d]")
    result = registry.invoke("run_code", {"code": code})
    text = result.text
    assert "only files under /tmp" in text, text
    calls = result.metadata.get("calls", [])
    assert [c["tool"] for c in calls][:2] == ["add", "delete_file"], calls
    mail = registry.invoke("run_code", {"code": "await send_mail(to='c@example.com', body='z')"})
    assert "waits for a person's approval" in mail.text
    assert SENT == []


def test_code_mode_calls_are_decided_on_the_values_the_tool_receives(
        registry: ToolRegistry) -> None:
    paid: list[float] = []

    @registry.register
    def transfer(amount: float, to: str) -> str:
        """Transfer money to someone."""
        paid.append(amount)
        return f"sent {amount}"

    tp.configure(registry, rules=[
        tp.Rule("deny", tools=["transfer"], arguments={"amount": {"min": 1000}},
                reason="too much"),
        tp.Rule("deny", tools=["add"], arguments={"a": {"one-of": [3]}}, reason="no threes")])
    toolregistry_codemode.enable_code_mode(registry)
    # A number the program read as text (the type checker lets a parsed value through).
    result = registry.invoke("run_code", {"code": "import json\nawait transfer("
                                                  "amount=json.loads('\"5000\"'), to='bob')"})
    assert "too much" in result.text, result.text
    result = registry.invoke("run_code", {"code": "import json\n"
                                                  "await add(a=json.loads('\"3\"'), b=1)"})
    assert "no threes" in result.text, result.text
    assert paid == []
    result = registry.invoke("run_code", {"code": "import json\nawait transfer("
                                                  "amount=json.loads('\"5\"'), to='bob')"})
    assert paid == [5.0], result.text


def test_discover_tools_does_not_reveal_denied_tools(registry: ToolRegistry) -> None:
    found = registry.invoke("discover_tools", {"query": "erase disk device files"})
    assert found.ok, found.text
    assert "wipe_disk" not in found.text
    tp.configure(registry, rules=[])  # nothing denies it any more: it is found again
    again = registry.invoke("discover_tools", {"query": "erase disk device files"})
    assert "wipe_disk" in json.dumps(again.content)


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


def _example(name: str, answers: str = "") -> Any:
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / name)], input=answers,
                          cwd=EXAMPLES.parent, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONIOENCODING="utf-8"), check=False)


def test_the_deferred_loop_example() -> None:
    proc = _example("policy_deferred.py")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "request 1: send_mail" in out and "-> approval_required" in out
    assert "request 2: send_mail -> ok: sent to cfo@example.com" in out
    assert "request 2: add -> ok: 1545" in out
    assert "resumed twice:" in out and "nothing runs twice" in out
    assert "outbox: ['cfo@example.com']" in out


@pytest.mark.parametrize(("answers", "outcome"), [("y\n", "ok"), ("n\nkeep it\n", "denied")])
def test_the_terminal_agent_example(answers: str, outcome: str) -> None:
    proc = _example("policy_terminal.py", answers)
    assert proc.returncode == 0, proc.stderr
    assert f"delete_file -> {outcome}:" in proc.stdout.splitlines()[1]
    assert "only files under /tmp may be deleted" in proc.stdout  # never asked
    assert proc.stderr.count("The model wants to call") == 1
    assert "its reason: the user asked to clean up old files" in proc.stderr
    assert "assistant: Cleaned up what you allowed." in proc.stdout
