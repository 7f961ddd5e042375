"""Two hosts on one PostgreSQL: two ``toolregistry serve --workers 2`` processes on their own
ports (standing in for two hosts behind a load balancer) with one ``store``, driven by the
``mcp`` SDK's clients. A budget admits exactly its calls across both; an approval decided
once runs once, wherever the call is sent again; ``toolregistry log`` shows every call; a
host killed with SIGKILL mid-call loses nothing committed, and once restarted runs what was
approved meanwhile; a tool list that changed on one host reaches a client of the other."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolregistry import ToolRegistry

from .conftest import free_port

pytestmark = pytest.mark.timeout(600)

TOKEN = "host-test-token-4b1d"

TOOLS = '''
import os
import time

__all__ = ["count", "ping", "send_mail", "slow"]


def ping() -> str:
    """Answer."""
    return "pong"


def count(tag: str) -> str:
    """Count one call."""
    return f"counted {tag}"


def send_mail(to: str) -> str:
    """Send a mail."""
    with open(os.environ["SENT_FILE"], "a", encoding="utf-8") as fh:
        fh.write(to + "\\n")
    return f"sent to {to}"


def slow(seconds: float) -> str:
    """Take a while."""
    with open(os.environ["STARTED_FILE"], "a", encoding="utf-8") as fh:
        fh.write("started\\n")
    time.sleep(seconds)
    return "slept"
'''

# An MCP server behind every worker, whose tools are `grow` and the names in a file all its
# copies share: a call of `grow` on one host's copy changes the list for every copy, but only
# that copy tells its client.
UPSTREAM = '''
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

NAMES = GROWN_FILE
bus = InMemorySubscriptionBus()
EMPTY = {"type": "object", "properties": {}}


def grown() -> list[str]:
    try:
        with open(NAMES, encoding="utf-8") as fh:
            return [line.strip() for line in fh if line.strip()]
    except FileNotFoundError:
        return []


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    tools = [types.Tool(name="grow", description="Add a tool.", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})]
    tools += [types.Tool(name=n, description=f"Grown {n}.", input_schema=EMPTY)
              for n in grown()]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
    if params.name == "grow":
        with open(NAMES, "a", encoding="utf-8") as fh:
            fh.write(params.arguments["name"] + "\\n")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(type="text", text="grown")])
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


server: Server[Any] = Server("upstream", on_list_tools=list_tools, on_call_tool=call_tool,
                             on_subscriptions_listen=ListenHandler(bus))


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(
            NotificationOptions(tools_changed=True)))


anyio.run(main)
'''

BUDGET = 6
APPROVAL = re.compile(r"\b(apr_[0-9a-f]{24})\b")


def _config(folder: Path, store: str) -> Path:
    (folder / "hosttools.py").write_text(TOOLS, encoding="utf-8")
    (folder / "upstream.py").write_text(
        f"GROWN_FILE = {str(folder / 'grown.txt')!r}\n" + UPSTREAM, encoding="utf-8")
    config = folder / "pyproject.toml"
    config.write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        store = "{store}"

        [[tool.toolregistry.sources]]
        kind = "python"
        target = "hosttools"

        [[tool.toolregistry.sources]]
        kind = "mcp"
        server = "upstream.py"
        namespace = "up"

        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        stateless = true
        workers = 2
        host = "127.0.0.1"
        auth = "bearer"
        tokens = [{{ name = "client", env = "HOST_TOKEN" }}]

        [tool.toolregistry.plugins.policy]
        rules = [{{ tools = ["send_*"], decision = "ask" }}]

        [tool.toolregistry.plugins.policy.budgets]
        tools = {{ count = {{ max-calls = {BUDGET} }} }}
    """), encoding="utf-8")
    return config


class Host:
    """One ``toolregistry serve --workers 2`` in a process group of its own."""

    def __init__(self, name: str, config: Path, port: int) -> None:
        self.name, self.config, self.port = name, config, port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log = config.parent / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        folder = self.config.parent
        env = {**os.environ, "PYTHONPATH": str(folder), "HOST_TOKEN": TOKEN,
               "SENT_FILE": str(folder / "sent.txt"),
               "STARTED_FILE": str(folder / "started.txt")}
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "toolregistry.cli", "--config", str(self.config),
                 "serve", "--port", str(self.port)], cwd=folder, env=env,
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        # The supervisor listens at once; a call is answered once a worker is ready.
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"host {self.name} exited with {self.proc.returncode}:\n"
                                     + self.log.read_text(errors="replace")[-3000:])
            try:
                if call(self, "ping") == (False, "pong"):
                    return
            except Exception:
                pass
            assert time.monotonic() < deadline, self.log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL to the supervisor and its workers at once, as a host that loses power."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        self._reap()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._reap()

    def _reap(self) -> None:
        """Nothing of the group left running (MCP children of killed workers included)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.write_text(self.log.read_text(errors="replace") + "\n-- restart --\n")


@contextmanager
def _hosts(config: Path) -> Iterator[tuple[Host, Host]]:
    a, b = Host("a", config, free_port()), Host("b", config, free_port())
    try:
        a.start()
        b.start()
        yield a, b
    except BaseException:
        for host in (a, b):
            if host.log.exists():
                print(f"--- host {host.name} ---\n" + host.log.read_text(errors="replace")[-4000:])
        raise
    finally:
        for host in (a, b):
            host.stop()


async def _call(url: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """One call on a client of its own (any worker of the host may take it)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        result = await client.call_tool(tool, arguments)
    return bool(result.is_error), "".join(getattr(p, "text", "") for p in result.content)


def call(host: Host, tool: str, **arguments: Any) -> tuple[bool, str]:
    return anyio.run(_call, host.url, tool, arguments)


def _logged(config: Path) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "toolregistry.cli", "--config", str(config),
                           "log", "--json", "-n", "1000"], capture_output=True, text=True,
                          timeout=120, cwd=config.parent, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _eventually(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_two_hosts_share_budgets_approvals_the_log_and_tool_list_changes(
        tmp_path: Path, postgres_url: str) -> None:
    config = _config(tmp_path, postgres_url)
    person = ToolRegistry(config=config)  # where a person decides: another process
    try:
        with _hosts(config) as (a, b):
            budget_approval_and_log(a, b, person, config)
            killed_mid_call(b, person, config)
            list_change_reaches_the_other_host(a, b)
    finally:
        person.close()


def budget_approval_and_log(a: Host, b: Host, person: ToolRegistry, config: Path) -> None:
    # A budget of 6 calls admits 6 of 10, whichever host takes them.
    answers = [call(host, "count", tag=str(i)) for i, host in enumerate([a, b] * 5)]
    admitted = [text for failed, text in answers if not failed]
    assert len(admitted) == BUDGET, answers
    assert all("budget" in text for failed, text in answers if failed), answers

    # Held on A, decided by a person, sent again on B: it runs there, once.
    failed, text = call(a, "send_mail", to="ceo@example.com")
    assert failed and "waits for a person's approval" in text, text
    approval = APPROVAL.search(text)
    assert approval is not None, text
    person.approvals.decide(approval.group(1), "approve", by="ann")
    assert call(b, "send_mail", to="ceo@example.com") == (False, "sent to ceo@example.com")
    failed, again = call(a, "send_mail", to="ceo@example.com")  # used: asked anew
    assert failed and "waits for a person's approval" in again, again
    assert (config.parent / "sent.txt").read_text().split() == ["ceo@example.com"]

    # Either host's calls are in the one execution log.
    def every_call() -> list[dict[str, Any]] | None:
        entries = _logged(config)
        counted = [e for e in entries if e.get("tool") == "count"]
        mails = [e for e in entries if e.get("tool") == "send_mail"]
        return entries if len(counted) == 10 and len(mails) == 3 else None

    _eventually(every_call, "every call in the log")


def killed_mid_call(b: Host, person: ToolRegistry, config: Path) -> None:
    started = config.parent / "started.txt"
    failed, text = call(b, "send_mail", to="cfo@example.com")
    assert failed and "waits for a person's approval" in text, text
    held = APPROVAL.search(text)
    assert held is not None, text
    before = len(_logged(config))
    outcome: dict[str, Any] = {}

    def slow_call() -> None:
        try:
            outcome["result"] = call(b, "slow", seconds=60)
        except BaseException as exc:  # the host went away under the call
            outcome["error"] = exc

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    _eventually(lambda: started.exists() and started.read_text().strip(), "the slow call")
    b.kill()
    caller.join(60)
    assert "result" not in outcome or outcome["result"][0], outcome

    # What was committed is there: the held approval, the spent budget, the log so far.
    assert held.group(1) in {x.id for x in person.approvals.list()}
    assert len(_logged(config)) >= before
    person.approvals.decide(held.group(1), "approve", by="ann")
    b.start()  # restarted: picks up what was approved while it was down
    assert call(b, "send_mail", to="cfo@example.com") == (False, "sent to cfo@example.com")
    failed, text = call(b, "count", tag="after")
    assert failed and "budget" in text, text


def list_change_reaches_the_other_host(a: Host, b: Host) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.client.subscriptions import ToolsListChanged
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def main() -> list[str]:
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) \
                as http, Client(streamable_http_client(b.url, http_client=http)) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            assert "up-sprout" not in before and "up-grow" in before, before
            async with client.listen(tools_list_changed=True) as sub:
                await anyio.sleep(0.5)  # the stream is open on B's worker
                assert await _call(a.url, "up-grow", {"name": "sprout"}) == (False, "grown")
                with anyio.fail_after(60):
                    async for event in sub:
                        if isinstance(event, ToolsListChanged):
                            break
            names: list[str] = []
            with anyio.fail_after(60):
                while "up-sprout" not in names:
                    names = [t.name for t in (await client.list_tools()).tools]
                    await anyio.sleep(0.2)
            return names

    names = anyio.run(main)
    assert "up-sprout" in names
    assert call(b, "up-sprout") == (False, "sprout")


def _serve_failing(config: Path, workers: int) -> subprocess.CompletedProcess[str]:
    """``toolregistry serve`` of ``config`` with ``workers``, expected to stop by itself."""
    folder = config.parent
    done = subprocess.run(
        [sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve",
         "--port", str(free_port()), "--workers", str(workers)], cwd=folder,
        capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "PYTHONPATH": str(folder), "HOST_TOKEN": TOKEN})
    assert done.returncode != 0, done.stderr
    return done


@pytest.mark.parametrize("workers", [1, 2])
def test_an_unreachable_database_stops_serve_before_it_listens(tmp_path: Path,
                                                               workers: int) -> None:
    nobody = free_port()
    config = _config(tmp_path, f"postgresql://toolregistry:s3cret@127.0.0.1:{nobody}/tr")
    done = _serve_failing(config, workers)
    assert f"toolregistry:***@127.0.0.1:{nobody}/tr" in done.stderr, done.stderr
    assert "cannot be reached" in done.stderr, done.stderr
    assert "s3cret" not in done.stderr + done.stdout
    # Refused by the command before anything listened, not by workers started behind it.
    assert "could not start" not in done.stderr and "Uvicorn running" not in done.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_a_store_of_a_newer_version_stops_serve_naming_the_versions(
        tmp_path: Path, postgres_url: str, workers: int) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE toolregistry_schema (component TEXT PRIMARY KEY, "
                     "version INTEGER NOT NULL)")
        conn.execute("INSERT INTO toolregistry_schema VALUES ('policy-approvals', 99)")
    config = _config(tmp_path, postgres_url)
    done = _serve_failing(config, workers)
    assert "policy-approvals schema version 99, newer than this version understands (1)" \
        in done.stderr, done.stderr
    # With workers, each worker's plugins open their tables as it builds its registry: the
    # refusal stops every worker and the command (before any request is served).
    assert workers == 1 or "every worker was stopped" in done.stderr, done.stderr
