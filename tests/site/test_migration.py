"""docs/migrating-from-0.19.md: every 0.19 export is in its mapping table, the export list is
what 0.19 really exports, and the page's "before" program runs on toolregistry 0.19.

toolregistry 0.19 has our import name, so it only ever runs in a virtual environment of its own
(``.bench-venvs/``, built with the benchmarks' helper); the tests that need it are skipped, with
the reason, only when that environment cannot be built (no network to the package index).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs._blocks import REPO, parse

PAGE = REPO / "docs" / "migrating-from-0.19.md"
EXPORTS = REPO / "docs" / "_data" / "toolregistry-0.19-exports.txt"
LISTER = REPO / "tests" / "site" / "list_019_exports.py"


def _exports() -> list[str]:
    return [line for line in EXPORTS.read_text().splitlines() if line and not line.startswith("#")]


def table_names() -> tuple[set[str], set[str]]:
    """The names in the first column of the mapping tables: (exact names, wildcard prefixes).

    ``.name`` is relative to the first backticked name of the section's heading; ``name.*``
    covers ``name`` and everything under it; a call's parentheses are ignored.
    """
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## API mapping"):]
    names: set[str] = set()
    wildcards: set[str] = set()
    base = ""
    for line in section.splitlines():
        if line.startswith("### "):
            found = re.findall(r"`([\w.]+)`", line)
            base = found[0] if found else ""
            continue
        if not line.startswith("|") or set(line) <= {"|", "-", " "}:
            continue
        first = line.strip().strip("|").split("|")[0]
        for token in re.findall(r"`([^`]+)`", first):
            token = token.split("(")[0].strip()
            if token.startswith("."):
                token = base + token
            if token.endswith(".*"):
                wildcards.add(token[:-2])
            else:
                names.add(token)
    return names, wildcards


def test_every_019_export_is_in_the_mapping_table() -> None:
    names, wildcards = table_names()
    missing = [e for e in _exports()
               if e not in names and not any(e == w or e.startswith(w + ".") for w in wildcards)]
    assert not missing, (f"{len(missing)} toolregistry 0.19 exports are not in the mapping table "
                         f"of {PAGE.name}:\n" + "\n".join(missing))


def test_the_mapping_table_names_only_real_019_exports() -> None:
    """A typo in the table would leave a real name uncovered and a false one listed."""
    exports = set(_exports())
    names, wildcards = table_names()
    stray = sorted(n for n in names if n.startswith("toolregistry.") and n not in exports)
    stray += sorted(w + ".*" for w in wildcards
                    if not any(e == w or e.startswith(w + ".") for e in exports))
    assert not stray, f"not exported by 0.19: {stray}"


def test_the_page_counts_the_exports_right() -> None:
    assert f"{len(_exports())} names" in PAGE.read_text(encoding="utf-8")


def _load(name: str, path: Path) -> ModuleType:
    """A standard-library-only script as a module (they are not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def old_python() -> str:
    """The interpreter of a virtual environment holding toolregistry 0.19 (built once)."""
    common = _load("_bench_common", REPO / "benchmarks" / "_common.py")
    lister = _load("_list_019_exports", LISTER)
    try:
        python = common.ensure_venv(f"toolregistry-{lister.VERSION}-full", lister.REQUIREMENTS,
                                    base_python=sys.executable)
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"cannot build a virtual environment with toolregistry 0.19 "
                    f"(the package index is not reachable?): {exc}")
    return str(python)


def test_the_export_list_is_what_019_exports() -> None:
    """The committed list is regenerated from an installed 0.19 and must be the same."""
    out = subprocess.run([old_python(), str(LISTER)], capture_output=True, text=True,
                         check=True, cwd=REPO, timeout=300)
    assert out.stdout == EXPORTS.read_text(), (
        f"{EXPORTS.name} is out of date: regenerate it with "
        f"`{LISTER.relative_to(REPO)} --venv /tmp/venv019 > {EXPORTS.relative_to(REPO)}`")


def test_the_before_example_runs_on_019(tmp_path: Path) -> None:
    blocks = [b for b in parse(PAGE) if b.options.get("python") == "0.19"]
    programs = [b for b in blocks if b.lang == "python"]
    outputs = [b for b in blocks if "output" in b.options]
    assert programs and outputs, "the page has no 0.19 program and output"
    printed = ""
    for block in blocks:
        if block.lang == "python":
            proc = subprocess.run([old_python(), "-c", block.code], capture_output=True,
                                  text=True, cwd=tmp_path, timeout=300)
            assert proc.returncode == 0, f"{block.where} failed on 0.19:\n{proc.stderr}"
            printed = proc.stdout
        else:
            assert " ".join(block.code.split()) in " ".join(printed.split()), (
                f"{block.where}: 0.19 printed something else:\n{printed}")


# --- the MCP and OpenAPI rows of "Behaviour that can surprise", shown on 0.19 -----------------
# (what 1.0 does instead is tested by plugins/mcp and plugins/openapi)

_MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("faults")


@server.tool()
def boom(x: int) -> str:
    """Always fails."""
    raise ValueError(f"bad x {x}")


@server.tool()
def echo(x: int) -> int:
    """Returns x."""
    return x


if __name__ == "__main__":
    server.run("stdio")
'''

_MCP_CLIENT = '''
import json, sys, warnings
from toolregistry import ToolRegistry

warnings.simplefilter("ignore")
registry = ToolRegistry()
registry.register_from_mcp({"command": sys.executable, "args": ["server.py"], "transport": "stdio"})
boom = registry.invoke("boom", {"x": 1})
echo = registry.invoke("echo", {"x": "not a number"})
print(json.dumps({"types": [type(boom).__name__, type(echo).__name__],
                  "boom": str(boom), "echo": str(echo)}))
'''


def _run_019(tmp_path: Path, script: str) -> str:
    proc = subprocess.run([old_python(), "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_019_reports_an_mcp_error_as_a_success_and_sends_unvalidated_arguments(
        tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(_MCP_SERVER, encoding="utf-8")
    out = json.loads(_run_019(tmp_path, _MCP_CLIENT))
    # isError: true came back as a plain str result (not 0.19's ErrorResult), the MCP result
    # object dumped as JSON
    assert '"is_error": true' in out["boom"] and '"text": "Error executing tool boom"' in out["boom"]
    # "not a number" for an integer was not checked: the server's own validation answered
    assert "validation error" in out["echo"] and "not a number" in out["echo"]
    assert "ErrorResult" not in out["types"], out


_OPENAPI_CLIENT = '''
import json, threading, warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen = []


class Handler(BaseHTTPRequestHandler):
    def answer(self):
        seen.append([self.command, self.path, self.headers.get("X-Trace")])
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = answer

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}"
item = [{"name": "item_id", "in": "path", "required": True, "schema": {"type": "string"}}]
spec = {"openapi": "3.0.3", "info": {"title": "Items", "version": "1"}, "paths": {
    "/items/{item_id}": {
        "get": {"operationId": "get_item", "parameters": item + [
            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}]},
        "patch": {"operationId": "rename_item", "parameters": item, "requestBody": {"content": {
            "application/json": {"schema": {"type": "object",
                                            "properties": {"name": {"type": "string"}}}}}}},
    }}}

from toolregistry import ToolRegistry
from toolregistry.utils import HttpxClientConfig

warnings.simplefilter("ignore")
registry = ToolRegistry()
registry.register_from_openapi(HttpxClientConfig(base_url=base), spec)
registry.invoke("get_item", {"item_id": "a1", "X-Trace": "t1"})
server.shutdown()
print(json.dumps({"tools": registry.list_tools(), "seen": seen}))
'''


def test_019_drops_patch_and_never_fills_in_path_parameters(tmp_path: Path) -> None:
    out = json.loads(_run_019(tmp_path, _OPENAPI_CLIENT))
    assert out["tools"] == ["get_item"]  # the PATCH operation is gone, without a word
    # the path template is requested literally; path and header parameters become the query
    assert out["seen"] == [["GET", "/items/{item_id}?item_id=a1&X-Trace=t1", None]]
