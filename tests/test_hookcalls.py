"""Compiled hook calls (``_hookcalls.HookCompiler``) give what pluggy's own call gives: the same
result or exception, the implementations called in the same order, for every mix of plain
implementations and new-style wrappers, first-result hooks or not."""

from __future__ import annotations

import itertools
from collections.abc import Generator
from typing import Any

import pluggy
import pytest

from toolregistry._hookcalls import HookCompiler

spec = pluggy.HookspecMarker("cmp")
impl = pluggy.HookimplMarker("cmp")


class Specs:
    @spec(firstresult=True)
    def first(self, a: int, b: int) -> Any:
        """First result wins."""

    @spec
    def every(self, a: int, b: int) -> Any:
        """Every result."""


def _plain(kind: str, index: int, seen: list[str]) -> Any:
    def hook(a: int, b: int) -> Any:
        seen.append(f"plain{index}")
        if kind == "none":
            return None
        if kind == "raises":
            raise ValueError(f"plain{index}")
        return a * 10 + index

    return hook


def _wrapper(kind: str, index: int, seen: list[str]) -> Any:
    def hook(b: int) -> Generator[None, Any, Any]:  # opts in to one argument only
        seen.append(f"wrap{index}")
        if kind == "no_yield":
            return None
        try:
            inner = yield
        except ValueError as exc:
            seen.append(f"wrap{index} caught")
            if kind == "rescues":
                return f"rescued {exc}"
            raise
        seen.append(f"wrap{index} after")
        if kind == "raises":
            raise KeyError(f"wrap{index}")
        if kind == "twice":
            yield
        return [inner, b, index] if kind == "replaces" else inner

    return hook


PLAIN = ("none", "value", "raises")
WRAPPERS = ("passes", "replaces", "raises", "rescues", "no_yield", "twice")
KINDS = [("plain", k) for k in PLAIN] + [("wrapper", k) for k in WRAPPERS]


def _manager(kinds: tuple[tuple[str, str], ...], hook: str, seen: list[str]
             ) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("cmp")
    pm.add_hookspecs(Specs)
    for index, (role, kind) in enumerate(kinds):
        fn = (_plain if role == "plain" else _wrapper)(kind, index, seen)
        fn.__name__ = hook
        marked = impl(wrapper=True)(fn) if role == "wrapper" else impl(fn)
        plugin = type(f"P{index}", (), {hook: staticmethod(marked)})
        pm.register(plugin, name=f"p{index}")
    return pm


def _outcome(call: Any, seen: list[str]) -> tuple[Any, ...]:
    seen.clear()
    try:
        value: Any = ("ok", call(a=1, b=2))
    except BaseException as exc:  # what pluggy raises is compared
        text = str(exc).split(" at ")[0] if isinstance(exc, RuntimeError) else str(exc)
        value = ("raised", type(exc).__name__, text)
    return (*value, tuple(seen))


# (one plain implementation alone is called as it is: its own answer, not pluggy's list)
COMBOS = [(k,) for k in KINDS if k[0] == "wrapper"] + [
    c for n in (2, 3) for c in itertools.product(KINDS, repeat=n)]


@pytest.mark.parametrize("hook", ["first", "every"])
def test_compiled_calls_match_pluggy(hook: str) -> None:
    compared = 0
    for kinds in COMBOS:
        seen: list[str] = []
        pm = _manager(kinds, hook, seen)
        impls = getattr(pm.hook, hook).get_hookimpls()
        compiled = HookCompiler(pm, trace=False).caller(hook, impls)
        assert compiled is not None
        expected = _outcome(getattr(pm.hook, hook), seen)
        assert _outcome(compiled, seen) == expected, kinds
        compared += 1
    assert compared == len(COMBOS)


def test_a_subset_with_a_wrapper_is_compiled_without_pluggy() -> None:
    seen: list[str] = []
    pm = _manager((("plain", "value"), ("wrapper", "replaces"), ("plain", "value")), "first",
                  seen)
    every = pm.hook.first.get_hookimpls()
    chosen = [i for i in every if i.plugin_name != "p2"]
    compiled = HookCompiler(pm, trace=False).caller("first", chosen)
    assert compiled is not None and compiled is not pm.hook.first and not isinstance(compiled, pluggy.HookCaller)
    assert compiled(a=1, b=2) == [10, 2, 1] and seen == ["wrap1", "plain0", "wrap1 after"]
    # tracing keeps pluggy's own path, where its monitoring sees every call
    traced = HookCompiler(pm, trace=True).caller("first", chosen)
    assert isinstance(traced, pluggy.HookCaller)
