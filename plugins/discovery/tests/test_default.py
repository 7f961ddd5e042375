"""Hybrid retrieval is the default where the ``semantic`` extra is installed, BM25F alone
where it is not; the default opens the model with the first search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from toolregistry import Tool, ToolRegistry
from toolregistry_discovery import ToolDiscoveryTool
from toolregistry_discovery._plugin import get_discoverer

DATA = json.loads((Path(__file__).parent / "data" / "paraphrases.json").read_text("utf-8"))
PARAPHRASE = "sum of 3 and 4"  # no word in common with "add"


def _registry(tmp_path: Path, config: str = "") -> ToolRegistry:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(config, encoding="utf-8")
    reg = ToolRegistry(config=str(cfg))
    reg.register_tools([
        Tool(name=t["name"], description=t["description"], callable=lambda **kw: kw,
             parameters={"type": "object", "properties": {
                 k: {"type": "string", "description": v} for k, v in t["params"].items()}})
        for t in DATA["tools"]])
    reg.register(Tool(name="add", description="Add two numbers together.",
                      callable=lambda **kw: kw, parameters={"type": "object", "properties": {
                          "a": {"type": "number"}, "b": {"type": "number"}}}))
    return reg


def _names(results: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in results]


def test_standalone_default_is_hybrid(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    default = ToolDiscoveryTool(reg)
    assert default.hybrid and default.semantic is None  # opened with the first search
    assert _names(default.discover(PARAPHRASE))[0] == "add"
    assert default.semantic is not None
    assert ToolDiscoveryTool(reg, semantic=False).discover(PARAPHRASE) == []
    default.close()
    reg.close()


def test_discover_tools_default_is_hybrid(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    reg.enable_tool_discovery()
    found = reg.invoke("discover_tools", {"query": PARAPHRASE})
    assert found.value[0]["name"] == "add", found.text
    reg.close()


def test_configuration_turns_the_default_off(tmp_path: Path) -> None:
    reg = _registry(tmp_path, "[tool.toolregistry]\ntool-discovery = true\n\n"
                              "[tool.toolregistry.plugins.discovery]\nsemantic = false\n")
    discoverer = get_discoverer(reg)
    assert discoverer is not None and not discoverer.hybrid
    assert reg.invoke("discover_tools", {"query": PARAPHRASE}).value == []
    reg.close()


def test_bm25f_alone_where_the_extra_is_missing(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as if not installed
    reg = _registry(tmp_path)
    default = ToolDiscoveryTool(reg)
    assert not default.hybrid
    assert default.discover(PARAPHRASE) == []
    assert default.semantic is None
    reg.enable_tool_discovery()
    discoverer = get_discoverer(reg)
    assert discoverer is not None and not discoverer.hybrid
    reg.close()


def test_a_model_that_cannot_load_leaves_bm25f(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from toolregistry_discovery import _embedders

    def broken() -> Any:
        raise OSError("weights unreadable")

    monkeypatch.setattr(_embedders, "_default_embedder", broken)
    reg = _registry(tmp_path)
    with capture_logs() as logs:
        hits = ToolDiscoveryTool(reg).discover("add two numbers")
    assert _names(hits)[0] == "add"
    (event,) = [e for e in logs if e["event"] == "discovery.semantic_unavailable"]
    assert "weights unreadable" in event["error"]
    reg.close()


_LAZY_MODEL = """
import json, sys
from toolregistry import ToolRegistry

def add(a: float, b: float) -> float:
    '''Add two numbers together.'''
    return a + b

def read_file(path: str) -> str:
    '''Read the contents of a file from the filesystem.'''
    return path

def get_weather(city: str) -> str:
    '''Current weather for a city.'''
    return city

registry = ToolRegistry(tool_discovery=True, load_plugins=["discovery"])
for fn in (add, read_file, get_weather):
    registry.register(fn)
before = "tokenizers" in sys.modules
found = registry.invoke("discover_tools", {"query": "sum of 3 and 4"})
print(json.dumps({"before": before, "after": "tokenizers" in sys.modules,
                  "found": found.value[0]["name"]}))
"""


def test_the_default_loads_its_model_with_the_first_search(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", _LAZY_MODEL], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"before": False, "after": True, "found": "add"}, (out, proc.stderr)
