"""Budgets and rate limits: calls per tool, namespace or registry, calls per minute, and cost
weights against a total budget. Counted when a call is allowed to run: in this process, or on
the store every worker shares (``_counts``)."""

from __future__ import annotations

import fnmatch
import re
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attrs import define, frozen

from toolregistry.errors import ConfigError

from ._rules import ToolFacts

if TYPE_CHECKING:
    from ._counts import StoreCounts

__all__ = ["Budgets", "Limit"]

LIMIT_KEYS = ("max-calls", "per-minute")
BUDGET_KEYS = ("max-calls", "per-minute", "max-cost", "tools", "namespaces", "costs")
_WINDOW = 60.0


@frozen
class Limit:
    """``max_calls`` in all and ``per_minute`` in any 60 seconds, for what ``scope`` names
    (``registry``, ``tool 'send_*'``, ``namespace 'web'``)."""

    scope: str
    max_calls: int | None = None
    per_minute: int | None = None


def spent_calls(limit: Limit) -> str:
    """What the model is told when ``limit``'s call budget is spent."""
    return (f"the call budget of {limit.scope} is spent ({limit.max_calls} calls); "
            "do not call it again")


def rate_limited(limit: Limit, oldest_age: float) -> str:
    """What the model is told when ``limit``'s minute is full (its oldest call
    ``oldest_age`` seconds ago)."""
    wait = _WINDOW - oldest_age
    return (f"rate limit: at most {limit.per_minute} calls per minute to "
            f"{limit.scope}; try again in {max(1, round(wait))} s")


def spent_cost(spent: float, max_cost: float, cost: float, tool: str) -> str | None:
    """What the model is told when a call costing ``cost`` does not fit the cost budget
    (``None``: it fits)."""
    if spent + cost <= max_cost + 1e-9:
        return None
    return (f"the cost budget is spent ({spent:g} of {max_cost:g} used; a call to {tool!r} "
            f"costs {cost:g}); do not call it again")


@define
class _Counter:
    limit: Limit
    calls: int = 0
    recent: deque[float] | None = None

    def refusal(self, now: float) -> str | None:
        limit = self.limit
        if limit.max_calls is not None and self.calls >= limit.max_calls:
            return spent_calls(limit)
        if limit.per_minute is not None and self.recent is not None:
            while self.recent and now - self.recent[0] >= _WINDOW:
                self.recent.popleft()
            if len(self.recent) >= limit.per_minute:
                return rate_limited(limit, now - self.recent[0])
        return None

    def take(self, now: float) -> None:
        self.calls += 1
        if self.recent is not None:
            self.recent.append(now)


def _limit(scope: str, spec: Any, where: str) -> Limit:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must be a table of {', '.join(LIMIT_KEYS)}, got {spec!r}")
    spec = {str(k).replace("_", "-"): v for k, v in spec.items()}
    unknown = sorted(set(spec) - set(LIMIT_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(LIMIT_KEYS)}")
    values = {}
    for key in LIMIT_KEYS:
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ConfigError(f"{where}: {key} must be a whole number >= 0, got {value!r}")
        values[key] = value
    return Limit(scope, values["max-calls"], values["per-minute"])


class Budgets:
    """The budgets of one policy, their counters and the cost spent (thread-safe): counted in
    this process, or on ``shared`` (a store every worker and host counts on, atomically)."""

    def __init__(self, table: Mapping[str, Any] | None,
                 shared: StoreCounts | None = None) -> None:
        self.shared = shared
        table = {str(k).replace("_", "-"): v for k, v in (table or {}).items()}
        unknown = sorted(set(table) - set(BUDGET_KEYS))
        if unknown:
            raise ConfigError(f"policy budgets: unknown key {unknown[0]!r}; known: "
                              f"{', '.join(BUDGET_KEYS)}")
        self._lock = threading.Lock()
        registry = {k: table[k] for k in LIMIT_KEYS if k in table}
        self.registry = _Counter(_limit("the registry", registry, "policy budgets")) \
            if registry else None
        if self.registry is not None and self.registry.limit.per_minute is not None:
            self.registry.recent = deque()
        self.tools = self._scoped(table.get("tools"), "tool", "tools")
        self.namespaces = self._scoped(table.get("namespaces"), "namespace", "namespaces")
        self.costs: list[tuple[re.Pattern[str], float]] = []
        for pattern, weight in dict(table.get("costs") or {}).items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise ConfigError(f"policy budgets.costs.{pattern}: a cost must be a number "
                                  f">= 0, got {weight!r}")
            self.costs.append((re.compile(fnmatch.translate(pattern)), float(weight)))
        max_cost = table.get("max-cost")
        if max_cost is not None and (isinstance(max_cost, bool) or
                                     not isinstance(max_cost, (int, float)) or max_cost < 0):
            raise ConfigError(f"policy budgets: max-cost must be a number >= 0, got {max_cost!r}")
        self.max_cost: float | None = None if max_cost is None else float(max_cost)
        self.spent = 0.0

    def _scoped(self, table: Any, kind: str, key: str
                ) -> list[tuple[re.Pattern[str], _Counter]]:
        out: list[tuple[re.Pattern[str], _Counter]] = []
        if table is None:
            return out
        if not isinstance(table, Mapping):
            raise ConfigError(f"policy budgets.{key} must be a table, got {table!r}")
        for pattern, spec in table.items():
            counter = _Counter(_limit(f"{kind} {pattern!r}", spec,
                                      f"policy budgets.{key}.{pattern}"))
            if counter.limit.per_minute is not None:
                counter.recent = deque()
            out.append((re.compile(fnmatch.translate(str(pattern))), counter))
        return out

    @property
    def empty(self) -> bool:
        """True when there is no budget at all."""
        return (self.registry is None and not self.tools and not self.namespaces
                and self.max_cost is None)

    def for_tool(self, facts: ToolFacts) -> ToolBudget | None:
        """The counters and cost that concern one tool (``None``: none)."""
        counters = [c for p, c in self.tools if p.match(facts.name)]
        if facts.namespace is not None:
            counters += [c for p, c in self.namespaces if p.match(facts.namespace)]
        if self.registry is not None:
            counters.append(self.registry)
        cost = next((w for p, w in self.costs if p.match(facts.name)), 0.0)
        if not counters and (self.max_cost is None or not cost):
            return None
        return ToolBudget(self, tuple(counters), cost, facts.name)

    def _counters(self) -> list[_Counter]:
        scopes = [c for _, c in self.tools] + [c for _, c in self.namespaces]
        if self.registry is not None:
            scopes.append(self.registry)
        return scopes

    def reset(self) -> None:
        """Start every counter and the cost spent afresh (on a shared store: for every
        worker)."""
        if self.shared is not None:
            self.shared.reset()
            return
        with self._lock:
            for c in self._counters():
                c.calls = 0
                if c.recent is not None:
                    c.recent.clear()
            self.spent = 0.0

    def usage(self) -> dict[str, Any]:
        """Calls counted per scope and the cost spent, for dashboards."""
        if self.shared is not None:
            calls, spent = self.shared.usage([c.limit for c in self._counters()])
            return {"calls": calls, "cost": spent, "max_cost": self.max_cost}
        with self._lock:
            return {"calls": {c.limit.scope: c.calls for c in self._counters()},
                    "cost": self.spent,
                    "max_cost": self.max_cost}


@frozen
class ToolBudget:
    """What one tool's calls count against."""

    budgets: Budgets
    counters: tuple[_Counter, ...]
    cost: float
    tool: str

    def charge(self, now: float | None = None) -> str | None:
        """Count one call at ``now`` (``time.monotonic()``), or say why it may not run
        (nothing is counted then)."""
        budgets = self.budgets
        if now is None:
            now = time.monotonic()
        if budgets.shared is not None:
            return budgets.shared.charge(self, now)
        with budgets._lock:
            for counter in self.counters:
                why = counter.refusal(now)
                if why is not None:
                    return why
            if budgets.max_cost is not None and self.cost:
                why = spent_cost(budgets.spent, budgets.max_cost, self.cost, self.tool)
                if why is not None:
                    return why
            for counter in self.counters:
                counter.take(now)
            budgets.spent += self.cost
        return None

    def refund(self, now: float) -> None:
        """Give back the call counted at ``now`` (it did not run after all)."""
        budgets = self.budgets
        if budgets.shared is not None:
            budgets.shared.refund(self, now)
            return
        with budgets._lock:
            for counter in self.counters:
                counter.calls = max(0, counter.calls - 1)
                if counter.recent is not None and now in counter.recent:
                    counter.recent.remove(now)
            budgets.spent = max(0.0, budgets.spent - self.cost)
