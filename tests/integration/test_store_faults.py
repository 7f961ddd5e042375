"""A PostgreSQL store lost under a running registry (the policy's budgets and approvals, the
inspector's log on it): its connections ended by the server (``pg_terminate_backend``) are
replaced unnoticed; while the server is down, calls that need it answer errors naming the store
(password masked) and nothing is half-written; when it is back, the same registry carries on."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.testing import PostgresCluster, _postgres_bindir

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    """A cluster of this test's own: it is stopped and started under the registry."""
    bindir = _postgres_bindir()
    if bindir is None:
        pytest.skip("this test needs PostgreSQL's initdb and pg_ctl")
    started = PostgresCluster(bindir)
    try:
        yield started
    finally:
        started.stop()


def _terminate_others(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                            ).fetchall()
    return len(rows)


def test_a_store_lost_mid_run_fails_calls_clearly_and_comes_back(
        tmp_path: Path, cluster: PostgresCluster) -> None:
    url = cluster.new_database().replace("toolregistry@", "toolregistry:s3cret@")
    config = tmp_path / "pyproject.toml"
    config.write_text(textwrap.dedent(f"""
        [tool.toolregistry]
        store = "{url}"
        [tool.toolregistry.plugins.policy]
        rules = [{{ tools = ["send_*"], decision = "ask" }}]
        [tool.toolregistry.plugins.policy.budgets]
        tools = {{ count = {{ max-calls = 3 }} }}
    """), encoding="utf-8")
    sent: list[str] = []
    with ToolRegistry(config=config) as reg:
        reg.register(lambda: "counted", name="count")

        def send_mail(to: str) -> str:
            sent.append(to)
            return f"sent to {to}"

        reg.register(send_mail)
        assert reg.invoke("count", {}).outcome == "ok"

        # The server ends every connection: the next call gets a fresh one.
        assert _terminate_others(url) >= 1
        first = reg.invoke("count", {})
        assert first.outcome == "ok", first.text

        cluster.stop_server()  # gone
        down = reg.invoke("count", {})
        assert down.is_error and "cannot be reached" in down.text, down.text
        assert "toolregistry:***@127.0.0.1" in down.text and "s3cret" not in down.text
        held = reg.invoke("send_mail", {"to": "ceo@example.com"})
        assert held.outcome == "denied" and "cannot be reached" in held.text, held.text
        assert "toolregistry:***@127.0.0.1" in held.text and "s3cret" not in held.text
        assert sent == []

        cluster.start_server()  # back: the same registry carries on
        back = reg.invoke("count", {})
        assert back.outcome == "ok", back.text
        # Exactly three counted: the call refused while it was down was not half-counted.
        spent = reg.invoke("count", {})
        assert spent.outcome == "denied" and "budget" in spent.text, spent.text
        pending = reg.invoke("send_mail", {"to": "ceo@example.com"})
        assert pending.outcome == "approval_required", pending.text
        assert len(reg.approvals.list()) == 1  # nothing left by the call made while down
    assert sent == []
