"""Creating a registry with every plugin installed stays cheap: plugins load without their
heavy dependencies (imported on first use) and entry points are read without
``importlib.metadata``. (Its CPU time is measured by benchmarks/import_bench.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("importlib.metadata", "pydantic", "asyncio", "numpy", "mcp", "httpx", "yaml",
         "langchain_core", "opentelemetry", "ray", "email", "zipfile")

CODE = f"""
import json, sys
import toolregistry
registry = toolregistry.ToolRegistry()
loaded = sorted(r["name"] for r in registry.plugins.report() if r["status"] == "loaded")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r} or m in {HEAVY!r})
print(json.dumps({{"loaded": loaded, "heavy": heavy}}))
"""


def test_a_registry_with_every_plugin_imports_no_heavy_dependency() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=60, check=True)
    out = json.loads(proc.stdout)
    assert {"codemode", "discovery", "mcp", "openapi", "otel", "ray", "spool",
            "think"} <= set(out["loaded"]), out
    assert out["heavy"] == [], out["heavy"]
