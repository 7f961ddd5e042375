"""Rules: what they match, first match wins, the default, configuration errors naming the rule,
and tools allowed statically paying nothing."""

from __future__ import annotations

import asyncio
import http.server
import os
import socket
import textwrap
import threading
import urllib.request
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import AnyUrl

import toolregistry_policy as tp
from toolregistry import Tool, ToolCall, ToolMetadata, ToolRegistry, ToolResult
from toolregistry.errors import ConfigError
from toolregistry.plugin import hookimpl
from toolregistry.tool import Provenance


def _echo(**kwargs: object) -> str:
    return "ran"


def _tools() -> list[Tool]:
    schema = {"type": "object", "properties": {"path": {"type": "string"},
                                               "url": {"type": "string"},
                                               "n": {"type": "number"}}}
    return [
        Tool(name="fs-write", parameters=schema, callable=_echo, namespace="fs",
             metadata=ToolMetadata(destructive_hint=True, tags={"file_system"}),
             provenance=Provenance("mcp", "files")),
        Tool(name="fs-read", parameters=schema, callable=_echo, namespace="fs",
             metadata=ToolMetadata(read_only_hint=True), provenance=Provenance("mcp", "files")),
        Tool(name="pets-delete_pet", parameters=schema, callable=_echo, namespace="pets",
             metadata=ToolMetadata(extra={"openapi": {"method": "delete", "path": "/pets"}}),
             provenance=Provenance("openapi", "petstore")),
        Tool(name="pets-list_pets", parameters=schema, callable=_echo, namespace="pets",
             metadata=ToolMetadata(extra={"openapi": {"method": "get", "path": "/pets"}}),
             provenance=Provenance("openapi", "petstore")),
        Tool(name="fetch", parameters=schema, callable=_echo,
             metadata=ToolMetadata(custom_tags={"web"}), provenance=Provenance("function")),
    ]


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register_tools(_tools())
    yield reg
    reg.close()


def _outcome(reg: ToolRegistry, name: str, **arguments: object) -> str:
    return reg.invoke(name, arguments).outcome


def test_matchers(registry: ToolRegistry) -> None:
    tp.configure(registry, default="deny", hide_denied=False, rules=[
        tp.Rule("allow", annotations={"readOnlyHint": True}),
        tp.Rule("deny", sources=["openapi"], methods=["DELETE"], reason="no deletes"),
        tp.Rule("allow", namespaces=["pets"]),
        tp.Rule("ask", tags=["file_system"], annotations={"destructiveHint": True}),
        tp.Rule("allow", tags=["web"], sources=["python"]),
    ])
    assert _outcome(registry, "fs-read") == "ok"
    assert _outcome(registry, "pets-delete_pet") == "denied"
    assert "no deletes" in registry.invoke("pets-delete_pet", {}).text
    assert _outcome(registry, "pets-list_pets") == "ok"
    assert _outcome(registry, "fs-write") == "approval_required"
    assert _outcome(registry, "fetch") == "ok"


def test_first_match_wins_and_the_default(registry: ToolRegistry) -> None:
    tp.configure(registry, rules=[{"tools": ["fs-*"], "decision": "deny", "reason": "first"},
                                  {"tools": ["fs-read"], "decision": "allow"}],
                 default="ask")
    assert "first" in registry.invoke("fs-read", {}).text
    assert _outcome(registry, "fetch") == "approval_required"
    tp.configure(registry, default="deny", deny_message="not on the list")
    assert "not on the list" in registry.invoke("fetch", {}).text


def test_argument_predicates(registry: ToolRegistry, tmp_path: Path) -> None:
    inside = tmp_path / "work"
    inside.mkdir()
    outside = tmp_path / "secret"
    outside.mkdir()
    (inside / "link").symlink_to(outside)
    tp.configure(registry, default="deny", rules=[
        {"tools": ["fs-write"], "decision": "allow", "arguments": {"path": {"inside": [str(inside)]}}},
        {"tools": ["fetch"], "decision": "allow",
         "arguments": {"url": {"hosts": ["api.example.com", "*.example.org"]},
                       "n": {"min": 1, "max": 10}}},
    ])
    assert _outcome(registry, "fs-write", path=str(inside / "a.txt")) == "ok"
    assert _outcome(registry, "fs-write", path=str(inside / ".." / "secret" / "x")) == "denied"
    assert _outcome(registry, "fs-write", path=str(inside / "link" / "x")) == "denied"  # symlink
    assert _outcome(registry, "fs-write") == "denied"  # a missing argument never matches
    assert _outcome(registry, "fetch", url="https://api.example.com/x", n=5) == "ok"
    assert _outcome(registry, "fetch", url="https://a.b.example.org/", n=1) == "ok"
    assert _outcome(registry, "fetch", url="https://example.org/", n=1) == "denied"
    assert _outcome(registry, "fetch", url="https://api.example.com.evil.io/", n=1) == "denied"
    assert _outcome(registry, "fetch", url="https://user@evil.io/api.example.com", n=2) == "denied"
    assert _outcome(registry, "fetch", url="https://api.example.com/", n=11) == "denied"
    assert _outcome(registry, "fetch", url="https://api.example.com/", n=0.5) == "denied"


def test_code_predicate(registry: ToolRegistry) -> None:
    tp.configure(registry, rules=[tp.Rule("deny", tools=["fetch"], reason="too long",
                                          when=lambda args: len(args.get("url", "")) > 20)])
    assert _outcome(registry, "fetch", url="https://a.io") == "ok"
    assert _outcome(registry, "fetch", url="https://a.io/" + "x" * 30) == "denied"


@pytest.mark.parametrize(("rule", "message"), [
    ({"name": "r1", "decision": "deny", "toolz": ["x"]}, "policy rule 'r1' (rules[0]): unknown key 'toolz'"),
    ({"name": "r2", "decision": "allow", "tools": ["fs/*"]}, "policy rule 'r2' (rules[0]): tools has a bad glob 'fs/*'"),
    ({"name": "r3", "decision": "ask", "annotations": {"readonlyHint": True}}, "policy rule 'r3' (rules[0]): unknown annotation 'readonlyHint'"),
    ({"name": "r4", "decision": "maybe"}, "policy rule 'r4' (rules[0]): a policy rule's decision must be allow, deny or ask"),
    ({"name": "r5", "decision": "allow", "sources": ["ftp"]}, "unknown source 'ftp'"),
    ({"name": "r6", "decision": "allow", "methods": ["FETCH"]}, "unknown HTTP method 'FETCH'"),
    ({"name": "r7", "decision": "allow", "arguments": {"n": {"min": "a"}}}, "arguments.n: min must be a number"),
    ({"name": "r8", "decision": "allow", "arguments": {"n": {"within": 3}}}, "arguments.n: unknown key 'within'"),
    ({"tools": ["x"]}, "policy rules[0]: needs decision"),
])
def test_bad_rules_name_the_rule(registry: ToolRegistry, rule: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        tp.configure(registry, rules=[rule])
    assert message in str(info.value)


def test_rules_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.toolregistry.plugins.policy]
        default = "deny"
        deny-message = "ask the admin"

        [[tool.toolregistry.plugins.policy.rules]]
        name = "workdir"
        tools = ["fs-*"]
        decision = "allow"
        arguments = { path = { inside = ["work"] } }
    """), encoding="utf-8")
    (tmp_path / "work").mkdir()
    reg = ToolRegistry(config=tmp_path / "pyproject.toml")
    try:
        reg.register_tools(_tools())
        # "work" is relative to the configuration file's folder.
        assert _outcome(reg, "fs-write", path=str(tmp_path / "work" / "f")) == "ok"
        assert "ask the admin" in reg.invoke("fs-write", {"path": "/etc/passwd"}).text
        assert tp.get_policy(reg).check("fs-write", {"path": "/etc"}) == ("deny", "default",
                                                                          "ask the admin")
    finally:
        reg.close()


def test_bad_rule_in_pyproject_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [[tool.toolregistry.plugins.policy.rules]]
        name = "oops"
        tools = ["x"]
        decision = "ask"
        annotations = { destructive = true }
    """), encoding="utf-8")
    reg = ToolRegistry(config=tmp_path / "pyproject.toml")
    try:
        # The policy is made when the first tool arrives (to hide denied tools): the error
        # comes then, and the registry is left unchanged.
        with pytest.raises(ConfigError, match=r"policy rule 'oops'.*unknown annotation 'destructive'"):
            reg.register_tools(_tools())
    finally:
        reg.close()


@pytest.mark.parametrize("typo", ["defualt = \"deny\"", "hide-denid = false",
                                  "audit_sise = 5"])
def test_an_unknown_key_in_the_policy_table_is_an_error(tmp_path: Path, typo: str) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.toolregistry.plugins.policy]\n{typo}\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as in an application: a warning is not seen
        with pytest.raises(ConfigError, match=r"\[tool\.toolregistry\.plugins\.policy\] "
                                              r".*unknown option '" + typo.split(maxsplit=1)[0]):
            ToolRegistry(config=tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.toolregistry.plugins.policy]\ndefualt = \"deny\"\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"did you mean 'default'\?"):
        ToolRegistry(config=tmp_path / "pyproject.toml")


class Spans:
    """Another plugin that observes every call of every tool (as otel and the inspector do
    when every plugin is installed, e.g. in `nox -s bench`)."""

    def __init__(self) -> None:
        self.finished: list[str] = []

    @hookimpl
    def call_observer(self, tool: Tool) -> Spans:
        return self

    def call_started(self, call: ToolCall) -> None:
        return None

    def call_finished(self, call: ToolCall, result: ToolResult, token: object) -> None:
        self.finished.append(call.name)


def _policy_hooks(registry: ToolRegistry, name: str) -> list[str]:
    """The policy's hooks in the call plan of ``name``: its authorize, its observers."""
    hooks = registry._get_executor().pipeline._plans[name].hooks
    found = [type(o).__module__ for o in hooks.observers
             if type(o).__module__.startswith("toolregistry_policy")]
    return found + (["authorize"] if hooks.authorize is not None else [])


@pytest.mark.parametrize("observed", [False, True], ids=["policy-only", "with-an-observer"])
def test_static_allow_pays_nothing(registry: ToolRegistry, observed: bool) -> None:
    spans = Spans()
    if observed:
        registry.plugins.add(spans, name="spans")
    tp.configure(registry, rules=[tp.Rule("ask", tools=["fs-write"]),
                                  tp.Rule("allow", tools=["fetch"], arguments={"n": {"max": 3}})])
    for name in ("fs-read", "fs-write", "fetch"):
        registry.invoke(name, {"n": 1})
    plans = registry._get_executor().pipeline._plans
    assert _policy_hooks(registry, "fs-read") == []  # static allow: no policy hook at all
    # ... and nothing else of the policy: the plan is what the other plugins put there.
    assert plans["fs-read"].hooks.authorize is None
    assert list(plans["fs-read"].hooks.observers) == ([spans] if observed else [])
    assert _policy_hooks(registry, "fetch") == ["authorize"]  # depends on the arguments
    assert _policy_hooks(registry, "fs-write") == [  # may ask: the store is kept in step
        "toolregistry_policy._plugin", "authorize"]
    assert spans.finished == (["fs-read", "fs-write", "fetch"] if observed else [])
    assert [r.tool for r in tp.get_policy(registry).audit.query()] == ["fs-write", "fetch"]


def test_configure_recompiles_plans(registry: ToolRegistry) -> None:
    assert _outcome(registry, "fetch") == "ok"
    tp.configure(registry, rules=[tp.Rule("deny", tools=["fetch"])], hide_denied=False)
    assert _outcome(registry, "fetch") == "denied"
    tp.configure(registry, rules=[])
    assert _outcome(registry, "fetch") == "ok"


def test_tools_denied_outright_are_hidden(registry: ToolRegistry) -> None:
    """Denied whatever the arguments: disabled with the reason, so neither get_schemas nor
    discovery shows them; enabled again when the rules change; argument rules hide nothing."""
    tp.configure(registry, rules=[tp.Rule("deny", tools=["fs-*"], reason="no files today"),
                                  tp.Rule("deny", tools=["fetch"], arguments={"n": {"max": 3}})])
    assert sorted(registry.list_tools()) == ["fetch", "pets-delete_pet", "pets-list_pets"]
    result = registry.invoke("fs-read", {})
    assert result.outcome == "disabled" and "denied by policy: no files today" in result.text
    schemas = {s["function"]["name"] for s in registry.get_schemas()}
    assert "fs-read" not in schemas and "fetch" in schemas

    registry.register(lambda: "x", name="new", namespace="fs")  # fs-new: arrives hidden
    assert not registry.is_enabled("fs-new")
    tp.configure(registry, rules=[])
    assert registry.is_enabled("fs-read") and registry.is_enabled("fs-new")

    registry.disable("fetch", reason="maintenance")  # the application's own: left alone
    tp.configure(registry, rules=[tp.Rule("deny", tools=["fs-write"])])
    registry.enable("fs-write")  # the application overrides the policy's hiding
    assert registry.is_enabled("fs-write")
    assert registry.invoke("fs-write", {}).outcome == "denied"  # still denied when called
    tp.configure(registry, rules=[])
    assert not registry.is_enabled("fetch")


def test_relative_paths_resolve_against_the_working_directory(registry: ToolRegistry,
                                                              tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkdir("work")
    tp.configure(registry, default="deny", rules=[
        {"decision": "allow", "arguments": {"path": {"inside": [str(tmp_path / "work")]}}}])
    assert _outcome(registry, "fs-write", path="work/x") == "ok"
    assert _outcome(registry, "fs-write", path="../x") == "denied"


@pytest.mark.parametrize("key", ["tools", "namespaces", "tags", "sources", "methods",
                                 "annotations"])
def test_an_empty_condition_is_refused_not_a_match_all(registry: ToolRegistry, key: str
                                                       ) -> None:
    empty: object = {} if key == "annotations" else []
    with pytest.raises(ConfigError, match=rf"policy rule 'r' \(rules\[0\]\): {key} must be a "
                                          r"non-empty .*leave " + key + " out"):
        tp.configure(registry, rules=[{"name": "r", "decision": "deny", key: empty}])
    with pytest.raises(ConfigError, match=f"{key} must be a non-empty"):
        tp.configure(registry, rules=[tp.Rule("deny", name="r", **{key: empty})])
    assert _outcome(registry, "fetch", url="https://a.io") == "ok"  # the old rules stand


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records the paths it was asked for."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"secret")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()
    thread.join(5)


SPELLINGS = ["2130706433", "0x7f000001", "127.1", "0177.0.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]",
             "[::ffff:7f00:1]"]


def test_hosts_compare_canonical_addresses(loopback_server: tuple[int, list[str]]) -> None:
    port, hits = loopback_server
    reg = ToolRegistry()

    @reg.register
    def fetch(url: str) -> str:
        """Fetch a URL."""
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())

    tp.configure(reg, rules=[
        {"name": "no-loopback", "tools": ["fetch"], "decision": "deny", "reason": "internal",
         "arguments": {"url": {"hosts": ["127.0.0.1", "169.254.169.254"]}}}])
    try:
        # every legacy spelling is what the resolver connects to: 127.0.0.1
        for host in SPELLINGS[:4]:
            assert {a[4][0] for a in socket.getaddrinfo(host, port, socket.AF_INET)} == \
                {"127.0.0.1"}, host
        for host in SPELLINGS:
            result = reg.invoke("fetch", {"url": f"http://{host}:{port}/{host}"})
            assert result.outcome == "denied", (host, result.text)
        for host in ("2852039166", "0xa9fea9fe", "169.254.43518", "[::ffff:169.254.169.254]"):
            assert reg.invoke("fetch", {"url": f"http://{host}/latest/meta-data"}
                              ).outcome == "denied", host
        assert hits == []  # nothing reached the server
        assert reg.invoke("fetch", {"url": f"http://localhost:{port}/ok"}).ok  # a name
        assert hits == ["/ok"]
    finally:
        reg.close()
    tp_reg = ToolRegistry()
    tp_reg.register(lambda url: "ran", name="get")
    tp.configure(tp_reg, default="deny", rules=[
        {"tools": ["get"], "decision": "allow", "arguments": {"url": {"hosts": ["127.1"]}}}])
    try:
        assert tp_reg.invoke("get", {"url": "http://2130706433/"}).ok  # both sides canonical
        assert tp_reg.invoke("get", {"url": "http://127.0.0.2/"}).outcome == "denied"
        assert tp_reg.invoke("get", {"url": "http://256.1/"}).outcome == "denied"  # a name
    finally:
        tp_reg.close()


def test_rules_decide_on_the_values_the_tool_receives() -> None:
    received: list[object] = []
    reg = ToolRegistry()

    @reg.register
    def transfer(amount: float, to: str) -> str:
        """Transfer money."""
        received.append(amount)
        return f"sent {amount}"

    @reg.register
    def pick(n: int) -> int:
        """Pick a number."""
        received.append(n)
        return n

    tp.configure(reg, rules=[
        {"name": "big", "tools": ["transfer"], "decision": "deny", "reason": "too much",
         "arguments": {"amount": {"min": 1000}}},
        {"name": "ask-mid", "tools": ["transfer"], "decision": "ask",
         "arguments": {"amount": {"min": 100}}},
        {"name": "no-3", "tools": ["pick"], "decision": "deny", "arguments": {"n": {"one-of": [3]}}},
    ])

    async def both_async() -> list[ToolResult]:
        return [await reg.ainvoke("transfer", {"amount": "5000", "to": "x"}),
                *await reg.aexecute_tool_calls([
                    {"id": "a", "name": "pick", "arguments": {"n": "3"}},
                    {"id": "b", "name": "transfer", "arguments": '{"amount": "500", "to": "x"}'}])]

    try:
        results = [reg.invoke("transfer", {"amount": "5000", "to": "x"}),
                   reg.invoke("pick", {"n": "3"}),
                   *reg.execute_tool_calls([
                       {"id": "1", "name": "transfer", "arguments": {"amount": "1e4", "to": "x"}},
                       {"id": "2", "name": "transfer", "arguments": {"amount": "250", "to": "x"}}]),
                   *asyncio.run(both_async())]
        assert [r.outcome for r in results] == [
            "denied", "denied", "denied", "approval_required", "denied", "denied",
            "approval_required"], [r.text for r in results]
        assert "too much" in results[0].text
        assert received == []  # nothing ran
        assert reg.invoke("transfer", {"amount": "20", "to": "x"}).ok
        assert reg.invoke("pick", {"n": "4"}).ok
        assert received == [20.0, 4]
        policy = tp.get_policy(reg)
        assert policy.check("transfer", {"amount": "5000", "to": "x"})[:2] == ("deny", "big")
        assert policy.check("pick", {"n": "3"})[:2] == ("deny", "no-3")
    finally:
        reg.close()


def test_number_rules_read_decimals_and_url_rules_read_url_objects() -> None:
    reg = ToolRegistry()

    @reg.register
    def pay(amount: Decimal) -> str:
        """Pay."""
        return "paid"

    @reg.register
    def get(url: AnyUrl) -> str:
        """Get a URL."""
        return "got"

    tp.configure(reg, rules=[
        {"tools": ["pay"], "decision": "deny", "arguments": {"amount": {"max": 0}}},
        {"tools": ["get"], "decision": "deny", "arguments": {"url": {"hosts": ["127.0.0.1"]}}}])
    try:
        assert reg.invoke("pay", {"amount": "-5"}).outcome == "denied"
        assert reg.invoke("pay", {"amount": "5"}).ok
        assert reg.invoke("get", {"url": "http://2130706433/x"}).outcome == "denied"
        assert reg.invoke("get", {"url": "http://example.com/"}).ok
    finally:
        reg.close()


def test_env_vars_and_relative_store_in_the_table(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "scratch").mkdir(parents=True)
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SANDBOX", str(sandbox))
    (conf / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.toolregistry.plugins.policy]
        default = "deny"
        store = "approvals.db"

        [[tool.toolregistry.plugins.policy.rules]]
        tools = ["fs-write"]
        decision = "allow"
        arguments = { path = { inside = ["${SANDBOX}/scratch"] } }

        [[tool.toolregistry.plugins.policy.rules]]
        tools = ["fs-read"]
        decision = "ask"
    """), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the store is relative to the file, not the working folder
    reg = ToolRegistry(config=conf / "pyproject.toml")
    try:
        reg.register_tools(_tools())
        assert _outcome(reg, "fs-write", path=str(sandbox / "scratch" / "f")) == "ok"
        assert _outcome(reg, "fs-write", path=str(tmp_path / "f")) == "denied"
        assert reg.invoke("fs-read", {"path": "x"}).pending
        assert (conf / "approvals.db").exists() and not (tmp_path / "approvals.db").exists()
    finally:
        reg.close()
