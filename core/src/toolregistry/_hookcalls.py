"""Compiled hook calls: pluggy's semantics (order, opt-in arguments, first result, wrappers)
for a chosen set of implementations, without pluggy's dispatch where it can be skipped.

:class:`HookCompiler` turns implementations into one callable taking the hook's keyword
arguments: a single plain implementation is called directly (pluggy's dispatch costs more than
the work), several plain ones in pluggy's order, and wrappers, tracing or a subset through
pluggy's own (subset) hook caller. :class:`ToolHooks` holds what was compiled for one tool's
calls, its call observers among them (:func:`observing`). Which implementations concern a tool, and what happens when one raises, is the hook
façade's (``_hooks``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .hookspecs import UNOBSERVED

if TYPE_CHECKING:
    from pluggy import HookImpl, PluginManager

    from .hookspecs import CallObserver, Runner
    from .types import ToolCall, ToolResult

__all__ = ["Asker", "HookCall", "HookCompiler", "ObserverFailed", "ToolHooks", "Watching",
           "declaration_askers", "observing"]

HookCall = Callable[..., Any]
"""A compiled hook call: takes the hook's keyword arguments, returns what pluggy would."""
Asker = tuple["HookImpl", Callable[..., Any], Callable[[Mapping[str, Any]], tuple[Any, ...]]]
"""A declaration hook's implementation, its function and the picker of its arguments."""

# The argument names of hooks whose single implementation, when it takes them all, is called
# as it is, with no re-mapping (an implementation may take fewer arguments than the spec:
# pluggy's opt-in).
_FULL_ARGNAMES = {
    "pre_invoke": ("registry", "tool", "call"),
    "authorize": ("registry", "tool", "call", "arguments"),
    "authorized": ("registry", "tool", "call", "decision"),
    "post_invoke": ("registry", "tool", "call", "result"),
    "schema_transform": ("registry", "tool", "schema", "api_format"),
}


def _picker(argnames: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """Keyword arguments -> the tuple of ``argnames``' values, in their order."""
    if len(argnames) >= 2:
        return operator.itemgetter(*argnames)
    if argnames:
        name = argnames[0]
        return lambda kwargs: (kwargs[name],)
    return lambda kwargs: ()


def _reordered(fn: Callable[..., Any], where: tuple[int, ...]) -> Callable[[Any, Any], Any]:
    """``fn`` called with the arguments at positions ``where`` of the two it is given."""
    def call(a: Any, b: Any) -> Any:
        both = (a, b)
        return fn(*[both[i] for i in where])

    return call


class ToolHooks:
    """The per-call hook implementations that concern one tool, compiled once per tool.

    ``pre_invoke``, ``authorize``, ``authorized`` and ``post_invoke`` are ``None`` when no
    implementation concerns the tool (such a hook costs one attribute test per call);
    ``observers`` are the tool's call observers (empty: none); ``runner`` is where its calls
    run (``None``: the registry's own threads and loop).
    """

    __slots__ = ("authorize", "authorized", "failed", "finished", "observers", "post_invoke",
                 "pre_invoke", "runner", "started")

    def __init__(self, pre_invoke: HookCall | None, post_invoke: HookCall | None,
                 authorize: HookCall | None = None,
                 observers: tuple[CallObserver, ...] = (), runner: Runner | None = None,
                 authorized: HookCall | None = None,
                 failed: ObserverFailed | None = None) -> None:
        self.pre_invoke = pre_invoke
        self.post_invoke = post_invoke
        self.authorize = authorize
        self.observers = observers
        self.runner = runner
        self.authorized = authorized
        self.failed = failed
        self.started, self.finished = observing(observers, failed or _unreported)

    def with_runner(self, runner: Runner) -> ToolHooks:
        """The same hooks, with the tool's calls run by ``runner``."""
        return ToolHooks(self.pre_invoke, self.post_invoke, self.authorize, self.observers,
                         runner, self.authorized, self.failed)


ObserverFailed = Callable[[Any, str, Exception], None]
"""Told that an observer's method raised: the observer, the method's name, the exception."""

Watching = list[tuple["CallObserver", Any]]
"""The observers that watch one call, each with the token its ``call_started`` returned."""


def _unreported(observer: Any, method: str, exc: Exception) -> None:
    """The failure policy of hooks compiled without one: the observer's failure is ignored."""


def _nobody(call: ToolCall, result: ToolResult, watching: Watching) -> None:
    """The ``finished`` of a tool without observers."""


def observing(observers: Sequence[CallObserver], failed: ObserverFailed
              ) -> tuple[Callable[[ToolCall], Watching | None] | None,
                         Callable[[ToolCall, ToolResult, Watching], None]]:
    """A tool's call observers as two calls, made once per call plan: ``started(call)``
    (``None`` without observers) tells each observer the call begins and returns those that
    watch it with their tokens, or ``None`` when every one sat it out (``UNOBSERVED``);
    ``finished(call, result, watching)`` tells those the call ended.

    An exception is handed to ``failed`` and never fails the call (an observer whose start
    failed is told of the end with the token ``None``). Methods are looked up per call, so
    an observer may change them while plans hold it.
    """
    if not observers:
        return None, _nobody

    def started(call: ToolCall) -> Watching | None:
        watching: Watching = []
        for observer in observers:
            try:
                token = observer.call_started(call)
            except Exception as exc:
                failed(observer, "call_started", exc)
                token = None
            if token is not UNOBSERVED:
                watching.append((observer, token))
        return watching or None

    def finished(call: ToolCall, result: ToolResult, watching: Watching) -> None:
        for observer, token in watching:
            try:
                observer.call_finished(call, result, token)
            except Exception as exc:
                failed(observer, "call_finished", exc)

    return started, finished


def declaration_askers(impls: Sequence[HookImpl]) -> tuple[Asker, ...]:
    """The plain implementations of a per-tool declaration hook (``call_hooks``,
    ``schema_hooks``), each with its function and the picker of its arguments."""
    return tuple((impl, impl.function, _picker(tuple(impl.argnames))) for impl in impls
                 if not (impl.hookwrapper or impl.wrapper))


class HookCompiler:
    """Compiles calls of hook implementations of one plugin manager; made again whenever the
    set of implementations changes (``Hooks.refresh``), which empties its cache of subset
    callers. ``trace`` (the ``trace-hooks`` setting) routes every call through pluggy."""

    __slots__ = ("_hook", "_pm", "_subsets", "_trace")

    def __init__(self, pm: PluginManager, trace: bool) -> None:
        self._pm = pm
        self._hook = pm.hook
        self._trace = trace  # tracing keeps pluggy's full path
        self._subsets: dict[tuple[str, frozenset[int]], HookCall] = {}

    def plain(self, name: str, impls: Sequence[HookImpl], *, first: bool = False
              ) -> HookCall:
        """A call of hook ``name`` with pluggy's semantics for plain implementations --
        last registered first, each given the arguments it names, an exception ends the call,
        ``first``: the first non-``None`` result, else the list of them -- without pluggy's
        dispatch; pluggy's own caller when there is a wrapper, none, or tracing is on."""
        caller: HookCall = getattr(self._hook, name)
        if not impls or self._trace or any(i.hookwrapper or i.wrapper for i in impls):
            return caller
        # pluggy calls an implementation with its arguments by position, in its order
        order = tuple((impl.function, _picker(tuple(impl.argnames)))
                      for impl in reversed(impls))

        if first:
            def call_first(**kwargs: Any) -> Any:
                for fn, pick in order:
                    result = fn(*pick(kwargs))
                    if result is not None:
                        return result
                return None

            return call_first

        def call_all(**kwargs: Any) -> list[Any]:
            results = []
            for fn, pick in order:
                result = fn(*pick(kwargs))
                if result is not None:
                    results.append(result)
            return results

        return call_all

    def by_position(self, name: str, impls: Sequence[HookImpl], argnames: tuple[str, str], *,
                    first: bool = False) -> Callable[[Any, Any], Any]:
        """:meth:`plain` for a hook of the two arguments ``argnames``, given by position:
        an implementation that takes both, in that order, is called with them as they are
        (no keyword dict, no picking; ``register`` and ``on_change`` run on every
        registration). ``first``: the first non-``None`` result, else ``None``."""
        if not impls or self._trace or any(i.hookwrapper or i.wrapper for i in impls):
            caller = self.plain(name, impls, first=first)
            return lambda a, b: caller(**{argnames[0]: a, argnames[1]: b})
        fns: list[Callable[[Any, Any], Any]] = []
        for impl in reversed(impls):  # pluggy: last registered first
            fn, wanted = impl.function, tuple(impl.argnames)
            if wanted == argnames:
                fns.append(fn)
            else:  # fewer arguments, or another order: each by position in its own order
                fns.append(_reordered(fn, tuple(argnames.index(arg) for arg in wanted)))
        order = tuple(fns)
        if first:
            def call_first(a: Any, b: Any) -> Any:
                for fn in order:
                    result = fn(a, b)
                    if result is not None:
                        return result
                return None

            return call_first

        def call_all(a: Any, b: Any) -> None:
            for fn in order:
                fn(a, b)

        return call_all

    def caller(self, name: str, impls: Sequence[HookImpl]) -> HookCall | None:
        """A call of exactly ``impls`` (implementations of hook ``name``) with pluggy's
        semantics, or ``None`` when there are none."""
        if not impls:
            return None
        caller = getattr(self._hook, name)
        if len(impls) == 1 and not self._trace:
            impl = impls[0]
            if not (impl.hookwrapper or impl.wrapper):
                fn = impl.function
                argnames = tuple(impl.argnames)
                if argnames == _FULL_ARGNAMES.get(name):
                    return fn

                def direct(**kwargs: Any) -> Any:
                    return fn(**{a: kwargs[a] for a in argnames})

                return direct
        every = caller.get_hookimpls()
        if len(impls) == len(every):
            return caller  # type: ignore[no-any-return]
        chosen = {id(impl.plugin) for impl in impls}
        key = (name, frozenset(chosen))
        subset = self._subsets.get(key)
        if subset is None:
            others = [impl.plugin for impl in every if id(impl.plugin) not in chosen]
            subset = self._subsets[key] = self._pm.subset_hook_caller(name, others)
        return subset
