"""The one typed façade over every hook call: which implementations concern a tool, error
policy, tracing.

The kernel never writes ``pm.hook.x(...)`` anywhere else. Each method says when it is called
and what happens when an implementation raises. Hooks called per call (``pre_invoke``,
``post_invoke``) are compiled per tool into a :class:`~._hookcalls.ToolHooks` (kept in the
tool's call plan): only the implementations that concern the tool are called. How a set of
implementations becomes one call (a single plain implementation called directly, several and
new-style wrappers compiled with pluggy's exact semantics) is ``_hookcalls``'; the
authorization hooks' calls are ``_authorizing``'s (:class:`~._authorizing.Authorizing`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._authorizing import Authorizing
from ._deciding import Deciding
from ._hookcalls import HookCompiler, ToolHooks, declaration_askers, ends_only, observing
from ._log import log
from ._results import error_result
from .errors import ToolRejected
from .hookspecs import UNOBSERVED
from .types import OutputLimits

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pluggy import HookImpl

    from ._hookcalls import Asker, HookCall, Watching
    from ._plugins import PluginHost
    from ._registry import ToolRegistry
    from .events import ChangeEvent
    from .hookspecs import (
        ApprovalQueue,
        BatchObserver,
        CallObserver,
        OperationObserver,
        Runner,
    )
    from .tool import Tool
    from .types import PendingChange, ToolCall, ToolResult

__all__ = ["Deciding", "Hooks"]

_QUEUE_METHODS = ("approvals", "__contains__", "get", "decide", "resume", "aresume")


def _check_queue(queue: Any) -> None:
    """Refuse an ``approval_queue`` answer without the methods of an ``ApprovalQueue``."""
    missing = [m for m in _QUEUE_METHODS if not callable(getattr(queue, m, None))]
    if missing:
        raise TypeError(f"{type(queue).__name__} is not an ApprovalQueue (no "
                        f"{', '.join(missing)})")


class Hooks(Authorizing):
    """The one place the kernel calls hooks: typed methods, error policy, fast paths.

    A hook nobody implements costs one attribute check. ``version`` changes whenever the set of
    implementations changes (a plugin added in process), which makes compiled per-tool hooks
    stale. The ``trace-hooks`` setting (``TOOLREGISTRY_TRACE_HOOKS=1``) routes every call
    through pluggy so its tracing sees it.
    """

    def __init__(self, host: PluginHost) -> None:
        self._host = host
        self._pm = host.pm
        self._hook = host.pm.hook
        self.version = 0
        self.refresh()

    def refresh(self) -> None:
        """Re-read which hooks have implementations; called when a plugin is added."""
        h = self._hook
        self._compiler = compiler = HookCompiler(self._pm, self._host.settings.trace)
        self.has_register = bool(h.register.get_hookimpls())
        self.has_schema_transform = bool(h.schema_transform.get_hookimpls())
        self.has_on_change = bool(h.on_change.get_hookimpls())
        self.has_suggest = bool(h.suggest_tools.get_hookimpls())
        self.has_incoming_context = bool(h.incoming_context.get_hookimpls())
        self.has_output_limits = bool(h.output_limits.get_hookimpls())
        self._schema_impls = tuple(h.schema_transform.get_hookimpls())
        self._direct_schema = compiler.caller("schema_transform", self._schema_impls)
        self._schema_interest = declaration_askers(h.schema_hooks.get_hookimpls())
        self._schema_callers: dict[tuple[int, ...], HookCall | None] = {}
        # called on every registration: pluggy's dispatch costs more than most plugins' work
        self._direct_register = compiler.by_position(
            "register", h.register.get_hookimpls(), ("registry", "tool"), first=True)
        self._direct_on_change = compiler.by_position(
            "on_change", h.on_change.get_hookimpls(), ("registry", "event"))
        self._interest = declaration_askers(h.call_hooks.get_hookimpls())
        self._quiet: set[tuple[int, str]] = set()  # observers whose failure was logged
        self.version += 1

    # -- compiling ------------------------------------------------------------------------
    def _declared(self, hook: str, askers: Sequence[Asker], registry: ToolRegistry,
                  tool: Tool) -> dict[int, frozenset[str]]:
        """``{id(plugin): the names it declared}`` from ``askers`` (implementations of the
        declaration hook ``hook``), each asked on its own; a plugin that answered ``None`` or
        raised (logged as ``hook.failed``) is left out: all its hooks concern the tool."""
        declared: dict[int, frozenset[str]] = {}
        kwargs = {"registry": registry, "tool": tool}
        for impl, fn, pick in askers:
            try:
                names: Any = fn(*pick(kwargs))
                if isinstance(names, str):
                    names = (names,)
                if names is not None:
                    declared[id(impl.plugin)] = frozenset(names)
            except Exception as exc:
                self._failed(hook, exc, tool=tool.name, plugin=impl.plugin_name)
        return declared

    def call_hooks(self, registry: ToolRegistry, tool: Tool) -> dict[int, frozenset[str]]:
        """What the plugins that implement ``call_hooks`` declared for ``tool``, asked one
        plugin at a time: ``{id(plugin): names of its per-tool hooks that concern the tool}``;
        a plugin that answered ``None`` is left out (all its hooks concern the tool).

        Error policy: an exception is logged (``hook.failed``) and that plugin is left out, so
        all its hooks concern the tool: a broken declaration costs speed, never a hook run.
        """
        return self._declared("call_hooks", self._interest, registry, tool)

    def for_tool(self, registry: ToolRegistry, tool: Tool) -> ToolHooks:
        """Compile the per-tool hooks that concern ``tool`` (for its call plan): the
        implementations of plugins that declared interest in it (``call_hooks``) or declare
        nothing.

        Error policy: that of :meth:`call_hooks`; nothing else of a plugin runs here.
        """
        declared = self.call_hooks(registry, tool) if self._interest else {}

        def concerned(name: str) -> list[HookImpl]:
            return self._concerned(name, declared)

        caller = self._compiler.caller
        return ToolHooks(caller("pre_invoke", concerned("pre_invoke")),
                         caller("post_invoke", concerned("post_invoke")),
                         caller("authorize", concerned("authorize")),
                         self.call_observer(registry, tool, concerned("call_observer")),
                         self.dispatch(registry, tool, concerned("dispatch")),
                         caller("authorized", concerned("authorized")), self._observer_failed)

    def _concerned(self, name: str, declared: dict[int, frozenset[str]]) -> list[HookImpl]:
        every = getattr(self._hook, name).get_hookimpls()
        if declared:
            every = [impl for impl in every if name in declared.get(id(impl.plugin), (name,))]
        return every  # type: ignore[no-any-return]

    def observers_of(self, registry: ToolRegistry, tool: Tool) -> tuple[CallObserver, ...]:
        """The call observers of ``tool`` alone, without compiling its other hooks: for a
        call that ends before it has a plan (a stand-in of a tool that is not registered).

        Error policy: that of :meth:`call_observer`.
        """
        declared = self.call_hooks(registry, tool) if self._interest else {}
        return self.call_observer(registry, tool, self._concerned("call_observer", declared))

    def call_observer(self, registry: ToolRegistry, tool: Tool, impls: Sequence[HookImpl]
                      ) -> tuple[CallObserver, ...]:
        """The observers the concerned ``call_observer`` implementations give for ``tool``,
        in pluggy's call order (asked one at a time, so one failure costs only its own).

        Error policy: an exception is logged (``hook.failed``) and that plugin observes
        nothing of the tool; an observer without ``call_finished``, or whose ``call_started``
        is neither callable nor ``None`` (told of ends only), is refused the same way.
        """
        observers: list[CallObserver] = []
        for impl in reversed(impls):
            try:
                observer = self._call_impl(impl, registry=registry, tool=tool)
                if observer is None:
                    continue
                if not (callable(getattr(observer, "call_finished", None))
                        and (ends_only(observer) or callable(observer.call_started))):
                    raise TypeError(f"{type(observer).__name__} is not a CallObserver "
                                    "(call_finished, and call_started or None)")
                observers.append(observer)
            except Exception as exc:
                self._failed("call_observer", exc, tool=tool.name, plugin=impl.plugin_name)
        return tuple(observers)

    def dispatch(self, registry: ToolRegistry, tool: Tool, impls: Sequence[HookImpl]
                 ) -> Runner | None:
        """The runner of ``tool``'s calls (the first one returned), or ``None``: local.

        Error policy: an exception is logged (``hook.failed``) and propagates, so each call of
        the tool gets an error result naming it (and the plan is compiled again at the next
        call); a call never runs where its plugin did not send it.
        """
        caller = self._compiler.caller("dispatch", impls)
        if caller is None:
            return None
        try:
            runner = caller(registry=registry, tool=tool)
            if runner is not None and not (callable(getattr(runner, "submit", None))
                                           and callable(getattr(runner, "cancel", None))):
                raise TypeError(f"{type(runner).__name__} is not a Runner (submit and cancel)")
        except Exception as exc:
            self._failed("dispatch", exc, tool=tool.name)
            raise
        return runner  # type: ignore[no-any-return]

    def batch_observer(self, registry: ToolRegistry) -> tuple[BatchObserver, ...]:
        """The batch observers of ``registry``, in pluggy's call order.

        Error policy: an exception is logged (``hook.failed``) and that plugin observes no
        batch.
        """
        return tuple(self._answers("batch_observer", registry=registry))

    def operation_observer(self, registry: ToolRegistry) -> tuple[OperationObserver, ...]:
        """The operation observers of ``registry``, in pluggy's call order.

        Error policy: an exception is logged (``hook.failed``) and that plugin observes no
        operation.
        """
        return tuple(self._answers("operation_observer", registry=registry))

    def operations_started(self, observers: Sequence[OperationObserver], name: str,
                           attributes: dict[str, Any]) -> list[Any]:
        """Tell ``observers`` operation ``name`` begins; their tokens.

        Error policy: as :meth:`calls_started`.
        """
        tokens: list[Any] = []
        for observer in observers:
            try:
                tokens.append(observer.operation_started(name, attributes))
            except Exception as exc:
                tokens.append(None)
                self._observer_failed(observer, "operation_started", exc)
        return tokens

    def operations_finished(self, observers: Sequence[OperationObserver], name: str,
                            attributes: dict[str, Any], error: BaseException | None,
                            tokens: Sequence[Any]) -> None:
        """Tell ``observers`` operation ``name`` ended (in reverse order of starting).

        Error policy: as :meth:`calls_started`.
        """
        for observer, token in reversed(list(zip(observers, tokens))):
            try:
                observer.operation_finished(name, attributes, error, token)
            except Exception as exc:
                self._observer_failed(observer, "operation_finished", exc)

    def incoming_context(self, registry: ToolRegistry, carrier: Mapping[str, str]
                         ) -> list[AbstractContextManager[Any]]:
        """The context managers that make ``carrier`` current (in pluggy's call order).

        Error policy: an exception is logged (``hook.failed``) and that plugin's manager is
        skipped; the request is served anyway.
        """
        return self._answers("incoming_context", registry=registry, carrier=carrier)

    def approval_queue(self, registry: ToolRegistry) -> tuple[ApprovalQueue, ...]:
        """The approval queues of ``registry``'s authorizing plugins, in pluggy's call order.

        Error policy: an exception, or a queue without the methods of an ``ApprovalQueue``,
        is logged (``hook.failed``) and that plugin's queue is left out.
        """
        return tuple(self._answers("approval_queue", check=_check_queue, registry=registry))

    def output_limits(self, registry: ToolRegistry, tool: Tool) -> OutputLimits | None:
        """The output-size limits a source should respect for ``tool``'s results: every
        implementation's answer combined (:meth:`OutputLimits.combine`), or ``None``.

        Error policy: an exception is logged (``hook.failed``) and that plugin's answer
        ignored.
        """
        if not self.has_output_limits:
            return None
        return OutputLimits.combine(self._answers("output_limits", context={"tool": tool.name},
                                                  registry=registry, tool=tool))

    @staticmethod
    def _call_impl(impl: HookImpl, **kwargs: Any) -> Any:
        return impl.function(**{a: kwargs[a] for a in impl.argnames})

    def _answers(self, hook: str, *, check: Callable[[Any], None] | None = None,
                 context: Mapping[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        """Every implementation's answer to ``hook`` that is not ``None``, in pluggy's call
        order. One that raises (or whose answer ``check`` refuses) is logged (``hook.failed``,
        with ``context``) and left out: the hooks asked for something of each plugin."""
        answers: list[Any] = []
        for impl in reversed(getattr(self._hook, hook).get_hookimpls()):
            try:
                answer = self._call_impl(impl, **kwargs)
                if answer is not None and check is not None:
                    check(answer)
            except Exception as exc:
                self._failed(hook, exc, plugin=impl.plugin_name, **(context or {}))
                continue
            if answer is not None:
                answers.append(answer)
        return answers

    # -- registration and schemas ---------------------------------------------------------

    def register(self, registry: ToolRegistry, tool: Tool) -> Tool:
        """``tool`` is about to enter ``registry``: the replacement the first implementation
        returned, else ``tool``.

        Error policy: :class:`~toolregistry.errors.ToolRejected` propagates as it is (the
        refusal); any other exception is logged (``hook.failed``) and propagates, so the
        registration fails and the registry is unchanged.
        """
        if not self.has_register:
            return tool
        try:
            replacement = self._direct_register(registry, tool)
        except ToolRejected:
            raise
        except Exception as exc:
            self._failed("register", exc, tool=tool.name)
            raise
        return tool if replacement is None else replacement

    def schema_hooks(self, registry: ToolRegistry, tool: Tool) -> HookCall | None:
        """The ``schema_transform`` implementations that concern the schemas of ``tool``,
        compiled (``None``: none does, and its schema needs no private copy): those of
        plugins that declared interest in it (``schema_hooks``) or declare nothing.

        Error policy: an exception from a plugin's ``schema_hooks`` is logged
        (``hook.failed``) and that plugin concerns the tool: a broken declaration costs a
        copy, never a transform.
        """
        if not self._schema_interest:
            return self._direct_schema
        declared = self._declared("schema_hooks", self._schema_interest, registry, tool)
        chosen = tuple(i for i, impl in enumerate(self._schema_impls)
                       if "schema_transform" in declared.get(id(impl.plugin),
                                                             ("schema_transform",)))
        try:
            return self._schema_callers[chosen]
        except KeyError:
            caller = self._compiler.caller("schema_transform",
                                           [self._schema_impls[i] for i in chosen])
            self._schema_callers[chosen] = caller
            return caller

    def schema_transform(self, caller: HookCall, registry: ToolRegistry, tool: Tool,
                         schema: dict[str, Any], api_format: str) -> None:
        """Let the compiled implementations (``caller``, from :meth:`schema_hooks`) edit
        ``schema`` (a private copy) in place.

        Error policy: an exception is logged (``hook.failed``) and propagates out of
        ``get_schemas``: a schema half-edited by a broken plugin is never sent.
        """
        try:
            caller(registry=registry, tool=tool, schema=schema, api_format=api_format)
        except Exception as exc:
            self._failed("schema_transform", exc, tool=tool.name, api_format=api_format)
            raise

    # -- calls ----------------------------------------------------------------------------
    def pre_invoke(self, caller: HookCall, registry: ToolRegistry, tool: Tool, call: ToolCall
                   ) -> ToolResult | None:
        """Run the compiled ``pre_invoke`` implementations of ``tool`` on ``call``.

        Error policy: an exception is logged (``hook.failed``) and returned as that call's
        error result (``error_kind="hook"``); the call does not run. ``None`` otherwise.
        """
        try:
            caller(registry=registry, tool=tool, call=call)
        except Exception as exc:
            log.warning("hook.failed", hook="pre_invoke", tool=tool.name, error=str(exc))
            return error_result(call.id, tool.name, "hook",
                                f"a plugin rejected the call: {type(exc).__name__}: {exc}",
                                reason=call.reason)
        return None

    def post_invoke(self, caller: HookCall, registry: ToolRegistry, tool: Tool, call: ToolCall,
                    result: ToolResult) -> ToolResult:
        """Run the compiled ``post_invoke`` implementations of ``tool``: the result they
        settle on (the first non-``None``, wrappers having the last word), else ``result``.

        Error policy: an exception is logged (``hook.failed``) and becomes the call's result,
        an error of kind ``hook`` (the tool's own result is dropped).
        """
        try:
            replacement = caller(registry=registry, tool=tool, call=call, result=result)
        except Exception as exc:
            log.warning("hook.failed", hook="post_invoke", tool=tool.name, error=str(exc))
            return error_result(call.id, tool.name, "hook", f"{type(exc).__name__}: {exc}",
                                reason=call.reason, duration=result.duration)
        return result if replacement is None else replacement

    def calls_started(self, observers: Sequence[CallObserver], call: ToolCall
                      ) -> Watching | None:
        """Tell ``observers`` a call begins (inside the call's context): those told of its
        end, with their tokens (``None``: none, every one with a start sat it out). A call
        plan's observers are compiled once instead (``ToolHooks.started``); this is for a
        call without a plan.

        Error policy: an exception is logged once per observer (``observer.failed``) and
        ignored (its token is ``None``); observers never fail a call.
        """
        started, _, ending = observing(observers, self._observer_failed)
        return ending if started is None else started(call)

    def calls_finished(self, observers: Sequence[CallObserver], call: ToolCall,
                       result: ToolResult, watching: Watching | None) -> None:
        """Tell the observers that watch the call (``calls_started``) it ended with
        ``result``.

        Error policy: as :meth:`calls_started`.
        """
        if watching:
            observing(observers, self._observer_failed)[1](call, result, watching)

    def batch_started(self, observers: Sequence[BatchObserver], calls: Sequence[ToolCall]
                      ) -> list[Any]:
        """Tell ``observers`` a batch begins (inside the batch's context); their tokens.

        Error policy: as :meth:`calls_started`.
        """
        return self._started(observers, "batch_started", calls)

    def batch_finished(self, observers: Sequence[BatchObserver], results: Sequence[ToolResult],
                       tokens: Sequence[Any]) -> None:
        """Tell ``observers`` the batch ended with ``results`` (not those that sat it out).

        Error policy: as :meth:`calls_started`.
        """
        for observer, token in zip(observers, tokens):
            if token is UNOBSERVED:
                continue
            try:
                observer.batch_finished(results, token)
            except Exception as exc:
                self._observer_failed(observer, "batch_finished", exc)

    def _started(self, observers: Sequence[Any], method: str, what: Any) -> list[Any]:
        tokens: list[Any] = []
        for observer in observers:
            try:
                tokens.append(getattr(observer, method)(what))
            except Exception as exc:
                tokens.append(None)
                self._observer_failed(observer, method, exc)
        return tokens

    def _observer_failed(self, observer: Any, method: str, exc: BaseException) -> None:
        key = (id(observer), method)
        if key not in self._quiet:
            self._quiet.add(key)
            log.warning("observer.failed", observer=type(observer).__name__, method=method,
                        error=f"{type(exc).__name__}: {exc}")

    # -- changes and suggestions ----------------------------------------------------------
    def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
        """Tell the implementations that ``registry`` changed.

        Error policy: an exception is logged (``hook.failed``) and propagates to the code that
        made the change (a refused ``set_setting`` is rolled back by the registry).
        """
        if not self.has_on_change:
            return
        try:
            self._direct_on_change(registry, event)
        except Exception as exc:
            self._failed("on_change", exc, kind=event.kind, names=list(event.names[:5]))
            raise

    def suggest_tools(self, registry: ToolRegistry, name: str, limit: int) -> list[str] | None:
        """Names close to an unknown ``name``: the first implementation's answer, or ``None``
        (the kernel then uses close string matches).

        Error policy: an exception is logged (``hook.failed``) and ignored; suggestions are a
        courtesy and never fail the call.
        """
        if not self.has_suggest:
            return None
        try:
            return self._hook.suggest_tools(registry=registry, name=name, limit=limit)  # type: ignore[no-any-return]
        except Exception as exc:
            self._failed("suggest_tools", exc, name=name)
            return None

    # -- reviewed changes -----------------------------------------------------------------
    def pending_changes(self, registry: ToolRegistry) -> list[PendingChange]:
        """Every plugin's changes that wait for review, in pluggy's call order.

        Error policy: an exception is logged (``hook.failed``) and that plugin's changes are
        left out; the others are listed.
        """
        return [change for changes in self._answers("pending_changes", registry=registry)
                for change in changes]

    def review_change(self, registry: ToolRegistry, tool: str, version: str,
                      action: str) -> bool:
        """Carry out a review of ``tool``'s pending change ``version``: whether a plugin
        holds that tool's changes (and so carried it out).

        Error policy: an exception is logged (``hook.failed``) and propagates: the review did
        not happen, and the caller is told why.
        """
        try:
            done = self._hook.review_change(registry=registry, tool=tool, version=version,
                                            action=action)
        except Exception as exc:
            self._failed("review_change", exc, tool=tool, version=version, action=action)
            raise
        return bool(done)
