"""A served registry in two worker processes (``toolregistry serve`` with ``workers = 2``, the
table of docs/mcp.md "Several processes behind a load balancer"): a real MCP client's calls
are served by both workers, with the same authentication and scoping; a killed worker is
replaced; shutdown leaves no process behind; a worker that cannot start stops the command;
what cannot work across processes is refused before anything starts."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"
TOKENS = {"TOOLS_TOKEN": "agents-secret-0123456789", "TOOLS_READER_TOKEN": "reader-secret-42"}
TOOLS = '''
import os

__all__ = ["whoami", "secret"]


def whoami() -> int:
    """The process id of the worker serving the call."""
    return os.getpid()


def secret() -> int:
    """A tool the reader token does not see (answers its worker's process id too)."""
    return os.getpid()
'''


def documented_table() -> str:
    if not DOCS.exists():  # the plugin tested outside this repository
        pytest.skip(f"{DOCS} not present")
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if "workers = 2" in b)


def write_config(folder: Path, port: int, table: str | None = None, source: str = "pid_tools"
                 ) -> Path:
    (folder / "pid_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")
    config = folder / "pyproject.toml"
    table = (table or documented_table()).replace("port = 8765", f"port = {port}")
    config.write_text("[tool.toolregistry]\n[[tool.toolregistry.sources]]\nkind = \"python\"\n"
                      f"target = \"{source}\"\n" + table, encoding="utf-8")
    return config


def live(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def workers_of(pid: int) -> set[int]:
    """The live worker processes the supervisor ``pid`` runs (not multiprocessing's resource
    tracker, its other child)."""
    found = set()
    try:
        children = psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return found
    for child in children:
        with contextlib.suppress(psutil.Error):
            if live(child) and "spawn_main" in " ".join(child.cmdline()):
                found.add(child.pid)
    return found


def two_workers(pid: int, without: int | None = None) -> set[int] | None:
    """The supervisor's two workers once it has two (none of them ``without``)."""
    found = workers_of(pid)
    return found if len(found) == 2 and without not in found else None


def wait_for(predicate: Any, what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def supervisor(config: Path, procs: Any, port: int, *extra: str, **env: str
               ) -> Iterator[subprocess.Popen[bytes]]:
    """``toolregistry serve`` of ``config`` (workers from its table); stopped with SIGTERM."""
    log = config.parent / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve", *extra],
            cwd=config.parent, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, **TOKENS, "PYTHONPATH": str(config.parent), **env})
    try:
        procs.wait_for_port(port, proc, timeout=90)
        yield proc
    except BaseException:
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:])
        raise
    finally:
        procs.stop(proc)


async def _calls(url: str, token: str, tool: str, clients: int, per_client: int) -> list[Any]:
    """``clients`` MCP clients (the SDK's streamable HTTP client, each on connections of its
    own) making ``per_client`` calls each, concurrently; their results."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    results: list[Any] = []

    async def one() -> None:
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            for _ in range(per_client):
                results.append(await client.call_tool(tool, {}))

    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(one)
    return results


def served_by(url: str, token: str, want: set[int], rounds: int = 30) -> set[int]:
    """Process ids that served ``whoami``, calling in rounds until ``want`` all answered."""
    import anyio

    seen: set[int] = set()
    for _ in range(rounds):
        for result in anyio.run(_calls, url, token, "whoami", 6, 3):
            assert not result.is_error, result.content[0].text
            seen.add(int(result.content[0].text))
        if want <= seen:
            break
    return seen


def test_two_workers_serve_calls_survive_a_kill_and_stop_cleanly(
        tmp_path: Path, procs: Any, web: Any, no_orphans: None) -> None:
    import anyio

    port = procs.free_port()
    config = write_config(tmp_path, port)
    url = f"http://127.0.0.1:{port}/mcp"
    with supervisor(config, procs, port) as proc:
        workers = wait_for(lambda: two_workers(proc.pid), "two worker processes")
        assert proc.pid not in workers
        # Many calls from a real MCP client reach both workers (and only them).
        seen = served_by(url, TOKENS["TOOLS_TOKEN"], workers)
        assert seen == workers, f"calls served by {seen}, workers are {workers}"
        # Authentication and scoping hold in every worker: the reader's calls of whoami reach
        # both workers; every call of the tool it cannot see is refused, wherever it lands.
        assert served_by(url, TOKENS["TOOLS_READER_TOKEN"], workers) == workers
        refused = anyio.run(_calls, url, TOKENS["TOOLS_READER_TOKEN"], "secret", 6, 3)
        assert all(r.is_error and "no tool named 'secret'" in r.content[0].text
                   for r in refused)
        # DNS-rebinding checks too: a foreign Host or Origin is refused on every connection.
        for headers in [{"Host": "evil.example"}, {"Origin": "http://evil.example"}] * 5:
            status, _, _ = web.post("127.0.0.1", port, web.INIT, headers={
                "Authorization": f"Bearer {TOKENS['TOOLS_TOKEN']}", **headers})
            assert status == (421 if "Host" in headers else 403), (headers, status)
        with ToolRegistry(config=Path(__file__).parent / "servers" / "empty.toml") as client, \
                pytest.raises(Exception, match="answered HTTP 401 Unauthorized"):
            client.register_from_mcp(url, namespace="n", headers={"Authorization": "Bearer wrong"})

        # A worker killed is replaced (uvicorn's supervisor starts a new one), and the
        # new one serves calls.
        victim = sorted(workers)[0]
        os.kill(victim, signal.SIGKILL)
        replaced = wait_for(lambda: two_workers(proc.pid, without=victim),
                            "a replacement worker")
        newcomer = (replaced - workers).pop()
        assert newcomer in served_by(url, TOKENS["TOOLS_TOKEN"], replaced)

        # Shutdown: SIGTERM to the command stops every worker, then the command.
        everyone = [psutil.Process(p) for p in replaced]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    _, alive = psutil.wait_procs(everyone, timeout=30)
    assert not [p.pid for p in alive if live(p)], "workers left running"
    assert not psutil.pid_exists(victim) or not live(psutil.Process(victim))


def test_a_worker_that_cannot_start_stops_the_command(tmp_path: Path, procs: Any,
                                                     no_orphans: None) -> None:
    port = procs.free_port()
    config = write_config(tmp_path, port, source="pid_tools_missing:whoami")
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolregistry.cli", "--config", str(config), "serve"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, **TOKENS, "PYTHONPATH": str(tmp_path)})
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        procs.stop(proc)
    text = err.decode("utf-8", "replace")
    assert proc.returncode == 2, text
    assert "pid_tools_missing" in text and "cannot start" in text
    assert text.strip().splitlines()[-1].startswith("toolregistry: serve: worker process")


# --------------------------------------------------------------------------- refused early
def _refused(tmp_path: Path, table: str, match: str, **options: Any) -> None:
    from toolregistry_mcp import serve_workers

    config = write_config(tmp_path, 0, table=table)
    with pytest.raises(ConfigError, match=match):
        serve_workers(config, **options)


BASE = '[tool.toolregistry.plugins.mcp.serve]\ntransport = "streamable-http"\n'


@pytest.mark.parametrize(("table", "options", "match"), [
    ('[tool.toolregistry.plugins.mcp.serve]\nstateless = true\n', {"workers": 3},
     r"workers = 3 needs transport = 'streamable-http'"),
    (BASE + 'stateless = true\nworkers = 2\nevent-store = "memory"\n', {},
     r"event-store cannot be used with workers = 2"),
    (BASE + 'workers = 2\nevent-store = "memory"\n', {},
     r"event-store cannot be used with workers = 2"),
    (BASE + "stateless = true\n", {"workers": 2, "token_verifier": object()},
     r"JSON-like values"),
    (BASE + "stateless = true\nworkers = 0\n", {}, r"invalid option: workers:"),
    (BASE + 'stateless = true\nworkers = 2\nhost = "0.0.0.0"\n', {},
     r"refusing to listen on '0.0.0.0' without authentication"),
    (BASE + 'stateless = true\nworkers = 2\nauth = "bearer"\n'
     '[[tool.toolregistry.plugins.mcp.serve.tokens]]\nname = "a"\nenv = "UNSET_TOKEN_VAR_X"\n',
     {}, r"UNSET_TOKEN_VAR_X"),
    (BASE + 'stateless = true\nworkers = 2\ntls-cert = "no-cert.pem"\ntls-key = "no-key.pem"\n',
     {}, r"TLS certificate .*no-cert.pem"),
])
def test_what_cannot_work_across_processes_is_refused_before_anything_starts(
        tmp_path: Path, table: str, options: dict[str, Any], match: str,
        no_orphans: None) -> None:
    _refused(tmp_path, table, match, **options)


def test_a_busy_port_is_refused_before_any_worker_starts(tmp_path: Path, procs: Any,
                                                         no_orphans: None) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _refused(tmp_path, BASE + f"stateless = true\nworkers = 2\nport = {port}\n",
                 rf"cannot listen on 127.0.0.1:{port}")


def test_the_serve_table_expands_variables(tmp_path: Path, procs: Any, no_orphans: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("SERVE_PORT", str(port))
        _refused(tmp_path, BASE + 'stateless = true\nworkers = 2\nport = "${SERVE_PORT}"\n',
                 rf"cannot listen on 127.0.0.1:{port}")


def test_serve_of_a_registry_object_refuses_workers(tmp_path: Path) -> None:
    from toolregistry_mcp import serve

    with ToolRegistry(config=Path(__file__).parent / "servers" / "empty.toml") as registry, \
            pytest.raises(ConfigError, match="a registry object cannot be shared by processes"):
        serve(registry, "streamable-http", stateless=True, workers=2)


def test_tls_and_command_line_options_in_every_worker(tmp_path: Path, procs: Any, web: Any,
                                                      no_orphans: None) -> None:
    """The options given on the command line (--workers, --stateless, --json-response,
    --token-env, TLS from the table) reach every worker: plain JSON-RPC over HTTPS, one
    connection a call, answered by both workers."""
    import json
    import ssl

    cert, key = web.self_signed(tmp_path)
    port = procs.free_port()
    config = write_config(tmp_path, port, table=(
        '[tool.toolregistry.plugins.mcp.serve]\n'
        f'port = {port}\ntls-cert = "{cert.name}"\ntls-key = "{key.name}"\n'))
    context = ssl.create_default_context(cafile=str(cert))
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}}}
    with supervisor(config, procs, port, "--transport", "streamable-http", "--workers", "2",
                    "--stateless", "--json-response", "--token-env", "TOOLS_TOKEN") as proc:
        workers = wait_for(lambda: two_workers(proc.pid), "two worker processes")
        seen: set[int] = set()
        for _ in range(200):
            status, headers, text = web.post(
                "127.0.0.1", port, call, context=context,
                headers={"Authorization": f"Bearer {TOKENS['TOOLS_TOKEN']}"})
            assert status == 200 and headers["content-type"].startswith("application/json")
            seen.add(int(json.loads(text)["result"]["content"][0]["text"]))
            if seen == workers:
                break
        assert seen == workers
        assert web.post("127.0.0.1", port, call, context=context)[0] == 401
        with pytest.raises(ssl.SSLError):  # a client that does not trust the certificate
            web.post("127.0.0.1", port, call, context=ssl.create_default_context())


ASKING = '''
import os
from typing import Annotated, Any

import mcp_types as types
from toolregistry import Injected

__all__ = ["confirm"]


def confirm(request: Annotated[Any, Injected("mcp_request")]) -> Any:
    """Asks the user to confirm; the state names the worker that asked."""
    params = request.params or {}
    if not params.get("inputResponses"):
        return types.InputRequiredResult.model_validate({
            "inputRequests": {"ok": {"method": "elicitation/create", "params": {
                "message": "Sure?", "requestedSchema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}}}}},
            "requestState": str(os.getpid())})
    return f"{params['requestState']} {os.getpid()}"
'''


async def _confirmations(url: str, times: int) -> list[tuple[int, int]]:
    """(the worker that asked, the worker that answered) of ``times`` calls of ``confirm``
    from a 2026-07-28 client on a new connection for every request."""
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def yes(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"ok": True})

    out = []
    async with create_mcp_http_client(headers={"Connection": "close"}) as http, \
            Client(streamable_http_client(url, http_client=http), elicitation_callback=yes) as c:
        for _ in range(times):
            result = await c.call_tool("confirm", {})
            assert not result.is_error, result.content
            asked, answered = result.content[0].text.split()
            out.append((int(asked), int(answered)))
    return out


def test_input_asked_by_one_worker_is_answered_by_another(tmp_path: Path, procs: Any,
                                                          no_orphans: None) -> None:
    """The requestState one worker seals is accepted by the other: the supervisor gives its
    workers one key."""
    import anyio

    port = procs.free_port()
    (tmp_path / "asking_tools.py").write_text(ASKING, encoding="utf-8")
    config = write_config(tmp_path, port, textwrap.dedent(f"""
        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        stateless = true
        workers = 2
        port = {port}
    """), source="asking_tools")
    url = f"http://127.0.0.1:{port}/mcp"
    with supervisor(config, procs, port) as proc:
        workers = wait_for(lambda: two_workers(proc.pid), "two worker processes")
        crossed = []
        for _ in range(10):
            pairs = anyio.run(_confirmations, url, 6)
            assert {p for pair in pairs for p in pair} <= workers
            crossed += [pair for pair in pairs if pair[0] != pair[1]]
            if crossed:
                break
        assert crossed, "every retry reached the worker that asked"


# --------------------------------------------------------------------------- sessions
SESSIONS = """
[tool.toolregistry.plugins.mcp.serve]
transport = "streamable-http"
workers = 2
port = {port}
auth = "bearer"

[[tool.toolregistry.plugins.mcp.serve.tokens]]
name = "agents"
env = "TOOLS_TOKEN"
"""


async def _sessions(url: str, count: int, change: Any) -> list[tuple[list[int], int, set[str]]]:
    """``count`` sessions of the SDK's client at 2025-11-25, open at once, each on a new
    connection for every request (so that they reach either worker): for each, the workers
    that answered its calls of ``whoami``, the list changes it heard after ``change()`` ran
    (in a thread, again until every session heard one), the tools it then lists."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    heard = [0] * count
    out: list[tuple[list[int], int, set[str]]] = [([], 0, set())] * count
    ready = [False] * count
    done = anyio.Event()

    async def one(i: int) -> None:
        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                heard[i] += 1

        headers = {"Authorization": f"Bearer {TOKENS['TOOLS_TOKEN']}", "Connection": "close"}
        async with create_mcp_http_client(headers=headers) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy",
                       message_handler=on_message) as client:
            pids = []
            for _ in range(4):
                result = await client.call_tool("whoami", {})
                assert not result.is_error, result.content
                pids.append(int(getattr(result.content[0], "text", "")))
            ready[i] = True
            await done.wait()
            with anyio.fail_after(60):
                while True:
                    names = {t.name for t in (await client.list_tools()).tools}
                    if "secret" not in names:
                        break
                    await anyio.sleep(0.1)
            out[i] = (pids, heard[i], names)

    async with anyio.create_task_group() as group:
        for i in range(count):
            group.start_soon(one, i)
        with anyio.fail_after(120):
            while not all(ready):
                await anyio.sleep(0.05)
            for round_ in range(20):
                await anyio.to_thread.run_sync(change, round_)
                with anyio.move_on_after(3):
                    while not all(heard):
                        await anyio.sleep(0.05)
                if all(heard):
                    break
        done.set()
    return out


def _raw_session(web: Any, port: int) -> tuple[str, int]:
    """A session opened with a raw POST, and the worker that holds it (from its id)."""
    status, headers, _ = web.post("127.0.0.1", port, web.INIT, headers={
        "Authorization": f"Bearer {TOKENS['TOOLS_TOKEN']}", "Connection": "close"})
    assert status == 200, status
    session = headers["mcp-session-id"]
    return session, int(session[1:session.index("-")])


def _ping(web: Any, port: int, session: str, token: str = TOKENS["TOOLS_TOKEN"]) -> int:
    return int(web.post("127.0.0.1", port, {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                        headers={"Authorization": f"Bearer {token}",
                                 "Mcp-Session-Id": session, "Connection": "close",
                                 "MCP-Protocol-Version": "2025-06-18"})[0])


def test_sessions_across_two_workers(tmp_path: Path, procs: Any, web: Any,
                                     no_orphans: None, request: pytest.FixtureRequest) -> None:
    """Sessions with workers: every request of a session reaches the worker that holds it,
    whichever worker accepted the connection; a change of the tool list from another process
    (through the store) reaches every session as notifications/tools/list_changed; the
    sessions of a killed worker are answered 404, and the client opens a new one."""
    import anyio

    port = procs.free_port()
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    config = write_config(tmp_path, port, SESSIONS.format(port=port))
    config.write_text(config.read_text(encoding="utf-8").replace(
        "[tool.toolregistry]\n", f'[tool.toolregistry]\nstore = "{store}"\n'), encoding="utf-8")
    url = f"http://127.0.0.1:{port}/mcp"
    # A short temporary folder of the test's own: a unix socket's path must stay short, and
    # pytest's folders (under xdist most of all) are long.
    temp = Path(tempfile.mkdtemp(prefix="trw-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))

    def secret() -> int:
        """Stands for the served tool of that name."""
        return 0

    with ToolRegistry(store=store) as operator, \
            supervisor(config, procs, port, TMPDIR=str(temp)) as proc:
        operator.register(secret)
        operator.share_changes()

        def change(round_: int) -> None:
            if round_:
                operator.enable("secret")
            operator.disable("secret", reason="retired")

        workers = wait_for(lambda: two_workers(proc.pid), "two worker processes")
        holders: set[int] = set()
        for _ in range(5):
            for pids, heard, names in anyio.run(_sessions, url, 6, change):
                assert len(set(pids)) == 1, f"one session answered by workers {pids}"
                assert heard >= 1 and "whoami" in names and "secret" not in names
                holders |= set(pids)
            if holders == workers:
                break
        assert holders == workers, f"sessions held by {holders}, workers are {workers}"

        # The workers' sockets are in a folder of this serve that only its user may open;
        # a request of a session, wherever it lands, is authenticated as before.
        (folder,) = temp.iterdir()
        assert folder.stat().st_mode & 0o777 == 0o700
        sessions: dict[int, str] = {}
        while set(sessions) != workers:
            session, holder = _raw_session(web, port)
            sessions[holder] = session
        for session in sessions.values():
            assert [_ping(web, port, session, "wrong") for _ in range(6)] == [401] * 6
            assert [_ping(web, port, session) for _ in range(6)] == [200] * 6

        # A killed worker's sessions are not found; the other's still answer.
        victim, survivor = sorted(workers)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: two_workers(proc.pid, without=victim), "a replacement worker")
        assert [_ping(web, port, sessions[victim]) for _ in range(6)] == [404] * 6
        assert [_ping(web, port, sessions[survivor]) for _ in range(6)] == [200] * 6
        assert served_by(url, TOKENS["TOOLS_TOKEN"], set(), rounds=1)  # new sessions work
    assert not list(temp.iterdir()), "the sessions' socket folder was left behind"


def test_the_session_sockets_fit_whatever_the_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unix socket's path holds about a hundred bytes: under a long temporary folder the
    workers' sockets go to /tmp (a worker whose socket could not be made served sessions with
    no session manager behind them)."""
    from toolregistry_mcp._affinity import socket_folder, socket_path

    long = tmp_path / ("x" * 80)
    long.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    folder = Path(socket_folder())
    try:
        assert len(str(socket_path(folder, 4194304))) <= 100
        assert folder.parent == Path("/tmp")
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        folder.rmdir()
