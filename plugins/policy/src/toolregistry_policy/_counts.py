"""Budgets counted on the store every worker and host shares: each charge is one transaction
under a lock every process takes, so a budget of N calls admits exactly N calls in all."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolregistry.plugin import log

from ._budgets import _WINDOW, Limit, rate_limited, spent_calls, spent_cost

if TYPE_CHECKING:
    from toolregistry.plugin import Store

    from ._budgets import ToolBudget

__all__ = ["StoreCounts"]

SCHEMA = ("policy-budgets", 1, (
    "CREATE TABLE IF NOT EXISTS policy_budget_counts (scope TEXT PRIMARY KEY, "
    "calls BIGINT NOT NULL DEFAULT 0, cost DOUBLE PRECISION NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS policy_budget_recent (scope TEXT NOT NULL, "
    "at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS policy_budget_recent_scope ON policy_budget_recent "
    "(scope, at)",
))
_LOCK = "toolregistry-policy.budgets"
_COST = ""  # the row of the cost spent (no scope is named so)


class StoreCounts:
    """Counters, the calls of the last minute and the cost spent, in ``store``'s tables.
    Times are wall-clock seconds (every host counts the same minute)."""

    def __init__(self, store: Store) -> None:
        component, version, ddl = SCHEMA
        store.ensure_schema(component, version, ddl)
        self.store = store
        # Callers pass time.monotonic(); the same offset turns a charge's time and its refund's
        # into the same wall-clock time.
        self._offset = time.time() - time.monotonic()

    def charge(self, budget: ToolBudget, now: float) -> str | None:
        """Count one call of ``budget`` at ``now`` (monotonic), or say why it may not run;
        a store that cannot be reached denies the call (a budget it cannot count is spent)."""
        try:
            return self._charge(budget, now)
        except Exception as exc:
            log.warning("policy.budget_store_failed", store=str(self.store.url),
                        tool=budget.tool, error=f"{type(exc).__name__}: {exc}")
            return (f"the budget of {budget.tool!r} cannot be counted: the store "
                    f"{self.store.url} cannot be reached; try again later")

    def _charge(self, budget: ToolBudget, now: float) -> str | None:
        at = now + self._offset
        max_cost = budget.budgets.max_cost
        with self.store.transaction(lock=_LOCK) as tx:
            for counter in budget.counters:
                limit = counter.limit
                if limit.max_calls is not None:
                    rows = tx.execute("SELECT calls FROM policy_budget_counts WHERE scope = ?",
                                      (limit.scope,))
                    if rows and rows[0][0] >= limit.max_calls:
                        return spent_calls(limit)
                if limit.per_minute is not None:
                    tx.execute("DELETE FROM policy_budget_recent WHERE scope = ? AND at <= ?",
                               (limit.scope, at - _WINDOW))
                    count, oldest = tx.execute(
                        "SELECT COUNT(*), MIN(at) FROM policy_budget_recent WHERE scope = ?",
                        (limit.scope,))[0]
                    if count >= limit.per_minute:
                        return rate_limited(limit, at - float(oldest))
            if max_cost is not None and budget.cost:
                rows = tx.execute("SELECT cost FROM policy_budget_counts WHERE scope = ?",
                                  (_COST,))
                why = spent_cost(float(rows[0][0]) if rows else 0.0, max_cost, budget.cost,
                                 budget.tool)
                if why is not None:
                    return why
            for counter in budget.counters:
                tx.execute("INSERT INTO policy_budget_counts (scope, calls) VALUES (?, 1) "
                           "ON CONFLICT (scope) DO UPDATE SET "
                           "calls = policy_budget_counts.calls + 1", (counter.limit.scope,))
                if counter.limit.per_minute is not None:
                    tx.execute("INSERT INTO policy_budget_recent (scope, at) VALUES (?, ?)",
                               (counter.limit.scope, at))
            if budget.cost:
                tx.execute("INSERT INTO policy_budget_counts (scope, cost) VALUES (?, ?) "
                           "ON CONFLICT (scope) DO UPDATE SET "
                           "cost = policy_budget_counts.cost + excluded.cost",
                           (_COST, budget.cost))
        return None

    def refund(self, budget: ToolBudget, now: float) -> None:
        """Give back the call of ``budget`` counted at ``now``."""
        at = now + self._offset
        with self.store.transaction(lock=_LOCK) as tx:
            for counter in budget.counters:
                tx.execute("UPDATE policy_budget_counts SET calls = calls - 1 "
                           "WHERE scope = ? AND calls > 0", (counter.limit.scope,))
                if counter.limit.per_minute is not None:
                    tx.execute("DELETE FROM policy_budget_recent WHERE scope = ? AND at = ?",
                               (counter.limit.scope, at))
            if budget.cost:
                tx.execute("UPDATE policy_budget_counts SET cost = CASE WHEN cost > ? "
                           "THEN cost - ? ELSE 0 END WHERE scope = ?",
                           (budget.cost, budget.cost, _COST))

    def reset(self) -> None:
        """Forget every count, for every worker."""
        with self.store.transaction(lock=_LOCK) as tx:
            tx.execute("DELETE FROM policy_budget_counts")
            tx.execute("DELETE FROM policy_budget_recent")

    def usage(self, limits: Sequence[Limit]) -> tuple[dict[str, int], float]:
        """Calls counted per scope of ``limits`` and the cost spent."""
        with self.store.transaction() as tx:
            rows = dict(tx.execute("SELECT scope, calls FROM policy_budget_counts"))
            spent = tx.execute("SELECT cost FROM policy_budget_counts WHERE scope = ?",
                               (_COST,))
        return ({limit.scope: int(rows.get(limit.scope, 0)) for limit in limits},
                float(spent[0][0]) if spent else 0.0)
