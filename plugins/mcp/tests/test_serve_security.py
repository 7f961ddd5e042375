"""A served registry off loopback: bearer tokens, per-client scoping, Host / Origin allow-lists,
the refusal to listen unauthenticated, bad tokens and oversized headers, TLS. Real servers
(our registry served by a subprocess) and real clients (the SDK's, and raw HTTP)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

TOKENS = {"ADMIN_TOKEN": "admin-secret-0123456789", "READER_TOKEN": "reader-secret-9876543210"}


@pytest.fixture(scope="module")
def bearer(web: Any, procs: Any, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, int]]:
    """One served registry for the module's tests of its tokens: they only read what it
    lists and answers (its tools keep no state), so it starts once, not once per test."""
    token_file = tmp_path_factory.mktemp("bearer") / "ops.token"
    token_file.write_text("ops-secret-abcdef\n", encoding="utf-8")
    options = {"auth": "bearer", "tokens": [
        {"name": "admin", "env": "ADMIN_TOKEN"},
        {"name": "reader", "env": "READER_TOKEN", "tags": ["read_only"], "tools": ["work"]},
        {"name": "ops", "file": str(token_file), "namespaces": ["admin"]},
    ]}
    with web.served(options, procs, env=TOKENS) as where:
        yield where


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_bearer_tokens_scope_what_each_client_sees(bearer: tuple[str, int],
                                                   registry: ToolRegistry) -> None:
    host, port = bearer
    url = f"http://{host}:{port}/mcp"
    admin = registry.register_from_mcp(url, namespace="a",
                                       headers=_auth(TOKENS["ADMIN_TOKEN"]))
    assert sorted(t.name for t in admin) == [
        "a-admin-restart", "a-awork", "a-files-delete", "a-files-read", "a-slow", "a-work"]
    reader = registry.register_from_mcp(url, namespace="r",
                                        headers=_auth(TOKENS["READER_TOKEN"]))
    assert sorted(t.name for t in reader) == ["r-files-read", "r-work"]
    assert registry.invoke("r-files-read", {"path": "x"}).content == "contents of x"
    ops = registry.register_from_mcp(url, namespace="o", headers=_auth("ops-secret-abcdef"))
    assert [t.name for t in ops] == ["o-admin-restart"]
    assert registry.invoke("a-files-delete", {"path": "y"}).content == "deleted y"


def test_a_hidden_tool_is_answered_like_a_missing_one(bearer: tuple[str, int]) -> None:
    import anyio
    from mcp import Client

    host, port = bearer
    url = f"http://{host}:{port}/mcp"

    async def main() -> tuple[Any, Any]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=_auth(TOKENS["READER_TOKEN"])) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            hidden = await client.call_tool("files-delete", {"path": "/"})
            missing = await client.call_tool("no-such-tool", {})
            return hidden, missing

    hidden, missing = anyio.run(main)
    assert hidden.is_error and missing.is_error
    assert hidden.content[0].text == missing.content[0].text.replace("no-such-tool",
                                                                     "files-delete")
    assert "there is no tool named 'files-delete'" in hidden.content[0].text


@pytest.mark.parametrize(("headers", "why"), [
    ({}, "no token"),
    (_auth("wrong-token"), "unknown token"),
    ({"Authorization": "Bearer "}, "empty token"),
    ({"Authorization": "Basic YWRtaW46YWRtaW4="}, "not a bearer token"),
    (_auth("x" * 9000), "too long"),
    (_auth("admin-secret-0123456789\u00e9".encode().decode("latin-1")), "not ASCII"),
])
def test_bad_tokens_are_401_and_nothing_runs(web: Any, bearer: tuple[str, int],
                                             headers: dict[str, str], why: str) -> None:
    host, port = bearer
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "files-delete", "arguments": {"path": "/"}}}
    for body in (web.INIT, call):
        status, got, text = web.post(host, port, body, headers=headers)
        assert status == 401, (why, status, text)
        assert got["www-authenticate"].startswith("Bearer"), why
        assert "Traceback" not in text and "deleted" not in text


def test_oversized_headers_are_refused_cleanly(web: Any, bearer: tuple[str, int]) -> None:
    host, port = bearer
    status, _, text = web.post(host, port, web.INIT,
                           headers={**_auth(TOKENS["ADMIN_TOKEN"]), "X-Big": "y" * 40_000})
    assert status in (400, 431), status
    assert "Traceback" not in text
    # The server is still there.
    status, _, _ = web.post(host, port, web.INIT, headers=_auth(TOKENS["ADMIN_TOKEN"]))
    assert status == 200


def test_second_loopback_address_checks_host_and_origin(web: Any, procs: Any, tmp_path: Path) -> None:
    # 127.0.0.2 is not an address the SDK protects by itself (it knows 127.0.0.1, localhost
    # and ::1): the allow-lists are ours, on every bind.
    options = {"auth": "bearer", "tokens": [{"name": "admin", "env": "ADMIN_TOKEN"}],
               "allowed_hosts": ["mcp.internal:*"],
               "allowed_origins": ["https://app.example"]}
    with web.served(options, procs, env=TOKENS, host="127.0.0.2") as (host, port):
        ok = _auth(TOKENS["ADMIN_TOKEN"])
        assert web.post(host, port, web.INIT, headers=ok)[0] == 200
        assert web.post(host, port, web.INIT, headers={**ok, "Host": f"mcp.internal:{port}"})[0] == 200
        assert web.post(host, port, web.INIT, headers={**ok, "Origin": "https://app.example"})[0] == 200
        status, _, text = web.post(host, port, web.INIT, headers={**ok, "Host": "evil.example"})
        assert status == 421 and "Host" in text
        status, _, text = web.post(host, port, web.INIT,
                               headers={**ok, "Origin": "http://evil.example"})
        assert status == 403 and "Origin" in text
        # No token: refused before anything else is looked at.
        assert web.post(host, port, web.INIT)[0] == 401


def test_non_loopback_without_auth_is_refused(registry: ToolRegistry) -> None:
    from toolregistry_mcp import serve

    with pytest.raises(ConfigError, match=r"refusing to listen on '10\.1\.2\.3' without auth"):
        serve(registry, "streamable-http", host="10.1.2.3", port=1)
    with pytest.raises(ConfigError, match="allowed_hosts"):
        serve(registry, "streamable-http", host="0.0.0.0", port=1, insecure_no_auth=True)
    with pytest.raises(ConfigError, match="both tls_cert and tls_key"):
        serve(registry, "streamable-http", port=1, tls_cert="cert.pem")
    with pytest.raises(ConfigError, match="environment variable NOT_SET_ANYWHERE"):
        serve(registry, "streamable-http", port=1, auth="bearer",
              tokens=[{"name": "x", "env": "NOT_SET_ANYWHERE"}])
    with pytest.raises(ConfigError, match="invalid option: auth:"):
        serve(registry, "streamable-http", port=1, auth="magic")


def test_insecure_no_auth_listens_on_a_wildcard_address(web: Any, procs: Any) -> None:
    # Explicitly insecure: allowed, and the Host allow-list still applies.
    options = {"insecure_no_auth": True, "allowed_hosts": ["127.0.0.1:*"]}
    with web.served(options, procs, host="0.0.0.0") as (_, port):
        assert web.post("127.0.0.1", port, web.INIT)[0] == 200
        assert web.post("127.0.0.1", port, web.INIT, headers={"Host": "evil.example"})[0] == 421


def test_tls(web: Any, procs: Any, tmp_path: Path) -> None:
    cert, key = web.self_signed(tmp_path)
    options = {"tls_cert": str(cert), "tls_key": str(key), "auth": "bearer",
               "tokens": [{"name": "admin", "env": "ADMIN_TOKEN"}]}
    with web.served(options, procs, env=TOKENS) as (host, port):
        context = ssl.create_default_context(cafile=str(cert))
        status, _, text = web.post(host, port, web.INIT, headers=_auth(TOKENS["ADMIN_TOKEN"]),
                               context=context)
        assert status == 200 and "serverInfo" in text
        with pytest.raises(ssl.SSLError):  # a client that does not trust the certificate
            web.post(host, port, web.INIT, context=ssl.create_default_context())
