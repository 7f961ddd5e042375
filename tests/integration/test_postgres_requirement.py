"""The PostgreSQL tests on a machine without PostgreSQL: skipped with the reason shown (the
README's test command needs only Python and pip), unless ``TOOLREGISTRY_REQUIRE_POSTGRES=1``
(what ``.ci/run`` sets after installing it) makes them fail instead.

Each runs real PostgreSQL tests in a pytest subprocess whose ``PATH`` holds only this
interpreter's folder and whose ``toolregistry.testing`` looks in no installation folder, so no
``initdb`` / ``pg_ctl`` is found.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ._requirements import run_without_tools

POSTGRES_TESTS = [
    "tests/test_store.py::test_postgres_schema_is_created_versioned_and_transactional",
    "plugins/inspector/tests/test_log_store.py::test_toolregistry_log_shows_every_worker_on_postgres",
    "plugins/policy/tests/test_shared_store.py::"
    "test_a_budget_admits_exactly_n_calls_across_processes_on_postgres",
]
HIDE = "import toolregistry.testing as testing\ntesting.POSTGRES_HOMES = ()\n"


def _run_without_postgres(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "no_postgres_homes.py").write_text(HIDE, encoding="utf-8")
    return run_without_tools(tmp_path, POSTGRES_TESTS, "TOOLREGISTRY_REQUIRE_POSTGRES",
                             "-p", "no:cacheprovider", "-p", "no_postgres_homes",
                             PYTHONPATH=str(tmp_path), **env)


def test_without_postgres_the_tests_skip_and_say_why(tmp_path: Path) -> None:
    proc = _run_without_postgres(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "3 skipped" in out and "passed" not in out and "error" not in out, out[-3000:]
    assert "SKIPPED" in out and "initdb" in out and "apt-get install" in out, out[-3000:]


def test_required_postgres_tests_fail_without_postgres(tmp_path: Path) -> None:
    proc = _run_without_postgres(tmp_path, TOOLREGISTRY_REQUIRE_POSTGRES="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    # The fixture fails: each test errors at its setup, none is skipped.
    assert re.search(r"\d+ skipped", out) is None and "3 errors" in out, out[-3000:]
    assert "TOOLREGISTRY_REQUIRE_POSTGRES" in out and "initdb" in out, out[-3000:]
