"""The examples of docs/mcp.md hold: the configuration tables are served as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry

DOCS = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"


def _blocks(kind: str) -> list[str]:
    if not DOCS.exists():  # the plugin tested outside this repository
        pytest.skip(f"{DOCS} not present")
    return re.findall(rf"```{kind}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def _table(marker: str) -> str:
    return next(b for b in _blocks("toml") if marker in b)


def test_the_bearer_table_serves_as_documented(tmp_path: Path, procs: Any,
                                               registry: ToolRegistry) -> None:
    port = procs.free_port()
    table = _table('auth = "bearer"').replace("port = 8765", f"port = {port}")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.toolregistry]\n[[tool.toolregistry.sources]]\nkind = \"python\"\n"
        "target = \"doc_tools\"\n" + table, encoding="utf-8")
    (tmp_path / "doc_tools.py").write_text(textwrap.dedent('''
        from toolregistry import ToolMetadata
        from toolregistry.decorators import tool

        __all__ = ["lookup", "search_docs", "drop_table"]

        @tool(metadata=ToolMetadata(tags=["read_only"]))
        def lookup(key: str) -> str:
            """Look a key up."""
            return f"value of {key}"

        def search_docs(query: str) -> str:
            """Search the docs."""
            return f"found {query}"

        def drop_table(name: str) -> str:
            """Drop a table."""
            return f"dropped {name}"
    '''), encoding="utf-8")
    (tmp_path / "reader.token").write_text("reader-token-value\n", encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(tmp_path),
           "TOOLS_ADMIN_TOKEN": "admin-token-value"}
    with procs.listening([sys.executable, "-m", "toolregistry_mcp", "serve", "--config",
                          str(tmp_path / "pyproject.toml")], port, "/mcp", cwd=tmp_path,
                         env=env, stderr=subprocess.PIPE) as url:
        admin = registry.register_from_mcp(
            url, namespace="a", headers={"Authorization": "Bearer admin-token-value"})
        assert sorted(t.name for t in admin) == ["a-drop_table", "a-lookup", "a-search_docs"]
        reader = registry.register_from_mcp(
            url, namespace="r", headers={"Authorization": "Bearer reader-token-value"})
        assert sorted(t.name for t in reader) == ["r-lookup", "r-search_docs"]
        with pytest.raises(Exception, match="answered HTTP 401 Unauthorized"):
            registry.register_from_mcp(url, namespace="n",
                                       headers={"Authorization": "Bearer nope"})


def test_the_oauth_table_is_valid() -> None:
    from toolregistry_mcp import ServeOptions

    table = tomllib.loads(_table('auth = "oauth"'))["tool"]["toolregistry"]["plugins"]["mcp"]
    options = ServeOptions.resolve(table["serve"])
    assert options.auth == "oauth" and options.oauth is not None
    assert options.oauth.scopes["tools:read"].access().tags == {"read_only"}
    assert options.oauth.scopes["tools:admin"].access().everything


def test_the_revision_tables_are_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache hints and the request-state key of "Revisions, cache hints and approvals over
    MCP" are settings a served registry takes."""
    from toolregistry_mcp import ServeOptions, build_server

    serve = {}
    for marker in ("cache-hints", "request-state-key-env"):
        table = tomllib.loads(_table(marker))["tool"]["toolregistry"]["plugins"]["mcp"]
        serve.update(table["serve"])
    options = ServeOptions.resolve(serve)
    assert options.cache_hints["tools/list"].ttl_ms == 60000
    monkeypatch.setenv(str(options.request_state_key_env), "k" * 32)
    server = build_server(ToolRegistry(), cache_hints=dict(options.cache_hints),
                          request_state_key_env=options.request_state_key_env)
    assert server.cache_hints["server/discover"].scope == "public"


def test_the_client_auth_tables_are_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """Every source's ``auth`` table in the page builds the OAuth client it describes."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from toolregistry_mcp._oauth import ClientAuth, build_auth

    key = tmp_path / "keys" / "reporting.pem"
    key.parent.mkdir()
    key.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    for name in ("REPORTING_SECRET", "CRM_SECRET", "SSO_ID_TOKEN"):
        monkeypatch.setenv(name, "x")
    monkeypatch.chdir(tmp_path)
    built = []
    for block in _blocks("toml"):
        for source in tomllib.loads(block).get("tool", {}).get("toolregistry", {}).get(
                "sources", []):
            if isinstance(source.get("auth"), dict):
                auth = {**source["auth"], "token-store": str(tmp_path / "t.json")}
                ClientAuth.model_validate(auth)
                built.append(type(build_auth(source["server"], auth)).__name__)
    # ResilientOAuthProvider: the SDK's OAuthClientProvider, kept working across runs.
    assert built == ["ResilientOAuthProvider", "ClientCredentialsOAuthProvider",
                     "PrivateKeyJWTOAuthProvider", "IdentityAssertionOAuthProvider",
                     "ResilientOAuthProvider"]


def test_the_progress_examples_run_as_documented(tmp_path: Path, registry: ToolRegistry,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    served, client = (b for b in _blocks("python")
                      if "report_progress" in b or "srv-index" in b)
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    script = tmp_path / "index_server.py"
    script.write_text(served + "\nfrom toolregistry_mcp import serve\n\nserve(registry)\n",
                      encoding="utf-8")
    registry.register_from_mcp({"command": sys.executable, "args": [str(script)],
                                "cwd": str(tmp_path)}, namespace="srv")
    exec(compile(client, "mcp.md:progress", "exec"), {"registry": registry})
    out = capsys.readouterr().out.splitlines()
    # A burst may be coalesced to its latest value; the last one always arrives.
    assert out[-1] == "2.0 2.0 b.txt" and set(out) <= {"1.0 2.0 a.txt", "2.0 2.0 b.txt"}
