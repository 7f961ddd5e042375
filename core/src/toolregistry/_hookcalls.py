"""Compiled hook calls: pluggy's semantics (order, opt-in arguments, first result, wrappers)
for a chosen set of implementations, without pluggy's dispatch where it can be skipped.

:class:`HookCompiler` turns implementations into one callable taking the hook's keyword
arguments: a single plain implementation is called directly (pluggy's dispatch costs more than
the work), several plain ones and new-style wrappers in pluggy's order with its outcomes, and
old-style hookwrappers, tracing or arguments with defaults through pluggy's own (subset) hook
caller. :class:`ToolHooks` holds what was compiled for one tool's calls, its call observers
among them (:func:`observing`). Which implementations concern a tool, and what happens when one
raises, is the hook façade's (``_hooks``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .hookspecs import UNOBSERVED

if TYPE_CHECKING:
    from pluggy import HookImpl, PluginManager

    from .hookspecs import CallObserver, Runner
    from .types import ToolCall, ToolResult

__all__ = ["Asker", "HookCall", "HookCompiler", "ObserverFailed", "ToolHooks", "Watching",
           "declaration_askers", "ends_only", "gating", "observing"]

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


def _wrapped(impls: Sequence[HookImpl], firstresult: bool) -> HookCall:
    """Plain implementations and new-style wrappers (``wrapper=True``) as one call, as pluggy
    calls them: last registered first, wrappers around the plain ones; a wrapper gets the
    plain ones' outcome at its ``yield`` (their result, or their exception thrown in) and may
    replace it by returning or raising; ``firstresult``: the first non-``None`` result ends
    the plain ones and is the result, else the list of the non-``None`` results."""
    order = tuple((impl.function, _picker(tuple(impl.argnames)), bool(impl.wrapper))
                  for impl in reversed(impls))
    if len(order) == 1:  # a wrapper alone (a plain one alone is called directly)
        (fn, pick, _), = order
        return _wrapper_alone(fn, pick, firstresult)

    def call(**kwargs: Any) -> Any:
        results: list[Any] = []
        wrappers: list[Any] = []  # the wrappers' generators, past their yield
        error: BaseException | None = None
        try:
            for fn, pick, wrapper in order:
                if wrapper:
                    gen: Any = fn(*pick(kwargs))
                    try:
                        next(gen)
                    except StopIteration:
                        _misbehaved(gen, "did not yield")
                    wrappers.append(gen)
                    continue
                value = fn(*pick(kwargs))
                if value is not None:
                    results.append(value)
                    if firstresult:
                        break
        except BaseException as exc:
            error = exc
        result: Any = (results[0] if results else None) if firstresult else results
        for gen in reversed(wrappers):
            try:
                if error is None:
                    gen.send(result)
                else:
                    try:
                        gen.throw(error)
                    except RuntimeError as exc:  # a StopIteration raised through a generator
                        if not (isinstance(error, StopIteration) and exc.__cause__ is error):
                            raise
                        gen.close()
                        continue
                gen.close()
            except StopIteration as stop:
                result, error = stop.value, None
                continue
            except BaseException as exc:
                error = exc
                continue
            _misbehaved(gen, "has second yield")
        if error is not None:
            raise error
        return result

    return call


def _wrapper_alone(fn: Callable[..., Any], pick: Callable[[Mapping[str, Any]], tuple[Any, ...]],
                   firstresult: bool) -> HookCall:
    """:func:`_wrapped` for one wrapper: it gets what no plain implementation gives
    (``None`` for a first-result hook, else a new empty list)."""
    def call(**kwargs: Any) -> Any:
        gen = fn(*pick(kwargs))
        try:
            next(gen)
        except StopIteration:
            _misbehaved(gen, "did not yield")
        try:
            gen.send(None if firstresult else [])
            gen.close()
        except StopIteration as stop:
            return stop.value
        _misbehaved(gen, "has second yield")

    return call


def _misbehaved(gen: Any, what: str) -> NoReturn:
    code = gen.gi_code
    raise RuntimeError(f"wrap_controller at {code.co_name!r} {code.co_filename}:"
                       f"{code.co_firstlineno} {what}")


class ToolHooks:
    """The per-call hook implementations that concern one tool, compiled once per tool.

    ``pre_invoke``, ``authorize``, ``authorized`` and ``post_invoke`` are ``None`` when no
    implementation concerns the tool (such a hook costs one attribute test per call);
    ``observers`` are the tool's call observers (empty: none), as :func:`observing` compiles
    them (``started``, ``finished``, ``ending``), with ``gate``, asked before ``started``
    (:func:`gating`; ``None``: none, always start), and ``gate_failed``, told when ``gate``
    raised; ``runner`` is where its calls run (``None``: the registry's own threads and loop).
    """

    __slots__ = ("authorize", "authorized", "ending", "failed", "finished", "gate",
                 "gate_failed", "observers", "post_invoke", "pre_invoke", "runner", "started")

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
        self.started, self.finished, self.ending = observing(observers, failed or _unreported)
        self.gate, self.gate_failed = gating(observers, failed or _unreported)

    def with_runner(self, runner: Runner) -> ToolHooks:
        """The same hooks, with the tool's calls run by ``runner``."""
        return ToolHooks(self.pre_invoke, self.post_invoke, self.authorize, self.observers,
                         runner, self.authorized, self.failed)


ObserverFailed = Callable[[Any, str, Exception], None]
"""Told that an observer's method raised: the observer, the method's name, the exception."""

Watching = Sequence[tuple["CallObserver", Any]]
"""The observers told of one call's end, in the plan's order, each with the token its
``call_started`` returned (``None`` for an observer told of ends only)."""


def _unreported(observer: Any, method: str, exc: Exception) -> None:
    """The failure policy of hooks compiled without one: the observer's failure is ignored."""


def _nobody(call: ToolCall, result: ToolResult, watching: Watching) -> None:
    """The ``finished`` of a tool without observers."""


def ends_only(observer: Any) -> bool:
    """Whether ``observer`` is told of ends only: its ``call_started`` is ``None`` or absent."""
    return getattr(observer, "call_started", None) is None


def observing(observers: Sequence[CallObserver], failed: ObserverFailed
              ) -> tuple[Callable[[ToolCall], Watching | None] | None,
                         Callable[[ToolCall, ToolResult, Watching], None], Watching | None]:
    """A tool's call observers as three parts, made once per call plan: ``started(call)``
    (``None`` when no observer has a ``call_started``) tells each observer the call begins
    and returns those told of its end with their tokens -- ``ending`` when every one with a
    ``call_started`` sat the call out (``UNOBSERVED``); ``finished(call, result, watching)``
    tells those the call ended; ``ending`` is the observers told of ends only, each with the
    token ``None`` (``None``: there are none), the same sequence for every call.

    An exception is handed to ``failed`` and never fails the call (an observer whose start
    failed is told of the end with the token ``None``). An observer's methods are read when
    the plan is compiled: one that changes them has the plans compiled again
    (``toolregistry.plugin.refresh_call_plans``).
    """
    if not observers:
        return None, _nobody, None
    order = tuple((observer, not ends_only(observer)) for observer in observers)
    ending: Watching | None = tuple((o, None) for o, starts in order if not starts) or None
    if len(order) == 1:
        return _observing_one(observers[0], order[0][1], failed)

    def finished(call: ToolCall, result: ToolResult, watching: Watching) -> None:
        for observer, token in watching:
            try:
                observer.call_finished(call, result, token)
            except Exception as exc:
                failed(observer, "call_finished", exc)

    if ending is not None and len(ending) == len(order):
        return None, finished, ending
    starters = [i for i, (_, starts) in enumerate(order) if starts]
    if len(starters) == 1:  # one start among ends (a tracer, a log)
        return _one_start(observers[starters[0]], starters[0], ending, failed), finished, ending

    def started(call: ToolCall) -> Watching | None:
        watching: list[tuple[CallObserver, Any]] = []
        watched = False
        for observer, starts in order:
            if not starts:
                watching.append((observer, None))
                continue
            try:
                token = observer.call_started(call)
            except Exception as exc:
                failed(observer, "call_started", exc)
                token = None
            if token is not UNOBSERVED:
                watching.append((observer, token))
                watched = True
        return watching if watched else ending

    return started, finished, ending


def gating(observers: Sequence[CallObserver], failed: ObserverFailed
           ) -> tuple[Callable[[], Any] | None, Callable[[Exception], None]]:
    """The gate of a tool's call observers, asked before their starts, outside the call's
    context: ``gate()`` is falsy when no observer with a ``call_started`` wants the call
    (each has a ``wants_calls`` that said so), and the call then skips their starts and the
    context work, as if each had returned ``UNOBSERVED``. ``None`` when some observer with a
    ``call_started`` has no ``wants_calls`` (it is always started), or none has a start.
    ``gate_failed(exc)`` reports an exception of a single observer's gate (the gate is then
    open: the observer is started and decides); a gate of several reports its own.
    """
    starters = [o for o in observers if not ends_only(o)]
    found = [getattr(o, "wants_calls", None) for o in starters]
    wants: list[Callable[[], Any]] = [w for w in found if callable(w)]
    if not starters or len(wants) < len(starters):
        return None, _unreported_gate
    if len(starters) == 1:
        observer = starters[0]

        def gate_failed(exc: Exception) -> None:
            failed(observer, "wants_calls", exc)

        return wants[0], gate_failed
    pairs = tuple(zip(starters, wants, strict=True))

    def gate() -> bool:
        for observer, want in pairs:
            try:
                if want():
                    return True
            except Exception as exc:
                failed(observer, "wants_calls", exc)
                return True
        return False

    return gate, _unreported_gate


def _unreported_gate(exc: Exception) -> None:
    """The ``gate_failed`` of observers without a gate, or of a gate that reports its own."""


def _observing_one(observer: CallObserver, starts: bool, failed: ObserverFailed
                   ) -> tuple[Callable[[ToolCall], Watching | None] | None,
                              Callable[[ToolCall, ToolResult, Watching], None],
                              Watching | None]:
    """:func:`observing` for a plan of one observer, its methods bound once."""
    end = observer.call_finished

    def finished(call: ToolCall, result: ToolResult, watching: Watching) -> None:
        try:
            end(call, result, watching[0][1])
        except Exception as exc:
            failed(observer, "call_finished", exc)

    if not starts:
        return None, finished, ((observer, None),)
    return _one_start(observer, 0, None, failed), finished, None


def _one_start(observer: CallObserver, at: int, ending: Watching | None,
               failed: ObserverFailed) -> Callable[[ToolCall], Watching | None]:
    """The start of a plan whose one observer with a ``call_started`` is ``observer``, at
    ``at`` in the plan's order among those told of ends only (``ending``)."""
    start = observer.call_started
    told = ending or ()

    def started(call: ToolCall) -> Watching | None:
        try:
            token = start(call)
        except Exception as exc:
            failed(observer, "call_started", exc)
            token = None
        if token is UNOBSERVED:
            return ending
        return (*told[:at], (observer, token), *told[at:])

    return started


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
        semantics, or ``None`` when there are none: compiled unless tracing is on or one is
        an old-style ``hookwrapper`` or takes arguments with defaults (pluggy's own caller
        then, or a subset caller)."""
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
        if not self._trace and not any(impl.hookwrapper or getattr(impl, "kwargnames", ())
                                       for impl in impls):
            spec = caller.spec
            return _wrapped(impls, bool(spec is not None and spec.opts.get("firstresult")))
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
