"""The browser tests on a machine without chromium: skipped with the reason shown (the README's
test command needs only Python and pip), unless ``TOOLREGISTRY_REQUIRE_BROWSER=1`` (what
``.ci/run`` sets after installing chromium) makes them fail instead.

Each runs the real browser tests in a pytest subprocess whose ``PATH`` holds only this
interpreter's folder, so no chromium is found.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ._requirements import run_without_tools

BROWSER_TESTS = [
    "plugins/inspector/tests/test_browser.py",
    "tests/integration/test_inspector.py::test_accept_a_changed_mcp_tool_in_the_browser",
    "tests/integration/test_inspector_policy.py",
]


def _run_without_chromium(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_without_tools(tmp_path, BROWSER_TESTS, "TOOLREGISTRY_REQUIRE_BROWSER", **env)


def test_without_chromium_the_browser_tests_skip_and_say_why(tmp_path: Path) -> None:
    proc = _run_without_chromium(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert " skipped" in out and "passed" not in out and "error" not in out, out[-3000:]
    assert "SKIPPED" in out and "chromium" in out and "apt-get install" in out, out[-3000:]


def test_required_browser_tests_fail_without_chromium(tmp_path: Path) -> None:
    proc = _run_without_chromium(tmp_path, TOOLREGISTRY_REQUIRE_BROWSER="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "skipped" not in out, out[-3000:]
    assert "TOOLREGISTRY_REQUIRE_BROWSER" in out and "chromium" in out, out[-3000:]
