"""Connecting to OAuth-protected MCP servers: client credentials (a secret, or a private key
signing client assertions), authorization code with PKCE and dynamic client registration (a
user signing in through a browser: ``$BROWSER`` is a real HTTP user agent), token refresh, the
private token file, what a 401 / 403 says, and an identity provider's refusal of a token
exchange. The server is a served registry; the authorization server panva's oidc-provider,
both on 127.0.0.1."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry_mcp import MCPConnectError

USER_AGENT = Path(__file__).parent / "servers" / "user_agent.py"


def _ec_key() -> tuple[str, str]:
    """A new P-256 key: (its private key as PEM, its public key as a JWK)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return pem, ECAlgorithm.to_jwk(key.public_key())


SIGNER_PEM, SIGNER_JWK = _ec_key()  # the client 'signer' of the authorization server


@pytest.fixture(scope="module")  # one authorization server and served registry
def protected(web: Any, procs: Any, oidc_provider_js: Path, authorization_server: Any
              ) -> Iterator[dict[str, str]]:
    port = procs.free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(oidc_provider_js, resource, TOKEN_TTL="3",
                              SIGNER_JWK=SIGNER_JWK) as issuer:
        options = {"port": port, "auth": "oauth", "oauth": {
            "issuer": issuer, "leeway": 0,
            "scopes": {"tools:admin": {}, "tools:read": {"tags": ["read_only"]}}}}
        with web.served(options, procs):
            yield {"issuer": issuer, "resource": resource}


def test_client_credentials(protected: dict[str, str], registry: ToolRegistry,
                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_SECRET", "machine-secret")
    store = tmp_path / "state" / "tokens.json"
    tools = registry.register_from_mcp(protected["resource"], namespace="m", auth={
        "grant": "client_credentials", "client-id": "machine",
        "client-secret-env": "MACHINE_SECRET", "issuer": protected["issuer"],
        "scope": "tools:admin", "token-store": str(store)})
    assert len(tools) == 6
    assert registry.invoke("m-files-delete", {"path": "x"}).content == "deleted x"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert "access_token" in store.read_text(encoding="utf-8")


def test_client_credentials_gets_a_new_token_when_one_expires(
        protected: dict[str, str], registry: ToolRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHORT_SECRET", "shortlived-secret")
    registry.register_from_mcp(protected["resource"], namespace="s", auth={
        "grant": "client_credentials", "client_id": "shortlived",
        "client_secret_env": "SHORT_SECRET", "issuer": protected["issuer"],
        "scope": "tools:read", "token_store": str(tmp_path / "t.json")}, persistent=False)
    first = (tmp_path / "t.json").read_text(encoding="utf-8")
    time.sleep(3.2)  # the two-second token has expired
    assert registry.invoke("s-files-read", {"path": "p"}).content == "contents of p"
    assert (tmp_path / "t.json").read_text(encoding="utf-8") != first


def test_client_credentials_with_a_private_key(protected: dict[str, str], registry: ToolRegistry,
                                               tmp_path: Path) -> None:
    key = tmp_path / "signer.pem"
    key.write_text(SIGNER_PEM, encoding="utf-8")
    auth = {"grant": "client_credentials", "client-id": "signer", "private-key-file": str(key),
            "signing-algorithm": "ES256", "issuer": protected["issuer"], "scope": "tools:admin",
            "token-store": str(tmp_path / "k.json")}
    registry.register_from_mcp(protected["resource"], namespace="k", auth=auth)
    assert registry.invoke("k-files-delete", {"path": "y"}).content == "deleted y"
    assert "access_token" in (tmp_path / "k.json").read_text(encoding="utf-8")
    # Another key signs assertions the authorization server cannot verify: its answer.
    key.write_text(_ec_key()[0], encoding="utf-8")
    with pytest.raises(MCPConnectError, match=r"signing in with the authorization server "
                                              r"failed: OAuthTokenError.*invalid_client"):
        registry.register_from_mcp(protected["resource"], namespace="k2", auth={
            **auth, "token-store": str(tmp_path / "k2.json")})


def test_identity_assertion_names_the_identity_providers_refusal(
        protected: dict[str, str], registry: ToolRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The identity provider here is the real oidc-provider, which has no token exchange
    # (RFC 8693): it refuses the exchange, and the error says where and what it answered.
    monkeypatch.setenv("ID_TOKEN", "eyJhbGciOiJub25lIn0.e30.")
    monkeypatch.setenv("AGENT_SECRET", "machine-secret")
    with pytest.raises(MCPConnectError, match=r"identity provider token exchange at "
                                              r"\S+/token failed \(HTTP 400\).*grant"):
        registry.register_from_mcp(protected["resource"], auth={
            "grant": "identity_assertion", "client-id": "machine",
            "client-secret-env": "AGENT_SECRET", "issuer": protected["issuer"],
            "idp-token-endpoint": f"{protected['issuer']}/token", "idp-client-id": "machine",
            "idp-client-secret-env": "AGENT_SECRET", "id-token-env": "ID_TOKEN", "token-store": str(tmp_path / "x.json")})


def test_authorization_code_with_pkce_registration_and_refresh(
        protected: dict[str, str], registry: ToolRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, procs: Any) -> None:
    signed_in = tmp_path / "browser.log"
    monkeypatch.setenv("BROWSER", f"{sys.executable} {USER_AGENT} %s")
    monkeypatch.setenv("USER_AGENT_LOG", str(signed_in))
    store = tmp_path / "code.json"
    auth = {"scope": "tools:admin", "token-store": str(store),
            "redirect-uri": f"http://127.0.0.1:{procs.free_port()}/callback"}
    tools = registry.register_from_mcp(protected["resource"], namespace="u", auth=auth,
                                       persistent=False)
    assert len(tools) == 6
    lines = signed_in.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and "code=" in lines[0] and "state=" in lines[0]
    # The browser got the listener's answer (its process ends once it has read it): the
    # client's loop served the redirect while the browser waited for it.
    answers = tmp_path / "browser.log.answers"
    deadline = time.monotonic() + 10
    while not answers.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert answers.read_text(encoding="utf-8") == "200 Signed in. You can close this window.\n"
    saved = store.read_text(encoding="utf-8")
    assert '"client_id"' in saved and '"refresh_token"' in saved  # registered; refreshable
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    time.sleep(3.5)  # the access token (3 s) has expired: refreshed, no second sign-in
    assert registry.invoke("u-files-read", {"path": "q"}).content == "contents of q"
    assert len(signed_in.read_text(encoding="utf-8").splitlines()) == 1
    # A new registry with the same token store signs in no more.
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    with ToolRegistry(config=tmp_path / "pyproject.toml") as again:
        assert len(again.register_from_mcp(protected["resource"], auth=auth)) == 6
    assert len(signed_in.read_text(encoding="utf-8").splitlines()) == 1


def test_401_names_the_server_the_status_and_what_to_do(web: Any, procs: Any,
                                                        registry: ToolRegistry) -> None:
    options = {"auth": "bearer", "tokens": [{"name": "a", "env": "THE_TOKEN"}]}
    with web.served(options, procs, env={"THE_TOKEN": "sekrit"}) as (host, port):
        url = f"http://{host}:{port}/mcp"
        with pytest.raises(MCPConnectError) as caught:
            registry.register_from_mcp(url)
        message = str(caught.value)
        assert url in message and "401 Unauthorized" in message
        assert "auth = " in message and "Authorization" in message
        with pytest.raises(MCPConnectError, match="credentials were not accepted"):
            registry.register_from_mcp(url, auth=_static_bearer("wrong"))
        assert registry.register_from_mcp(url, auth=_static_bearer("sekrit"))


def _token(issuer: str, client: str, secret: str, scope: str, resource: str) -> str:
    import base64
    import json
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope,
                                   "resource": resource}).encode()
    basic = base64.b64encode(f"{client}:{secret}".encode()).decode()
    request = urllib.request.Request(f"{issuer}/token", data=body, headers={
        "Authorization": f"Basic {basic}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.load(response)["access_token"])


def test_403_and_failed_sign_ins_say_why(procs: Any, web: Any, oidc_provider_js: Path,
                                         authorization_server: Any, registry: ToolRegistry,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    port = procs.free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    monkeypatch.setenv("READER_SECRET", "reader-secret")
    with authorization_server(oidc_provider_js, resource) as issuer:
        options = {"port": port, "auth": "oauth",
                   "oauth": {"issuer": issuer, "required_scopes": ["tools:admin"]}}
        with web.served(options, procs):
            # A valid token without the required scope.
            reader = _token(issuer, "reader", "reader-secret", "tools:read", resource)
            with pytest.raises(MCPConnectError, match=r"403 Forbidden.*insufficient_scope"):
                registry.register_from_mcp(resource, auth=_static_bearer(reader))
            # A client that may not have that scope: the authorization server's answer.
            with pytest.raises(MCPConnectError,
                               match=r"signing in with the authorization server failed: "
                                     r"OAuthTokenError.*invalid_scope"):
                registry.register_from_mcp(resource, auth={
                    "grant": "client_credentials", "client_id": "reader",
                    "client_secret_env": "READER_SECRET", "issuer": issuer,
                    "scope": "tools:read", "token_store": str(tmp_path / "r.json")})


def test_bad_auth_options_are_config_errors(registry: ToolRegistry, tmp_path: Path) -> None:
    from toolregistry.errors import ConfigError

    with pytest.raises(ConfigError, match="auth option 'grant'"):
        registry.register_from_mcp("http://127.0.0.1:9/mcp", auth={"grant": "password"})
    with pytest.raises(ConfigError, match="client_credentials needs"):
        registry.register_from_mcp("http://127.0.0.1:9/mcp",
                                   auth={"grant": "client_credentials"})
    with pytest.raises(ConfigError, match="NOT_SET_HERE"):
        registry.register_from_mcp("http://127.0.0.1:9/mcp", auth={
            "grant": "client_credentials", "client_id": "x",
            "client_secret_env": "NOT_SET_HERE", "issuer": "http://127.0.0.1:9"})
    url = "http://127.0.0.1:9/mcp"
    base = {"grant": "client_credentials", "client_id": "x", "issuer": "http://127.0.0.1:9"}
    with pytest.raises(ConfigError, match=r"private-key-file 'no/such\.pem' cannot be read"):
        registry.register_from_mcp(url, auth={**base, "private_key_file": "no/such.pem"})
    pem = tmp_path / "k.pem"
    pem.write_text(SIGNER_PEM, encoding="utf-8")
    with pytest.raises(ConfigError, match="a client secret or a private key"):
        registry.register_from_mcp(url, auth={**base, "private_key_file": str(pem),
                                              "client_secret": "s"})
    with pytest.raises(ConfigError, match="'signing-algorithm': 'HS256' is not one of"):
        registry.register_from_mcp(url, auth={**base, "private_key_file": str(pem),
                                              "signing_algorithm": "HS256"})
    with pytest.raises(ConfigError, match="cannot sign RS256"):  # an EC key
        registry.register_from_mcp(url, auth={**base, "private_key_file": str(pem)})
    with pytest.raises(ConfigError, match=r"identity_assertion needs .*missing: "
                                          r"client-secret-env, idp-token-endpoint"):
        registry.register_from_mcp(url, auth={
            "grant": "identity_assertion", "client_id": "x", "issuer": "http://127.0.0.1:9",
            "idp_client_id": "y", "id_token_env": "T"})
    with pytest.raises(ConfigError, match="idp-token-endpoint': not an http"):
        registry.register_from_mcp(url, auth={
            "grant": "identity_assertion", "client_id": "x", "client_secret": "s",
            "issuer": "http://127.0.0.1:9", "idp_client_id": "y", "id_token_env": "T",
            "idp_token_endpoint": "file:///etc/passwd"})
    with pytest.raises(ConfigError, match="for HTTP servers"):
        registry.register_from_mcp({"command": sys.executable, "args": ["-V"]},
                                   auth={"grant": "client_credentials"})


def _static_bearer(token: str) -> Any:
    """An httpx Auth of the application's own (any ``httpx2.Auth`` is accepted as ``auth=``)."""
    import httpx2

    class StaticBearer(httpx2.Auth):
        def auth_flow(self, request: Any) -> Any:
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    return StaticBearer()


def test_default_token_dir_is_private_state(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    from toolregistry_mcp._oauth import default_token_dir

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_token_dir() == tmp_path / "toolregistry" / "mcp-oauth"
    assert os.fspath(default_token_dir()).startswith(str(tmp_path))


def test_auth_from_a_configured_source(protected: dict[str, str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_SECRET", "machine-secret")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.toolregistry]\n[[tool.toolregistry.sources]]\nkind = \"mcp\"\n"
        f"server = \"{protected['resource']}\"\nnamespace = \"cfg\"\n"
        "auth = { grant = \"client_credentials\", client-id = \"machine\", "
        "client-secret-env = \"MACHINE_SECRET\", "
        f"issuer = \"{protected['issuer']}\", scope = \"tools:read\", "
        "token-store = \"tokens.json\" }\n", encoding="utf-8")
    with ToolRegistry.from_config(config) as registry:
        assert registry.invoke("cfg-files-read", {"path": "z"}).content == "contents of z"
    # A relative token store is relative to the configuration file.
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
