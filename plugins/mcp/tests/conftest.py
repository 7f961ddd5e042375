"""Fixtures: real MCP servers (our own, PyPI's and npm's), a registry, and an orphan check."""

from __future__ import annotations

import contextlib
import datetime
import http.client
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolregistry import ToolRegistry

HERE = Path(__file__).parent
SERVER = HERE / "servers" / "demo_server.py"
EVERYTHING_VERSION = "2026.8.31"
# Our test servers (the SDK's stdio server) take ~2 s to exit on stdin EOF; the tests need
# not wait for that politeness every time.
TEST_CONFIG = "[tool.toolregistry]\n[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def listening(args: list[str], port: int, path: str, **popen: Any) -> Iterator[str]:
    """Start ``args``, a server that listens on 127.0.0.1:``port``; yield its URL; stop it."""
    popen.setdefault("stderr", subprocess.DEVNULL)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, **popen)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        stop(proc)
        if proc.stderr is not None:
            proc.stderr.close()


def descendants() -> list[psutil.Process]:
    """Live (non-zombie) descendants of this test process."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.NoSuchProcess:
            pass
    return out


def assert_no_children(before: set[int] = frozenset(), timeout: float = 10) -> None:  # type: ignore[assignment]
    """Every MCP child process we started is gone (bounded wait)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in descendants() if p.pid not in before]
        if not left:
            return
        if time.monotonic() > deadline:
            names = []
            for p in left:
                try:
                    names.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
                except psutil.Error:
                    names.append(str(p.pid))
            raise AssertionError(f"child processes left running: {names}")
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's tools/list cache in a folder of its own, never the user's."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture
def no_orphans() -> Iterator[None]:
    """Fails the test when it leaves a child process running."""
    before = {p.pid for p in descendants()}
    yield
    assert_no_children(before)


@pytest.fixture
def registry(tmp_path: Path, no_orphans: None) -> Iterator[ToolRegistry]:
    # An empty configuration file: the workspace's pyproject must not leak into tests.
    config = tmp_path / "pyproject.toml"
    config.write_text(TEST_CONFIG, encoding="utf-8")
    reg = ToolRegistry(config=config)
    try:
        yield reg
    finally:
        reg.close()


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    path = tmp_path / "marker.txt"
    path.write_text("", encoding="utf-8")
    return path


def stdio_spec(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"command": sys.executable, "args": [str(SERVER), *args]}
    if env:
        spec["env"] = env
    return spec


@pytest.fixture
def http_server() -> Iterator[str]:
    """Our test server over streamable HTTP on 127.0.0.1."""
    port = free_port()
    with listening([sys.executable, str(SERVER), "--http", str(port)], port, "/mcp",
                   stderr=subprocess.PIPE) as url:
        yield url


# --------------------------------------------------------------------------- npm servers
MEMORY_VERSION = "2026.8.31"


def npm_cache() -> Path:
    """The tests' npm prefix (``TOOLREGISTRY_TEST_NPM``); its siblings hold the other suites."""
    return Path(os.environ.get("TOOLREGISTRY_TEST_NPM", Path.home() / ".cache" /
                               "toolregistry-tests" / "npm"))


@contextlib.contextmanager
def npm_lock() -> Iterator[None]:
    """Held while the tests' npm folders are checked and installed into: pytest-xdist's
    workers each set up their session fixtures, and two ``npm install`` into one prefix at once
    (or a copy read while it is written) would break one another."""
    import fcntl

    folder = npm_cache().parent
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "npm.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def npm_server(package: str, version: str) -> Path:
    """The entry script of an npm MCP server package, installed once into a cache."""
    if shutil.which("node") is None or shutil.which("npx") is None:
        pytest.skip("needs node, npm and npx")
    entry = npm_cache() / "node_modules" / package / "dist" / "index.js"
    npm_install(npm_cache(), f"{package}@{version}", ready=entry.is_file)
    return entry


def npm_install(cache: Path, *specs: str, ready: Callable[[], bool],
                timeout: float = 300) -> None:
    """``npm install specs`` into the prefix ``cache`` unless ``ready()`` already, under
    :func:`npm_lock`; the test is skipped without npm, and fails when the install did not make
    it ready."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("needs npm")
    with npm_lock():
        if ready():
            return
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache), *specs],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
        if done.returncode != 0 or not ready():
            pytest.fail(f"npm install of {' '.join(specs)} failed:\n{done.stderr[-2000:]}")


@pytest.fixture(scope="session")
def everything_js() -> Path:
    """The reference ``@modelcontextprotocol/server-everything``, installed from npm once."""
    return npm_server("@modelcontextprotocol/server-everything", EVERYTHING_VERSION)


@pytest.fixture(scope="session")
def memory_js() -> Path:
    """The reference ``@modelcontextprotocol/server-memory`` (a knowledge graph in a file)."""
    return npm_server("@modelcontextprotocol/server-memory", MEMORY_VERSION)


@pytest.fixture
def everything_http(everything_js: Path) -> Iterator[str]:
    port = free_port()
    with listening(["node", str(everything_js), "streamableHttp"], port, "/mcp",
                   env={**os.environ, "PORT": str(port)}) as url:
        yield url


@pytest.fixture
def everything_sse(everything_js: Path) -> Iterator[str]:
    port = free_port()
    with listening(["node", str(everything_js), "sse"], port, "/sse",
                   env={**os.environ, "PORT": str(port)}) as url:
        yield url


@pytest.fixture
def spec() -> object:
    """``spec(*args, env=None)``: a stdio spec running our test server with ``args``."""
    return stdio_spec


@pytest.fixture(scope="session")
def children_gone() -> object:
    """``children_gone(before=set())``: assert no child process of ours is left (bounded)."""
    return assert_no_children


@pytest.fixture(scope="session")
def npm() -> object:
    """The tests' npm cache: ``npm.cache()`` its prefix (siblings hold other suites) and
    ``npm.install(cache, *specs, ready=...)``, under the lock the xdist workers share."""
    import types

    return types.SimpleNamespace(cache=npm_cache, install=npm_install)


@pytest.fixture(scope="session")
def procs() -> object:
    """Helpers for tests that start their own server process."""
    import types

    return types.SimpleNamespace(free_port=free_port, wait_for_port=wait_for_port, stop=stop,
                                 listening=listening)


# --------------------------------------------------------------------------- npm: oidc-provider
OIDC_PROVIDER_VERSION = "8.8.1"


@pytest.fixture(scope="session")
def oidc_provider_js() -> Path:
    """panva's ``oidc-provider`` (a real OAuth 2.1 / OpenID authorization server), installed
    from npm once, with our configuration script (``servers/oauth_server.mjs``) beside it."""
    if shutil.which("node") is None:
        pytest.skip("needs node and npm")
    cache = npm_cache().parent / "oidc"
    package = cache / "node_modules" / "oidc-provider" / "package.json"
    script = cache / "oauth_server.mjs"  # beside node_modules, so that the import resolves

    def ready() -> bool:
        return package.is_file() and \
            f'"version": "{OIDC_PROVIDER_VERSION}"' in package.read_text(encoding="utf-8")

    npm_install(cache, f"oidc-provider@{OIDC_PROVIDER_VERSION}", ready=ready)
    with npm_lock():
        # Replaced, never rewritten in place: another worker's server may be reading it.
        copy = script.with_name(f".{script.name}.{os.getpid()}")
        shutil.copyfile(HERE / "servers" / "oauth_server.mjs", copy)
        os.replace(copy, script)
    return script


@contextlib.contextmanager
def oauth_server(script: Path, resource: str, **env: str) -> Iterator[str]:
    """The authorization server on 127.0.0.1, issuing tokens for ``resource``; yields its
    issuer URL."""
    port = free_port()
    with listening(["node", str(script)], port, "", cwd=script.parent,
                   env={**os.environ, "PORT": str(port), "RESOURCE": resource, **env}) as url:
        yield url


@pytest.fixture(scope="session")
def authorization_server() -> object:
    """``authorization_server(resource, **env)``: a context manager running the real OAuth
    server for ``resource`` (yields the issuer URL)."""
    return oauth_server


# --------------------------------------------------------------------------- served registries
SERVED = HERE / "servers" / "served_registry.py"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}


def wait_listening(host: str, port: int, proc: subprocess.Popen[bytes],
                   timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on {host}:{port}")


@contextlib.contextmanager
def served(options: dict[str, Any], procs: Any, *, env: dict[str, str] | None = None,
           host: str = "127.0.0.1") -> Iterator[tuple[str, int]]:
    """Serve ``served_registry.py`` with ``options``; yield (host, port)."""
    port = options.get("port") or procs.free_port()
    options = {"host": host, "port": port, **options}
    proc = subprocess.Popen([sys.executable, str(SERVED), json.dumps(options)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, cwd=SERVED.parent)
    try:
        wait_listening(host, port, proc)
        yield host, port
    finally:
        procs.stop(proc)
        if proc.stderr is not None:
            proc.stderr.close()


def post(host: str, port: int, body: Any, *, headers: dict[str, str] | None = None,
         path: str = "/mcp", context: ssl.SSLContext | None = None
         ) -> tuple[int, dict[str, str], str]:
    """One raw POST (``headers`` may set Host and Origin to anything)."""
    conn: http.client.HTTPConnection
    if context is not None:
        conn = http.client.HTTPSConnection(host, port, timeout=10, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=10)
    data = json.dumps(body).encode()
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Host": f"{host}:{port}", **(headers or {})}
    try:
        conn.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        for key, value in sent.items():
            conn.putheader(key, value)
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        conn.close()




def self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, written to ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="session")
def web() -> object:
    """Helpers for tests of a served registry: ``served(options, procs, env=, host=)``,
    ``post(host, port, body, headers=)``, ``INIT``."""
    import types

    return types.SimpleNamespace(served=served, post=post, INIT=INIT, self_signed=self_signed)
