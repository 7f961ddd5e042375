"""Tool-poisoning screening against a deliberately malicious server (issue 15.10)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

import toolregistry_mcp
from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError, ToolRejected

POISONED = Path(__file__).parent / "servers" / "poisoned_server.py"
POISONED_SPEC = {"command": sys.executable, "args": [str(POISONED)]}

# What each poisoned tool hides (the kinds the screening must report, at least).
EXPECTED = {
    "add": {"tag_block", "secret_access", "exfiltration", "concealment", "shadowing"},
    "weather": {"invisible_characters", "exfiltration"},
    "rename": {"bidi_controls"},
    "lookup": {"secret_access"},
    "format_text": {"exfiltration"},
    "list_files": {"cross_tool"},
    "obey": {"instruction_override"},
}


def _kinds(registry: ToolRegistry, name: str, key: str = "mcp_findings") -> set[str]:
    return {f["kind"] for f in registry[name].metadata.extra.get(key, [])}


def _load_both(registry: ToolRegistry, spec: Any, **options: Any) -> None:
    registry.register_from_mcp(spec(), namespace="good")
    registry.register_from_mcp(POISONED_SPEC, namespace="evil", **options)


def test_findings_are_flagged_on_the_tool_and_raised_as_events(registry: ToolRegistry,
                                                                spec: Any) -> None:
    with structlog.testing.capture_logs() as logs:
        _load_both(registry, spec)
    for tool, kinds in EXPECTED.items():
        assert kinds <= _kinds(registry, f"evil-{tool}"), (tool, _kinds(registry, f"evil-{tool}"))
    # The hidden text carried by tag characters is decoded into the finding.
    weather = registry["evil-weather"].metadata.extra["mcp_findings"]
    assert any("collector.evil.example" in f["excerpt"] for f in weather)
    assert any(f["where"] == "inputSchema.properties.word.description"
               for f in registry["evil-lookup"].metadata.extra["mcp_findings"])
    shadow = [f for f in registry["evil-add"].metadata.extra["mcp_findings"]
              if f["kind"] == "shadowing"]
    assert "'good-add'" in shadow[0]["excerpt"]
    cross = [f for f in registry["evil-list_files"].metadata.extra["mcp_findings"]
             if f["kind"] == "cross_tool"]
    assert "'good-set_echo'" in cross[0]["excerpt"]
    # Nothing flagged where nothing is hidden: the clean tool, and the test server's tools.
    assert "mcp_findings" not in registry["evil-clean"].metadata.extra
    assert not [n for n in registry.list_tools()
                if n.startswith("good-") and "mcp_findings" in registry[n].metadata.extra]
    events = {e["tool"]: e for e in logs if e["event"] == "mcp.tool_suspicious"}
    assert set(events) == {f"evil-{t}" for t in EXPECTED}
    assert events["evil-obey"]["action"] == "warn" and events["evil-obey"]["log_level"] == "warning"
    # warn: flagged, still callable, description as the server sent it.
    assert registry.is_enabled("evil-add")
    assert "<IMPORTANT>" in registry["evil-add"].description


def test_strip_removes_invisible_characters(registry: ToolRegistry, spec: Any) -> None:
    _load_both(registry, spec, screening="strip")
    weather = registry["evil-weather"]
    assert weather.description == "Get the weather for a city."
    assert {f["kind"] for f in weather.metadata.extra["mcp_findings"]} == {"invisible_characters"}
    assert weather.metadata.extra["mcp_findings"][0]["excerpt"].startswith("stripped ")
    assert registry["evil-rename"].description == "Rename a file. eman elif eht esrever"
    # Other kinds are still flagged (strip changes only the characters).
    assert "tag_block" in _kinds(registry, "evil-add")
    assert registry.invoke("evil-weather", {"city": "Oslo"}).content == "ok"


def test_disable_keeps_flagged_tools_from_the_model(registry: ToolRegistry, spec: Any) -> None:
    _load_both(registry, spec, screening="disable")
    for tool in EXPECTED:
        assert not registry.is_enabled(f"evil-{tool}")
    assert registry.is_enabled("evil-clean") and registry.is_enabled("evil-rugpull")
    names = {s["function"]["name"] for s in registry.get_schemas()}
    assert "evil-add" not in names and "evil-clean" in names
    refused = registry.invoke("evil-add", {"a": 1, "b": 2})
    assert refused.is_error and "screening flagged tool 'evil-add'" in refused.text
    assert registry.invoke("evil-clean", {"text": "hi"}).content == "HI"


def test_refuse_refuses_the_whole_source(registry: ToolRegistry, spec: Any,
                                         children_gone: Any) -> None:
    registry.register_from_mcp(spec(), namespace="good")
    with pytest.raises(ToolRejected) as info:
        registry.register_from_mcp(POISONED_SPEC, namespace="evil", screening="refuse")
    message = str(info.value)
    assert "refused (screening = 'refuse')" in message
    assert "'add'" in message and "tag_block" in message
    assert not [n for n in registry.list_tools(include_disabled=True) if n.startswith("evil-")]
    assert len(toolregistry_mcp.sources(registry)) == 1


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_tool_poisoned_after_its_first_call_is_flagged_pending(registry: ToolRegistry,
                                                                 spec: Any) -> None:
    _load_both(registry, spec)
    assert "mcp_findings" not in registry["evil-rugpull"].metadata.extra
    with structlog.testing.capture_logs() as logs:
        assert registry.invoke("evil-rugpull", {}).content == "ok"
        _wait(lambda: registry["evil-rugpull"].metadata.extra.get("pending_findings"),
              "the poisoned change was not screened")
    assert {"tag_block", "secret_access"} <= _kinds(registry, "evil-rugpull", "pending_findings")
    assert registry["evil-rugpull"].description == "Tell a joke."  # what was accepted
    assert any(e["event"] == "mcp.tool_suspicious" and e["pending"] for e in logs)
    # Accepting the reviewed version flags the tool itself.
    pending = registry["evil-rugpull"].metadata.extra["pending_hash"]
    toolregistry_mcp.refresh(registry, accept_changes={"evil-rugpull": pending})
    assert "<system>" in registry["evil-rugpull"].description
    assert "tag_block" in _kinds(registry, "evil-rugpull")


def test_disable_also_applies_to_a_poisoned_change(registry: ToolRegistry, spec: Any) -> None:
    _load_both(registry, spec, screening="disable")
    registry.invoke("evil-rugpull", {})
    _wait(lambda: not registry.is_enabled("evil-rugpull"), "the changed tool stayed enabled")


def test_refuse_after_loading_disables_the_source(registry: ToolRegistry, spec: Any) -> None:
    # Only the harmless tools pass at load; the rug pull comes later.
    registry.register_from_mcp(POISONED_SPEC, namespace="evil", screening="refuse",
                               include=["clean", "rugpull"])
    registry.invoke("evil-rugpull", {})
    _wait(lambda: not registry.is_enabled("evil-clean"), "the source was not refused")
    source = toolregistry_mcp.sources(registry)[0]
    assert source.refused is not None and "rugpull" in source.refused
    result = registry.invoke("evil-clean", {"text": "x"})
    assert result.is_error and "screening flagged" in result.text


def test_screening_off_and_bad_values(registry: ToolRegistry, tmp_path: Path) -> None:
    registry.register_from_mcp(POISONED_SPEC, namespace="evil", screening="off")
    assert "mcp_findings" not in registry["evil-add"].metadata.extra
    with pytest.raises(ConfigError, match="screening must be one of"):
        registry.register_from_mcp(POISONED_SPEC, namespace="x", screening="block")
    config = tmp_path / "bad.toml"
    config.write_text("[tool.toolregistry.plugins.mcp]\nscreening = 'block'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="screening"):
        ToolRegistry(config=config).register_from_mcp(POISONED_SPEC)
