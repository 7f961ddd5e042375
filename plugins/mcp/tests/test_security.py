"""What a stdio server can see of the application, and the two hardening options (issue
15.8): the environment filtering hands no secret to a server, but a server running as the same
user can read the parent's /proc/<pid>/environ -- unless the parent is made non-dumpable
(``protect-parent``), or the server runs in a sandbox or as another user (``command-prefix``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError

SERVER = Path(__file__).parent / "servers" / "demo_server.py"
SECRET = "sk-test-7f3a9c-not-a-real-key"

SCENARIO = """
import json, os, sys
from toolregistry import ToolRegistry
with ToolRegistry(config=sys.argv[1]) as reg:
    reg.register_from_mcp({"command": sys.executable, "args": [sys.argv[2]]},
                          include=["scan_environ", "env"])
    names = json.loads(reg.invoke("env", {}).text)
    scan = json.loads(reg.invoke("scan_environ", {"needle": os.environ["SECRET_TOKEN"]}).text)
    print(json.dumps({"env_names": names, "scan": scan, "me": os.getpid()}))
"""


def _as_user() -> list[str]:
    """Run as an ordinary user would. Root keeps its user id here but loses every capability
    (CAP_SYS_PTRACE would let it read any process's environ, hardened or not)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is not there to drop capabilities")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


def _scenario(folder: Path, settings: str) -> dict[str, Any]:
    config = folder / "pyproject.toml"
    config.write_text(f"[tool.toolregistry.plugins.mcp]\nshutdown-grace = 0.3\n{settings}",
                      encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SECRET_TOKEN": SECRET,
           "HOME": str(folder)}
    done = subprocess.run([*_as_user(), sys.executable, "-c", SCENARIO, str(config),
                           str(SERVER)], capture_output=True, text=True, timeout=120,
                          check=False, env=env, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux")
def test_filtering_hides_secrets_from_the_environment_but_not_from_proc(
        tmp_path: Path, no_orphans: None) -> None:
    result = _scenario(tmp_path, "")
    # What the filtering does: the secret is not in the server's own environment ...
    assert "SECRET_TOKEN" not in result["env_names"]
    # ... and what it does not: a same-user server reads it from the parent's /proc entry.
    assert result["scan"]["parent"] == result["me"]
    assert result["me"] in result["scan"]["found"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux")
def test_protect_parent_keeps_the_parents_environ_from_same_user_servers(
        tmp_path: Path, no_orphans: None) -> None:
    result = _scenario(tmp_path, "protect-parent = true\n")
    assert result["scan"]["parent"] == result["me"]
    assert result["me"] not in result["scan"]["found"]
    assert result["scan"]["denied"] >= 1  # the parent's entry: permission denied


def _unshare_works() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--pid", "--fork",
                            "--mount-proc", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare with user namespaces")
def test_command_prefix_runs_servers_in_a_sandbox(registry: ToolRegistry,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  spec: Any) -> None:
    # The registry's own process holds the secret in its environment at exec time: a child.
    prefix = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    registry.register_from_mcp(spec(), include=["scan_environ", "echo"], command_prefix=prefix)
    scan = json.loads(registry.invoke("scan_environ", {"needle": "PATH="}).text)
    # In its own PID namespace with its own /proc, the server sees no process of ours at all.
    assert scan["found"] == [] and scan["parent"] == 0
    assert registry.invoke("echo", {"text": "sandboxed"}).content == "sandboxed"


def test_bad_hardening_options_are_named(registry: ToolRegistry, spec: Any) -> None:
    with pytest.raises(ConfigError, match="command_prefix must be a list of strings"):
        registry.register_from_mcp(spec(), command_prefix="bwrap --unshare-all")
    from toolregistry_mcp import MCPConnectError

    with pytest.raises(MCPConnectError, match="'no-such-sandbox' was not found"):
        registry.register_from_mcp(spec(), command_prefix=["no-such-sandbox", "--"])
