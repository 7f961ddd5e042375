"""The per-tool plan of the policy: the rules that may decide one tool's calls
(:class:`ToolPolicy`), and their argument checks compiled into one decision function
(:func:`compile_decider`).

The decision function answers what :meth:`Compiled.matches_arguments`, rule after rule, would
answer -- the index of the first rule whose checks all hold -- without reading the rules one
by one. Each rule is a bit of an integer mask; each argument the rules check is read once,
and what its value passes is looked up for all rules at a time:

* presence: a rule that checks an argument the call lacks does not match;
* bounds (``min`` / ``max``): the bounds of all rules, sorted, cut the numbers into regions
  (a bound itself is a region, between two bounds is one); a binary search finds the value's
  region, and the region's precomputed mask says which rules' bounds hold there;
* ``one-of``: a table from each listed value to the rules listing it (a linear search for
  unhashable values);
* ``inside`` / ``hosts`` and ``when`` (file system, URL parsing, code) are checked only for
  the rules still candidates, first candidate first, until one holds.

The first candidate left is the lowest bit of the mask. The function is generated as Python
source per tool (one branch per argument, no loop over rules), so that 100 rules cost a few
comparisons and mask operations.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._rules import ArgumentCheck, Compiled, ip_address, is_number, path_inside, url_host

if TYPE_CHECKING:
    from toolregistry import Tool

    from ._budgets import ToolBudget

__all__ = ["ToolPolicy", "compile_decider"]

Kind = Literal["allow", "deny", "ask"]
Decide = Callable[[Mapping[str, Any]], int]


class ToolPolicy:
    """The rules that may decide one tool's calls, compiled once per tool."""

    __slots__ = ("asks", "budget", "decide_index", "default", "rules", "static", "tool")

    def __init__(self, tool: Tool, rules: tuple[Compiled, ...], default: Kind,
                 budget: ToolBudget | None) -> None:
        self.tool = tool
        self.default: Kind = default
        self.budget = budget
        # The rules after the first one that matches every call of the tool never decide.
        kept = []
        for rule in rules:
            kept.append(rule)
            if rule.static:
                break
        self.rules = tuple(kept)
        first = kept[0] if kept else None
        self.static: Kind | None = (first.rule.decision if first is not None and first.static
                                    else default if first is None else None)
        self.asks = any(r.rule.decision == "ask" for r in kept) or (
            default == "ask" and not (kept and kept[-1].static))
        self.decide_index = compile_decider(self.rules)

    def decide(self, arguments: Mapping[str, Any]) -> tuple[Compiled | None, Kind]:
        """The first rule that matches the call, and its decision (``None``: the default)."""
        index = self.decide_index(arguments)
        if index < 0:
            return None, self.default
        rule = self.rules[index]
        return rule, rule.rule.decision


_MISSING = object()


def _listed(value: Any, lists: Sequence[tuple[int, tuple[Any, ...]]]) -> int:
    """The bits of the rules whose ``one-of`` list holds ``value`` (linear search)."""
    mask = 0
    for bit, values in lists:
        if value in values:
            mask |= bit
    return mask


class _Argument:
    """What the rules check of one argument, as masks (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.checking = 0  # rules that check it
        self.bounded: list[tuple[int, ArgumentCheck]] = []
        self.listing: list[tuple[int, ArgumentCheck]] = []

    def add(self, bit: int, check: ArgumentCheck) -> None:
        self.checking |= bit
        if check.min is not None or check.max is not None:
            self.bounded.append((bit, check))
        if check.one_of is not None:
            self.listing.append((bit, check))

    def bounds(self) -> tuple[list[float], list[int], int]:
        """The sorted bounds, the mask of each region, and the mask for a value that is not
        a number: the rules that check the argument and pass there."""
        unbounded = self.checking
        for bit, _ in self.bounded:
            unbounded &= ~bit
        points = sorted({b for _, c in self.bounded for b in (c.min, c.max) if b is not None})
        masks = []
        for region in range(2 * len(points) + 1):
            i = region // 2
            mask = unbounded
            for bit, check in self.bounded:
                if region % 2:  # the value equals points[i]
                    ok = (check.min is None or check.min <= points[i]) and (
                        check.max is None or check.max >= points[i])
                else:  # strictly between points[i - 1] and points[i]: no bound in between
                    ok = (check.min is None or (i > 0 and check.min <= points[i - 1])) and (
                        check.max is None or (i < len(points) and check.max >= points[i]))
                if ok:
                    mask |= bit
            masks.append(mask)
        return points, masks, unbounded

    def lists(self) -> tuple[dict[Any, int], list[tuple[int, tuple[Any, ...]]], int]:
        """The table of listed values (their rules' bits), the rules whose lists hold
        unhashable values (searched linearly), and the rules that list nothing."""
        unlisted = self.checking
        table: dict[Any, int] = {}
        linear: list[tuple[int, tuple[Any, ...]]] = []
        for bit, check in self.listing:
            unlisted &= ~bit
            values = tuple(check.one_of or ())
            try:
                for value in values:
                    hash(value)
            except TypeError:  # an unhashable value: this rule's list is searched as it is
                linear.append((bit, values))
                continue
            for value in values:
                table[value] = table.get(value, 0) | bit
        return table, linear, unlisted


def _inside_check(name: str, directories: Sequence[str]
                  ) -> Callable[[Mapping[str, Any]], bool]:
    """``inside`` of argument ``name`` (:func:`~._rules.path_inside`)."""
    def check(arguments: Mapping[str, Any]) -> bool:
        return path_inside(arguments[name], directories)

    return check


def _host_check(name: str, hosts: Sequence[str]) -> Callable[[Mapping[str, Any]], bool]:
    """``hosts`` of argument ``name`` (canonical already) as :func:`~._rules.host_allowed`
    checks it, with the names and addresses in a set."""
    exact = frozenset(h for h in hosts if not h.startswith("*."))
    suffixes = tuple(h[1:] for h in hosts if h.startswith("*."))

    def check(arguments: Mapping[str, Any]) -> bool:
        host = url_host(arguments[name])
        if not host:
            return False
        return host in exact or (bool(suffixes) and host.endswith(suffixes)
                                 and ip_address(host) is None)

    return check


def _verifier(rule: Compiled) -> Callable[[Mapping[str, Any]], bool] | None:
    """The checks of ``rule`` that masks do not cover (``inside``, ``hosts``, ``when``), in
    the rule's order; ``None`` when it has none."""
    slow: list[Callable[[Mapping[str, Any]], bool]] = []
    for check in rule.checks:
        if not isinstance(check, ArgumentCheck):
            slow.append(check)
            continue
        name = check.argument
        if check.inside:
            slow.append(_inside_check(name, check.inside))
        if check.hosts:
            slow.append(_host_check(name, check.hosts))
    if not slow:
        return None
    if len(slow) == 1:
        return slow[0]
    return lambda a: all(check(a) for check in slow)


def compile_decider(rules: Sequence[Compiled]) -> Decide:
    """One function of a call's arguments that returns the index of the first rule of
    ``rules`` whose argument checks all hold (``-1``: none does), as
    ``next((i for i, r in enumerate(rules) if r.matches_arguments(a)), -1)`` would (see the
    module docstring for how)."""
    if not any(rule.checks for rule in rules):
        first = 0 if rules else -1
        return lambda arguments: first
    every = (1 << len(rules)) - 1
    arguments: dict[str, _Argument] = {}
    verify: dict[int, Callable[[Mapping[str, Any]], bool]] = {}
    for index, rule in enumerate(rules):
        bit = 1 << index
        for check in rule.checks:
            if isinstance(check, ArgumentCheck):
                arguments.setdefault(check.argument, _Argument(check.argument)).add(bit, check)
        verifier = _verifier(rule)
        if verifier is not None:
            verify[index] = verifier
    names: dict[str, Any] = {"_M": _MISSING, "_bl": bisect_left, "_br": bisect_right,
                             "_numeric": is_number,
                             "_listed": _listed, "_verify": verify}
    lines = ["def decide(a):", f"    m = {every}"]
    for k, arg in enumerate(arguments.values()):
        names[f"_k{k}"] = arg.name
        absent = every & ~arg.checking
        lines += [f"    v = a.get(_k{k}, _M)",
                  "    if v is _M:",
                  f"        m &= {absent}"]
        if not (arg.bounded or arg.listing):
            continue  # present: nothing more the masks can tell
        lines += ["    else:",
                  f"        c = {arg.checking}"]
        if arg.bounded:
            points, masks, unbounded = arg.bounds()
            names[f"_b{k}"], names[f"_r{k}"] = points, masks
            lines += ["        t = type(v)",
                      "        if (t is int or t is float) and v == v or "
                      "t is not bool and t is not str and _numeric(v):",
                      f"            c &= _r{k}[_bl(_b{k}, v) + _br(_b{k}, v)]",
                      "        else:",
                      f"            c &= {unbounded}"]
        if arg.listing:
            table, linear, unlisted = arg.lists()
            names[f"_t{k}"], names[f"_l{k}"] = table, linear
            extra = f" | _listed(v, _l{k})" if linear else ""
            lines += ["        try:",
                      f"            c &= {unlisted} | _t{k}.get(v, 0){extra}",
                      "        except TypeError:",
                      f"            c &= {unlisted} | _listed(v, _l{k}_all)"]
            names[f"_l{k}_all"] = [(bit, tuple(check.one_of or ()))
                                   for bit, check in arg.listing]
        lines += [f"        m &= c | {absent}"]
    slow = 0
    for index in verify:
        slow |= 1 << index
    lines += ["    while m:",
              "        low = m & -m",
              "        i = low.bit_length() - 1",
              f"        if not low & {slow} or _verify[i](a):",
              "            return i",
              "        m ^= low",
              "    return -1"]
    exec(compile("\n".join(lines), "<policy rules>", "exec"), names)
    return names["decide"]  # type: ignore[no-any-return]
