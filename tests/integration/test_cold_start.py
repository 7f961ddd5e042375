"""Creating a registry with every plugin installed stays cheap: plugins load without their
heavy dependencies (imported on first use) and entry points are read without
``importlib.metadata``. (Its CPU time is measured by benchmarks/import_bench.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("importlib.metadata", "pydantic", "asyncio", "numpy", "mcp", "httpx", "yaml",
         "langchain_core", "opentelemetry", "ray", "email", "zipfile",
         # standard modules only some paths need: hashing a schema or an approval id,
         # close-match suggestions, images
         "hashlib", "difflib", "mimetypes", "base64")

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


# Standard and kernel modules that building a registry does without: pathlib only once a
# configuration file is found, logging only once the application imported it (nobody can have
# configured it before), docstring parsing, schema building and validation only when a
# function is made a tool or a tool is called; the Tool model and the call and result types
# (and json with them) once a tool is registered; the provider formats and the emitter once
# schemas are emitted or calls read; the hook façade once a hook is called; change events
# once something changes; the source options and the python source kind once a source is
# loaded; the shared change feed once a registry shares its changes; the context seams
# (and contextvars) once a plugin uses them.
LAZY = ("pathlib", "urllib", "ipaddress", "logging", "json", "toolregistry._docstrings",
        "toolregistry._schema", "toolregistry._validators", "toolregistry._annotations",
        "toolregistry.tool", "toolregistry.types", "toolregistry._content",
        "toolregistry.formats", "toolregistry._hooks", "toolregistry._deciding",
        "toolregistry._results", "toolregistry.events", "toolregistry._source_options",
        "toolregistry._kind_options", "toolregistry._sources", "toolregistry._fanout",
        "toolregistry._calling", "toolregistry._context", "toolregistry._redaction",
        "contextvars")

CODE_LAZY = f"""
import sys
import toolregistry
registry = toolregistry.ToolRegistry()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {LAZY!r} or m in {LAZY!r})
import json
print(json.dumps(loaded))
"""


def test_a_registry_without_a_configuration_file_loads_only_what_building_it_needs(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    proc = subprocess.run([sys.executable, "-c", CODE_LAZY], capture_output=True, text=True,
                          timeout=60, check=True, cwd=tmp_path, env=env)
    assert json.loads(proc.stdout) == [], proc.stdout


def test_events_reach_logging_configured_after_the_registry_was_built(tmp_path: Path) -> None:
    code = ("import sys, toolregistry; toolregistry.ToolRegistry(); "
            "assert 'logging' not in sys.modules; "
            "import logging; logging.basicConfig(level=logging.INFO); "
            "toolregistry.ToolRegistry(load_plugins=['no-such-plugin'])")
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, timeout=60, check=True, cwd=tmp_path)
    assert "plugin.unknown_name" in proc.stderr, proc.stderr


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_schemas_on_the_example_with_a_warm_list_cache_imports_no_mcp(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")},
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "DEMO_DIR": str(EXAMPLES),
           "DEMO_API_URL": "http://127.0.0.1:9"}
    runs = []
    for _ in ("cold", "warm"):
        # The CLI itself; -X importtime names every module the process imported.
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "toolregistry.cli",
                               "--config", str(EXAMPLES / "pyproject.toml"), "schemas"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout)  # the schemas
        modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                   if line.startswith("import time:")}
        runs.append(sorted(m for m in modules if m.split(".")[0] in ("mcp", "mcp_types")))
    cold, warm = runs
    assert cold, "the first run lists the server with the SDK"
    assert warm == [], warm[:5]
