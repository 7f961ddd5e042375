"""The audit trail on the store every worker shares: the decisions of every worker, queried
from any of them (SQLite and a real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolregistry_policy as tp
from toolregistry import ToolRegistry


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def test_every_workers_decisions_are_queried_from_any(store: str) -> None:
    one, two = ToolRegistry(name="one", store=store), ToolRegistry(name="two", store=store)
    try:
        for reg in (one, two):
            reg.register(lambda: "ok", name="read")
            reg.register(lambda: "ok", name="delete")
            tp.configure(reg, audit_allowed=True,
                         rules=[tp.Rule("deny", tools=["delete"], name="no-delete")])
        one.invoke("read", {}, call_id="r1")
        two.invoke("delete", {}, call_id="d2")
        two.invoke("read", {}, call_id="r2")
        for reg in (one, two):
            records = tp.get_policy(reg).audit.query()
            assert [(r.call_id, r.decision, r.rule) for r in records] == [
                ("r1", "allow", "default"), ("d2", "deny", "no-delete"),
                ("r2", "allow", "default")]
        audit = tp.get_policy(one).audit
        assert [r.call_id for r in audit.query(decision="deny")] == ["d2"]
        assert [r.call_id for r in audit.query(tool="read", limit=1)] == ["r2"]
        assert audit.query(call_id="nothing") == []
        assert len(audit) == 1  # this process's records in memory
    finally:
        one.close()
        two.close()
