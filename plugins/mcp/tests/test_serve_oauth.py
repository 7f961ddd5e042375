"""A served registry as an OAuth 2.1 resource server (MCP authorization): Protected Resource
Metadata, ``WWW-Authenticate`` on 401, JWT access tokens from a real authorization server
(panva's oidc-provider on 127.0.0.1) checked against its JWKS, scopes mapped to tools, and
every kind of bad token refused with a clean 401."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

CALL_DELETE = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "files-delete", "arguments": {"path": "/"}}}


def token(issuer: str, client: str, secret: str, scope: str, resource: str) -> str:
    """An access token by client credentials, straight from the authorization server."""
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope,
                                   "resource": resource}).encode()
    basic = base64.b64encode(f"{client}:{secret}".encode()).decode()
    request = urllib.request.Request(f"{issuer}/token", data=body, headers={
        "Authorization": f"Basic {basic}",
        "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.load(response)["access_token"])


@pytest.fixture(scope="module")  # one authorization server and served registry
def protected(web: Any, procs: Any, oidc_provider_js: Path, authorization_server: Any
              ) -> Iterator[dict[str, Any]]:
    port = procs.free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(oidc_provider_js, resource) as issuer:
        options = {"port": port, "auth": "oauth", "oauth": {
            "issuer": issuer, "leeway": 0, "resource_name": "test tools",
            "scopes": {"tools:admin": {}, "tools:read": {"tags": ["read_only"]}}}}
        with web.served(options, procs) as (host, _):
            yield {"issuer": issuer, "resource": resource, "host": host, "port": port}


def test_protected_resource_metadata_and_401(web: Any, protected: dict[str, Any]) -> None:
    host, port = protected["host"], protected["port"]
    url = f"http://{host}:{port}/.well-known/oauth-protected-resource/mcp"
    with urllib.request.urlopen(url, timeout=10) as response:
        metadata = json.load(response)
    assert metadata["resource"] == protected["resource"]
    assert metadata["authorization_servers"] == [protected["issuer"]]
    assert sorted(metadata["scopes_supported"]) == ["tools:admin", "tools:read"]
    assert metadata["resource_name"] == "test tools"
    status, headers, _ = web.post(host, port, web.INIT)
    assert status == 401
    assert f'resource_metadata="{url}"' in headers["www-authenticate"]


def test_scopes_decide_what_each_client_sees(protected: dict[str, Any],
                                             registry: ToolRegistry) -> None:
    issuer, resource = protected["issuer"], protected["resource"]
    admin = token(issuer, "machine", "machine-secret", "tools:admin", resource)
    reader = token(issuer, "reader", "reader-secret", "tools:read", resource)
    other = token(issuer, "reader", "reader-secret", "tools:other", resource)
    tools = registry.register_from_mcp(resource, namespace="a",
                                       headers={"Authorization": f"Bearer {admin}"})
    assert len(tools) == 6
    tools = registry.register_from_mcp(resource, namespace="r",
                                       headers={"Authorization": f"Bearer {reader}"})
    assert [t.name for t in tools] == ["r-files-read"]
    assert registry.invoke("r-files-read", {"path": "p"}).content == "contents of p"
    tools = registry.register_from_mcp(resource, namespace="o",
                                       headers={"Authorization": f"Bearer {other}"})
    assert tools == []  # a valid token whose scopes grant nothing


def _tampered(jwt: str) -> str:
    head, payload, signature = jwt.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["scope"] = "tools:admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{head}.{forged}.{signature}"


def _unsigned(jwt: str) -> str:
    _, payload, _ = jwt.split(".")
    head = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').decode().rstrip("=")
    return f"{head}.{payload}."


def test_bad_tokens_are_clean_401s(web: Any, protected: dict[str, Any]) -> None:
    issuer, resource = protected["issuer"], protected["resource"]
    host, port = protected["host"], protected["port"]
    good = token(issuer, "reader", "reader-secret", "tools:read", resource)
    foreign = token(issuer, "machine", "machine-secret", "tools:admin",
                    "http://127.0.0.1:9/other")
    short = token(issuer, "shortlived", "shortlived-secret", "tools:admin", resource)
    time.sleep(3.2)  # the short-lived (2 s) token has expired (leeway 0)
    bad = {
        "wrong audience": foreign,
        "expired": short,
        "tampered claims": _tampered(good),
        "alg none": _unsigned(good),
        "malformed": "not.a.jwt",
        "garbage segments": "e30.e30.e30",
        "oversized": "a." + "b" * 9000 + ".c",
    }
    for why, bad_token in bad.items():
        for body in (web.INIT, CALL_DELETE):
            status, headers, text = web.post(host, port, body,
                                         headers={"Authorization": f"Bearer {bad_token}"})
            assert status == 401, (why, status, text)
            assert "invalid_token" in headers["www-authenticate"], why
            assert "Traceback" not in text and "deleted" not in text, why
    status, _, text = web.post(host, port, web.INIT, headers={"Authorization": f"Bearer {good}"})
    assert status == 200 and "serverInfo" in text


def test_required_scope_missing_is_403(web: Any, procs: Any, oidc_provider_js: Path,
                                       authorization_server: Any) -> None:
    port = procs.free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(oidc_provider_js, resource) as issuer:
        options = {"port": port, "auth": "oauth",
                   "oauth": {"issuer": issuer, "required_scopes": ["tools:admin"]}}
        with web.served(options, procs) as (host, _):
            reader = token(issuer, "reader", "reader-secret", "tools:read", resource)
            status, headers, _ = web.post(host, port, web.INIT,
                                      headers={"Authorization": f"Bearer {reader}"})
            assert status == 403 and "insufficient_scope" in headers["www-authenticate"]
            admin = token(issuer, "machine", "machine-secret", "tools:admin", resource)
            assert web.post(host, port, web.INIT, headers={"Authorization": f"Bearer {admin}"})[0] \
                == 200
