"""OAuth that keeps working: tokens refreshed (not a new sign-in) when they expire between runs
or are refused early, and a client registered again when the authorization server forgot it.
The authorization server is panva's oidc-provider (restarted on its port to forget its
clients), the resource a served registry, the user a real HTTP user agent as ``$BROWSER``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

from .conftest import listening

USER_AGENT = Path(__file__).parent / "servers" / "user_agent.py"
TTL = 3  # seconds an access token lives


class Protected:
    """A served registry whose authorization server can be restarted on the same port."""

    def __init__(self, script: Path, procs: Any) -> None:
        self.script = script
        self.procs = procs
        self.port = procs.free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.resource = f"http://127.0.0.1:{procs.free_port()}/mcp"
        self._auth: Any = None

    def start_auth(self) -> None:
        env = {**os.environ, "PORT": str(self.port), "RESOURCE": self.resource,
               "TOKEN_TTL": str(TTL)}
        self._auth = listening(["node", str(self.script)], self.port, "",
                               cwd=self.script.parent, env=env)
        self._auth.__enter__()

    def stop_auth(self) -> None:
        if self._auth is not None:
            auth, self._auth = self._auth, None
            auth.__exit__(None, None, None)

    def restart_auth(self) -> None:
        """A new authorization server on the same address: it knows no client and no grant."""
        self.stop_auth()
        self.start_auth()


@pytest.fixture
def protected(web: Any, procs: Any, oidc_provider_js: Path) -> Iterator[Protected]:
    setup = Protected(oidc_provider_js, procs)
    setup.start_auth()
    try:
        port = int(setup.resource.split(":")[2].split("/")[0])
        options = {"port": port, "auth": "oauth", "oauth": {
            "issuer": setup.issuer, "leeway": 0, "scopes": {"tools:admin": {}}}}
        with web.served(options, procs):
            yield setup
    finally:
        setup.stop_auth()


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sign-ins of the test's user: one line per sign-in."""
    log = tmp_path / "browser.log"
    log.write_text("", encoding="utf-8")
    monkeypatch.setenv("BROWSER", f"{sys.executable} {USER_AGENT} %s")
    monkeypatch.setenv("USER_AGENT_LOG", str(log))
    return log


def sign_ins(log: Path) -> int:
    return len(log.read_text(encoding="utf-8").splitlines())


def run(tmp_path: Path, protected: Protected, auth: dict[str, Any]) -> str:
    """A new registry (as a new run of the application) calls a protected tool."""
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.toolregistry]\n[tool.toolregistry.plugins.mcp]\n"
                      "shutdown-grace = 0.3\n", encoding="utf-8")
    with ToolRegistry(config=config) as registry:
        registry.register_from_mcp(protected.resource, namespace="u", auth=auth,
                                   connect_timeout=20)
        result = registry.invoke("u-files-read", {"path": "q"})
        assert not result.is_error, result.text
        return str(result.content)


def options(tmp_path: Path, procs: Any) -> dict[str, Any]:
    return {"scope": "tools:admin", "token-store": str(tmp_path / "tokens.json"),
            "redirect-uri": f"http://127.0.0.1:{procs.free_port()}/callback",
            "callback-timeout": 8}


def test_an_expired_token_is_refreshed_by_the_next_run(
        protected: Protected, browser: Path, tmp_path: Path, procs: Any) -> None:
    auth = options(tmp_path, procs)
    store = tmp_path / "tokens.json"
    assert run(tmp_path, protected, auth) == "contents of q"
    assert sign_ins(browser) == 1
    registered = json.loads(store.read_text(encoding="utf-8"))["client"]["client_id"]
    time.sleep(TTL + 0.5)
    # Known to have expired: refreshed before the request, no second sign-in.
    assert run(tmp_path, protected, auth) == "contents of q"
    assert sign_ins(browser) == 1
    saved = json.loads(store.read_text(encoding="utf-8"))
    assert saved["expires_at"] == pytest.approx(time.time() + TTL, abs=10)
    assert saved["client"]["client_id"] == registered  # the registration was reused


def test_a_refused_token_is_refreshed_once_before_signing_in(
        protected: Protected, browser: Path, tmp_path: Path, procs: Any) -> None:
    auth = options(tmp_path, procs)
    run(tmp_path, protected, auth)
    store = tmp_path / "tokens.json"
    time.sleep(TTL + 0.5)
    # A token the client believes valid (its expiry unknown, as in a file of an older run)
    # that the server refuses: 401, then a refresh, then the call.
    saved = json.loads(store.read_text(encoding="utf-8"))
    saved.pop("expires_at", None)
    store.write_text(json.dumps(saved), encoding="utf-8")
    assert run(tmp_path, protected, auth) == "contents of q"
    assert sign_ins(browser) == 1


def test_a_forgotten_client_registers_again(
        protected: Protected, browser: Path, tmp_path: Path, procs: Any) -> None:
    auth = options(tmp_path, procs)
    run(tmp_path, protected, auth)
    store = tmp_path / "tokens.json"
    first = json.loads(store.read_text(encoding="utf-8"))["client"]["client_id"]
    protected.restart_auth()  # it forgot the client and its grants
    time.sleep(TTL + 0.5)
    # The refresh is refused with invalid_client: the registration is dropped, a new one made,
    # and the user signs in again (the grant is gone too).
    assert run(tmp_path, protected, auth) == "contents of q"
    assert sign_ins(browser) == 2
    second = json.loads(store.read_text(encoding="utf-8"))["client"]["client_id"]
    assert second != first



# --------------------------------------------------------------------------- a shared store
RUN = Path(__file__).parent / "servers" / "oauth_run.py"


def run_process(tmp_path: Path, name: str, store: str, protected: Protected,
                auth: dict[str, Any]) -> str:
    """A run in a process of its own, with a private state folder of its own (as on another
    host), sharing only the registry's store."""
    home = tmp_path / name
    home.mkdir()
    config = home / "pyproject.toml"
    config.write_text(f"[tool.toolregistry]\nstore = {json.dumps(store)}\n"
                      "[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n",
                      encoding="utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(home / "state"), "HOME": str(home)}
    done = subprocess.run([sys.executable, str(RUN), str(config), protected.resource,
                           json.dumps(auth)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _two_processes_share(store: str, protected: Protected, browser: Path, tmp_path: Path,
                         procs: Any) -> None:
    auth = {"scope": "tools:admin", "callback-timeout": 8,
            "redirect-uri": f"http://127.0.0.1:{procs.free_port()}/callback"}
    assert run_process(tmp_path, "first", store, protected, auth) == "contents of q"
    assert sign_ins(browser) == 1
    # Another process (another host) with the same store: the same registration and tokens.
    assert run_process(tmp_path, "second", store, protected, auth) == "contents of q"
    assert sign_ins(browser) == 1
    # Nothing was written to either process's own token folder.
    assert not list(tmp_path.glob("*/state/toolregistry/mcp-oauth/*.json"))


def test_two_processes_share_one_registration_on_sqlite(
        protected: Protected, browser: Path, tmp_path: Path, procs: Any) -> None:
    import sqlite3

    db = tmp_path / "shared.db"
    _two_processes_share(f"sqlite:///{db}", protected, browser, tmp_path, procs)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT client, tokens, expires_at FROM mcp_oauth").fetchall()
    assert len(rows) == 1
    client, tokens, expires_at = rows[0]
    assert json.loads(client)["client_id"] and json.loads(tokens)["refresh_token"]
    assert expires_at > time.time() - 60


def test_two_processes_share_one_registration_on_postgresql(
        protected: Protected, browser: Path, tmp_path: Path, procs: Any,
        postgres_url: str) -> None:
    _two_processes_share(postgres_url, protected, browser, tmp_path, procs)
