"""The call pipeline, before and after a tool runs: lookup, ``pre_invoke``, validation and
coercion, context injection; then the result, error mapping and ``post_invoke``.

:meth:`CallPipeline.prepare` turns a parsed :class:`~toolregistry.ToolCall` into a
:class:`Prepared` call (or its error result); :meth:`CallPipeline.finish` turns what the tool
returned or raised into the call's one :class:`~toolregistry.ToolResult`. Where and when the
tool runs in between is the schedulers' business (``_sync``, ``_async``); a batch's parsing
and its observers are :class:`~._batch.Batching`'s. The registry is asked through its methods
only; per-tool work is kept in :class:`~._plan.CallPlan` objects, dropped by
:meth:`CallPipeline.invalidate` when the registry changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from toolregistry._calls import (
    CallParseError,
    parse_arguments,
)
from toolregistry._hooks import Deciding
from toolregistry._log import log
from toolregistry._names import normalize_name
from toolregistry._results import error_result, make_result
from toolregistry.errors import ToolCallError, ToolCancelled, ToolTimeoutError
from toolregistry.tool import SEARCH_TOOL_TAG
from toolregistry.types import Decision, ToolCall, ToolContext, ToolResult

from ._batch import Batch, Batching
from ._plan import CallPlan
from ._threads import ClosedBeforeStart
from ._validation import coerce, validation_message

if TYPE_CHECKING:
    from toolregistry._hookcalls import Watching
    from toolregistry._hooks import Hooks
    from toolregistry._registry import ToolRegistry
    from toolregistry.hookspecs import Runner

__all__ = ["Batch", "CallPipeline", "Prepared", "log_result"]

_stdlib_logger = logging.getLogger("toolregistry")
# whether an event at a level could be emitted (configured structlog decides itself)
_is_configured = structlog.is_configured
_level_enabled = _stdlib_logger.isEnabledFor
_PLAIN_TYPES = frozenset({str, int, float, bool, dict, list, tuple, type(None), bytes})


def log_result(result: ToolResult) -> None:
    """The one ``call.finished`` / ``call.failed`` event of a call."""
    # Info, not warning, for failures too: an error result is the normal way a call ends badly
    # (the model reads it and corrects itself), not a problem of the application.
    if _is_configured() or _level_enabled(logging.INFO):
        if result.is_error:
            log.info("call.failed", tool=result.name, call_id=result.call_id,
                     duration=round(result.duration, 6), outcome=result.error_kind,
                     error=result.loggable_text[:500])
        else:
            log.info("call.finished", tool=result.name, call_id=result.call_id,
                     duration=round(result.duration, 6), outcome="ok")


class Prepared:
    """A call that passed lookup, hooks, validation and authorization, ready to run.

    ``fn`` / ``is_async`` is the callable of the API it runs on; ``args`` / ``kwargs`` its
    bound arguments; ``timeout`` the seconds it may take (``None``: no deadline); ``ctx`` the
    :class:`~toolregistry.ToolContext` it receives, when it asks for one. ``context`` is the
    call's own ``contextvars.Context`` (a copy of the caller's, or of its batch's): the tool
    runs in it, entered exactly once. ``observed`` is true when observers put values there
    (the call then always runs in it, never in the caller's context); ``tokens`` are the
    call observers that watch it, with their tokens (``ToolHooks.started``). ``deciding``
    (async API only) is an authorization still to come, awaited by
    :meth:`CallPipeline.decided` before the call runs.
    """

    __slots__ = ("args", "call", "context", "ctx", "deciding", "fn", "is_async", "kwargs",
                 "observed", "plan", "timeout", "tokens")

    def __init__(self, plan: CallPlan, call: ToolCall, fn: Callable[..., Any] | None,
                 is_async: bool, args: Any, kwargs: dict[str, Any], timeout: float | None,
                 ctx: ToolContext | None, context: contextvars.Context) -> None:
        self.plan = plan
        self.call = call
        self.fn = fn
        self.is_async = is_async
        self.args = args
        self.kwargs = kwargs
        self.timeout = timeout
        self.ctx = ctx
        self.context = context
        self.observed = False
        self.tokens: Watching | None = None
        self.deciding: Deciding | None = None


class CallPipeline(Batching):
    """Preparation and finishing of the calls of one registry (see the module docstring)."""

    def __init__(self, registry: ToolRegistry, hooks: Hooks) -> None:
        self._registry = registry
        self._hooks = hooks
        self._plans: dict[str, CallPlan] = {}
        self._plans_lock = threading.Lock()
        self._generation = 0
        self._hooks_version = hooks.version
        self._batch_observers: tuple[Any, ...] | None = None
        self.closed = False
        # The registry's process runner (process isolation), given by the executor.
        self.process_runner: Callable[[], Runner] | None = None

    def after_fork(self) -> None:
        """In a forked child: a lock another thread of the parent held stays taken there."""
        self._plans_lock = threading.Lock()

    # -- plans ----------------------------------------------------------------------------
    def invalidate(self, names: Iterable[str] | None = None) -> None:
        """Forget the plans of ``names`` (every plan when ``None``): they changed."""
        with self._plans_lock:
            self._generation += 1
            if names is None:
                self._plans = {}
                self._batch_observers = None
            else:
                for name in names:
                    self._plans.pop(name, None)

    def _plan(self, name: str, tool: Any) -> CallPlan:
        """Compile the plan of ``tool`` (registered as ``name``) and keep it unless the
        registry changed meanwhile."""
        registry = self._registry
        generation = self._generation
        hooks = self._hooks.for_tool(registry, tool)
        if hooks.runner is None and self.process_runner is not None:
            meta = tool.metadata
            if meta.isolation == "process" or (
                    meta.isolation is None and tool.namespace is not None
                    and tool.namespace in registry.settings.process_namespaces):
                hooks = hooks.with_runner(self.process_runner())
        plan = CallPlan(tool, registry.disabled_reason(name), hooks)
        with self._plans_lock:
            if self._generation == generation:
                self._plans[name] = plan
        return plan

    def lookup(self, call: ToolCall) -> CallPlan | ToolResult:
        """The plan of the tool ``call`` names (model spellings of the name accepted, and
        ``call.name`` corrected); an error result for an unknown or disabled tool."""
        if self._hooks_version != self._hooks.version:
            self._hooks_version = self._hooks.version
            self.invalidate()
        name = call.name
        plan = self._plans.get(name)
        if plan is None:
            registry = self._registry
            tool = registry.get_tool(name)
            if tool is None:
                alias = _alias(name)
                tool = registry.get_tool(alias) if alias else None
                if tool is None:
                    return self._unknown(call)
                call.name = name = alias  # type: ignore[assignment]
                plan = self._plans.get(name)
            if plan is None or plan.tool is not tool:
                plan = self._plan(name, tool)
        if plan.disabled is not None:
            why = plan.disabled
            text = (f"tool {name!r} is disabled" + (f" ({why})" if why else "") +
                    "; do not call it again in this conversation, use another tool")
            if plan.hooks.authorized is not None:  # refused before authorization: told so
                self._hooks.authorized(plan.hooks.authorized, self._registry, plan.tool, call,
                                       Decision.deny(text, rule="disabled"))
            return error_result(call.id, name, "disabled", text)
        if plan.tool.metadata.defer and name not in self._registry._revealed:
            return self._undiscovered(call, plan)
        return plan

    def _undiscovered(self, call: ToolCall, plan: CallPlan) -> CallPlan | ToolResult:
        """A call to a deferred tool no search revealed, as the ``undiscovered_calls``
        setting says: run it, reveal it and run it, or refuse it."""
        registry = self._registry
        policy = registry.settings.undiscovered_calls
        if policy == "run":
            return plan
        if policy == "reveal":
            registry.reveal_tools([plan.tool.name])
            return plan
        search = [t.name for t in registry.get_tools() if SEARCH_TOOL_TAG in t.metadata.custom_tags]
        how = (f"call {search[0]!r} to find it" if search
               else "find it with the tool search")
        text = (f"tool {plan.tool.name!r} is deferred and was not discovered in this "
                f"conversation: {how} first, then call it as its definition says")
        if plan.hooks.authorized is not None:  # refused before authorization: told so
            self._hooks.authorized(plan.hooks.authorized, registry, plan.tool, call,
                                   Decision.deny(text, rule="undiscovered"))
        return error_result(call.id, plan.tool.name, "undiscovered", text)

    def refused(self, call: ToolCall | None, result: ToolResult) -> None:
        """Tell the call observers of a call that ended before its observers started (it
        could not be read, names no tool or a disabled one) that it ended with ``result``:
        those of the tool it names, else those the plugins give for a stand-in ``Tool`` of
        that name (``provenance.detail`` ``"not registered"``), so every call is seen."""
        if call is None:
            call = ToolCall(result.name, None, result.call_id)
        registry = self._registry
        tool = registry.get_tool(result.name) if result.name else None
        if tool is not None:
            plan = self._plans.get(result.name)
            observers = (plan if plan is not None and plan.tool is tool
                         else self._plan(result.name, tool)).hooks.observers
        else:
            from toolregistry.tool import Provenance, Tool

            try:
                stand_in = Tool(name=result.name or "unknown", description="",
                                provenance=Provenance("manual", "not registered"))
            except Exception:  # a name no tool may have: nobody can observe it
                return
            observers = self._hooks.observers_of(registry, stand_in)
        if observers:
            here = contextvars.copy_context()
            tokens = here.run(self._hooks.calls_started, observers, call)
            here.run(self._hooks.calls_finished, observers, call, result, tokens)

    def _unknown(self, call: ToolCall) -> ToolResult:
        name = call.name
        try:
            close = [n for n in self._registry.suggest_names(name, 3) if n != name][:3]
        except Exception:
            close = []
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        return error_result(call.id, name, "unknown_tool",
                            f"there is no tool named {name!r}.{hint} Call only the tools you "
                            "were given, by their exact names.")

    # -- preparation ----------------------------------------------------------------------
    def prepare(self, call: ToolCall, context: Mapping[str, Any] | None,
                timeout: float | None, async_path: bool = False, observed: bool = False
                ) -> Prepared | ToolResult:
        """Lookup, then (inside the call's own context) the observers' start, ``pre_invoke``,
        validation with safe coercion, authorization, deadline and injected values: a call
        ready to run, or its result when it ends before running. ``observed``: the caller's
        context holds a batch observer's values (the call must run in its own context)."""
        plan = self.lookup(call)
        if isinstance(plan, ToolResult):
            self.refused(call, plan)
            return plan
        here = contextvars.copy_context()
        hooks = plan.hooks
        started = hooks.started
        if started is not None and hooks.gate is not None:
            try:  # asked first: none of the observers with a start wants the call
                if not hooks.gate():
                    started = None
            except Exception as exc:
                hooks.gate_failed(exc)
        if started is None:  # no observer starts: no context to look after
            tokens = hooks.ending
        else:
            before = here.copy()  # shares the values: compared in constant time when unchanged
            tokens = here.run(started, call)
            # ``ending``: every observer with a start sat it out, changing nothing
            if tokens is not None and tokens is not hooks.ending and here != before:
                item = here.run(self._prepare, plan, call, context, timeout, async_path, here)
                if isinstance(item, Prepared):
                    item.observed = True
                    item.tokens = tokens
                else:  # it ended before running: the observers hear of it now
                    here.run(hooks.finished, call, item, tokens)
                return item
        # Nobody put anything in the context (an execution log, observers told of ends only,
        # or nobody observes): the call runs as an unobserved one would (on the async API
        # without a deadline, no task of its own), and its observers hear of its end.
        item = self._prepare(plan, call, context, timeout, async_path, here)
        if isinstance(item, Prepared):
            item.observed = observed
            item.tokens = tokens
        elif tokens is not None:
            hooks.finished(call, item, tokens)
        return item

    def _prepare(self, plan: CallPlan, call: ToolCall, context: Mapping[str, Any] | None,
                 timeout: float | None, async_path: bool, here: contextvars.Context
                 ) -> Prepared | ToolResult:
        registry = self._registry
        tool = plan.tool
        hooks = plan.hooks
        if hooks.pre_invoke is not None:
            failed = self._hooks.pre_invoke(hooks.pre_invoke, registry, tool, call)
            if failed is not None:
                return failed
        arguments = call.arguments
        if arguments is None:
            arguments = call.arguments = {}
        try:
            values = plan.validator.validate(arguments)
        except Exception as exc:
            coerced = coerce(tool, arguments, exc)
            try:
                if coerced is None:
                    raise exc
                values = plan.validator.validate(coerced)
            except Exception as exc2:
                message, redacted = validation_message(tool.name, exc2)
                return error_result(call.id, tool.name, "invalid_arguments", message,
                                    reason=call.reason, redacted=redacted)
            call.arguments = arguments = coerced  # what runs is what is authorized
        deciding = None
        if hooks.authorize is not None:
            # decided on the values the tool receives (pydantic's conversions included)
            refused = self._hooks.authorize(hooks.authorize, registry, tool, call, values,
                                            hooks.authorized)
            if refused is not None:
                if not isinstance(refused, Deciding):
                    return refused
                if async_path:  # awaited on the caller's loop before the call runs (decided)
                    deciding = refused
                else:
                    decided, error = _run_awaitable(refused.result())
                    if error is not None:
                        raise error
                    if decided is not None:
                        return decided  # type: ignore[no-any-return]
        if timeout is not None:
            limit: float | None = timeout if timeout > 0 else None
        else:
            limit = tool.metadata.timeout
            if limit is None:
                limit = registry.default_timeout
        ctx = None
        if plan.injected:
            injected: dict[str, Any] = {}
            for pname, key, has_default in plan.injected:
                if key is None:
                    if ctx is None:
                        ctx = ToolContext(registry=registry, call=call, values=context or {},
                                          deadline=None if limit is None
                                          else time.monotonic() + limit)
                    injected[pname] = ctx
                elif context is not None and key in context:
                    injected[pname] = context[key]
                elif not has_default:
                    return error_result(
                        call.id, tool.name, "execution",
                        f"tool {tool.name!r} needs the application context value {key!r}, "
                        "which was not passed (context={...} on invoke / execute_tool_calls)",
                        reason=call.reason)
            args, kwargs = plan.validator.bind(values, injected)
        else:
            args, kwargs = plan.validator.bind(values, {})
        if _is_configured() or _level_enabled(logging.DEBUG):
            log.debug("call.started", tool=tool.name, call_id=call.id, arguments=arguments)
        if async_path:
            prep = Prepared(plan, call, plan.afn, plan.ais_async, args, kwargs, limit, ctx, here)
            prep.deciding = deciding
            return prep
        return Prepared(plan, call, plan.fn, plan.is_async, args, kwargs, limit, ctx, here)

    async def decided(self, prep: Prepared) -> Prepared | ToolResult:
        """Await the authorization still to come of a prepared call (``prep.deciding``, async
        API) on the running loop: the call, ready to run, or the result it ends with (then
        logged, and its observers told)."""
        deciding, prep.deciding = prep.deciding, None
        if deciding is None:
            return prep
        if prep.observed:  # what a plugin awaits sees the call's context, as on the sync API
            task = asyncio.get_running_loop().create_task(deciding.result(),
                                                          context=prep.context.copy())
            task.add_done_callback(lambda _: deciding.close())  # also if cancelled unstarted
            refused = await task
        else:
            try:
                refused = await deciding.result()
            finally:
                deciding.close()
        if refused is None:
            if prep.ctx is not None and prep.timeout is not None:  # its time starts now
                prep.ctx.deadline = time.monotonic() + prep.timeout
            return prep
        if prep.tokens is not None:
            prep.context.copy().run(prep.plan.hooks.finished, prep.call, refused, prep.tokens)
        log_result(refused)
        return refused

    def _prepare_one(self, call: ToolCall, context: Mapping[str, Any] | None,
                     timeout: float | None, async_path: bool, observed: bool = False
                     ) -> Prepared | ToolResult:
        try:
            return self.prepare(call, context, timeout, async_path, observed)
        except Exception as exc:  # defensive: bad input never escapes as an exception
            return error_result(call.id, call.name, "execution", f"{type(exc).__name__}: {exc}")

    def _closed_result(self, call_id: str | None, name: str) -> ToolResult:
        return error_result(call_id, name, "execution",
                            f"registry {self._registry.name!r} is closed; no calls run")

    def prepare_invoke(self, name: str, arguments: Mapping[str, Any] | str | None,
                       context: Mapping[str, Any] | None, timeout: float | None,
                       call_id: str | None, async_path: bool) -> Prepared | ToolResult:
        """One call by name (``invoke`` / ``ainvoke``), parsed and prepared, or its error
        result (logged). An empty ``call_id`` is no id, as ``None``."""
        call_id = call_id or None
        call = ToolCall(name, None, call_id, arguments)
        if self.closed or self._registry.closed:
            return self._closed_result(call_id, name)
        try:
            call.arguments = parse_arguments(arguments, call)
        except CallParseError as exc:
            result = error_result(call_id, name, exc.kind, str(exc))
            self.refused(call, result)
            log_result(result)
            return result
        try:
            prep = self.prepare(call, context, timeout, async_path)
        except Exception as exc:  # defensive: bad input never escapes as an exception
            prep = error_result(call.id, call.name, "execution", f"{type(exc).__name__}: {exc}")
        if isinstance(prep, ToolResult):
            log_result(prep)
        return prep

    # -- finishing ------------------------------------------------------------------------
    def finish(self, prep: Prepared, value: Any, error: BaseException | None,
               duration: float, in_copy: bool = False) -> ToolResult:
        """The call's one result for what its tool returned (``value``) or raised
        (``error``), after ``post_invoke``; logged; the call's observers are told. An observed
        call finishes in a copy of its context (the tool may still hold the context itself,
        after a timeout); ``in_copy``: this runs in that copy already."""
        if prep.observed and not in_copy:
            return prep.context.copy().run(self.finish, prep, value, error, duration, True)
        call = prep.call
        plan = prep.plan
        tool = plan.tool
        if error is None and type(value) not in _PLAIN_TYPES and inspect.isawaitable(value):
            value, error = _run_awaitable(value)
        if error is None:
            try:
                result = make_result(call.id, tool.name, value, reason=call.reason,
                                     duration=duration,
                                     structured=tool.output_schema is not None)
            except Exception as exc:
                result = error_result(call.id, tool.name, "execution",
                                      f"the result of {tool.name!r} could not be encoded: "
                                      f"{type(exc).__name__}: {exc}",
                                      reason=call.reason, duration=duration)
        else:
            result = self.error_for(prep, error, duration)
        post = plan.hooks.post_invoke
        if post is not None:
            result = self._hooks.post_invoke(post, self._registry, tool, call, result)
        if prep.tokens is not None:
            plan.hooks.finished(call, result, prep.tokens)
        log_result(result)
        return result

    @staticmethod
    def error_for(prep: Prepared, exc: BaseException, duration: float) -> ToolResult:
        """The error result for an exception a call ended with."""
        call, name = prep.call, prep.plan.tool.name
        if isinstance(exc, ClosedBeforeStart):
            return error_result(call.id, name, "cancelled", f"tool {name!r}: {exc}",
                                reason=call.reason, duration=duration)
        if isinstance(exc, ToolCancelled) or (
                isinstance(exc, ToolTimeoutError) and exc.deadline_passed):
            limit = f"{prep.timeout:g} s" if prep.timeout is not None else "its time limit"
            return error_result(call.id, name, "timeout",
                                f"tool {name!r} did not finish within {limit} and was "
                                "cancelled; try a smaller request, or a different approach",
                                reason=call.reason, duration=duration)
        if isinstance(exc, (asyncio.CancelledError, cf.CancelledError)):
            return error_result(call.id, name, "cancelled", f"tool {name!r} was cancelled",
                                reason=call.reason, duration=duration)
        if isinstance(exc, ToolCallError):
            return error_result(call.id, name, exc.kind, str(exc),
                                reason=call.reason, duration=duration)
        return error_result(call.id, name, "execution",
                            f"tool {name!r} failed: {type(exc).__name__}: {exc}",
                            reason=call.reason, duration=duration)


# --- helpers ---------------------------------------------------------------------------------

def _alias(name: str) -> str | None:
    """Another spelling of a tool name a model may use: ``functions.x``, unnormalised."""
    if not isinstance(name, str) or not name:
        return None
    base = name.removeprefix("functions.")
    try:
        alias = normalize_name(base)
    except Exception:
        return None
    return alias if alias != name else None


def _run_awaitable(value: Any) -> tuple[Any, BaseException | None]:
    """A sync callable that returned an awaitable: run it to completion on a fresh loop (in a
    helper thread when this thread already runs one)."""
    out: list[Any] = [None, None]

    async def wait() -> Any:
        return await value

    def run() -> None:
        try:
            out[0] = asyncio.run(wait())
        except (Exception, ToolCancelled) as exc:
            out[1] = exc

    def run_in_helper() -> None:
        try:
            run()
        except BaseException as exc:  # KeyboardInterrupt / SystemExit: they end this call only
            out[1] = exc

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        run()
    else:
        helper = threading.Thread(target=contextvars.copy_context().run, args=(run_in_helper,),
                                  name="toolregistry-await", daemon=True)
        helper.start()
        helper.join()
    return out[0], out[1]
