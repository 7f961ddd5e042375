"""The kernel's hook specifications: the whole contract between toolregistry and its plugins.

Plugins mark their implementations with ``hookimpl`` imported from :mod:`toolregistry.plugin`
and are found through the ``toolregistry.plugins`` entry-point group (an application may also
pass plugin objects as ``ToolRegistry(plugins=[...])``). Hooks are called with keyword
arguments and only ever gain arguments, so an implementation may accept fewer arguments than
the spec names. The kernel calls them from one place only, the façade
``toolregistry._hooks.Hooks``, which also states each hook's error policy; docs/hooks.md
documents every hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    import concurrent.futures

    from pydantic import BaseModel

    from ._extensions import Command, SourceKind
    from ._registry import ToolRegistry
    from .events import ChangeEvent
    from .formats import ProviderFormat
    from .tool import Tool
    from .types import (
        ApprovalRequest,
        Decision,
        Job,
        OutputLimits,
        PendingChange,
        ToolCall,
        ToolResult,
    )

PROJECT_NAME = "toolregistry"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

PER_TOOL_HOOKS = ("pre_invoke", "authorize", "authorized", "post_invoke", "call_observer",
                  "dispatch")
"""The hooks worked out per tool into its call plan; :func:`call_hooks` narrows them."""

SCHEMA_HOOKS = ("schema_transform",)
"""The hooks worked out per tool when its schema is emitted; :func:`schema_hooks` narrows
them."""


class OperationObserver(Protocol):
    """Told about the registry's operations other than calls (returned by the
    ``operation_observer`` hook): loading a source (``mcp.connect``, ``mcp.list_tools``,
    ``openapi.fetch``, ``openapi.convert``), a discovery query (``discovery.query``), ...

    Plugins announce them with :func:`toolregistry.plugin.operation`. ``operation_started``
    runs in the context of the code doing the work, which it may change for the duration (a
    span made current); ``attributes`` describe the operation (``toolregistry.source``,
    ``discovery.hits`` ...) and may grow before it ends. ``operation_finished`` gets the final
    attributes and the exception that ended the operation, if any. Exceptions from either are
    logged once per observer and never fail the operation.
    """

    def operation_started(self, name: str, attributes: dict[str, Any]) -> Any:
        """The operation begins; the return value comes back as ``token``."""

    def operation_finished(self, name: str, attributes: dict[str, Any],
                           error: BaseException | None, token: Any) -> None:
        """The operation ended (``error``: what it raised, or ``None``)."""


class _Unobserved:
    """The type of :data:`UNOBSERVED` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNOBSERVED"


UNOBSERVED = _Unobserved()
"""What ``CallObserver.call_started`` (``BatchObserver.batch_started``) returns to sit a call
(a batch) out, e.g. a tracer with no provider installed: it changed nothing in the context,
and its ``call_finished`` (``batch_finished``) is not called for it. When every observer sits
it out, the call (the batch) costs what an unobserved one does past the start."""


class CallObserver(Protocol):
    """Told about every call of one tool (returned by the ``call_observer`` hook).

    ``call_started`` runs inside the call's own ``contextvars.Context`` (a copy of the
    caller's), before ``pre_invoke``: a context variable it sets there -- a span made current
    -- is visible to the hooks, inside the tool on every path, and to requests the tool makes,
    and is gone with the call. ``call_finished`` runs once per started call, after
    ``post_invoke``, in a copy of that context, with the call's final result (duration in
    ``result.duration``, outcome in ``result.outcome``: ``ok``, an error kind, ``denied``,
    ``approval_required``). Whatever ``call_started`` returns comes back as ``token``; an
    observer that returns :data:`UNOBSERVED` sits the call out (no ``call_finished``).
    A call that ends before it starts (it could not be read, names no tool or a disabled one)
    is told with both at once; naming no registered tool, the observer is one given for a
    stand-in ``Tool`` of that name (``provenance.detail == "not registered"``).
    An observer whose ``call_started`` is ``None`` (or absent) when the tool's call plan is
    compiled is told of ends only -- ``call_finished(call, result, None)`` for every call,
    those that end before running included, in the plan's order among the others -- and a
    call that no other observer starts skips the context work of observed calls: the cheap
    way to keep a log. To start needing ``call_started`` later, have the plans compiled
    again (``toolregistry.plugin.refresh_call_plans``).
    An observer that is often idle (a tracer with no tracer provider installed yet) may also
    have ``wants_calls()``: asked before each call, outside the call's context, and
    falsy when ``call_started`` would return :data:`UNOBSERVED`. When every observer with a
    ``call_started`` has one and none wants the call, the kernel skips their starts and the
    context work (a hint: ``call_started`` must still decide for itself when it is called).
    Exceptions from any of them are logged once per observer and never fail the call (a
    ``wants_calls`` that raised counts as wanting the call).
    """

    def call_started(self, call: ToolCall) -> Any:
        """A call of the tool begins (validation, authorization and execution follow)."""

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        """The call ended with ``result``."""


class BatchObserver(Protocol):
    """Told about every batch (``execute_tool_calls`` / ``aexecute_tool_calls``) of a registry
    (returned by the ``batch_observer`` hook).

    ``batch_started`` runs in a ``contextvars.Context`` of the batch (a copy of the
    caller's) before any of its calls is prepared; every call's own context is copied from
    it, so a span made current there is the parent of the calls' spans. ``batch_finished``
    gets the batch's results in order; an observer whose ``batch_started`` returned
    :data:`UNOBSERVED` sat the batch out and is not told. Errors are logged once and never
    fail the batch.
    """

    def batch_started(self, calls: Sequence[ToolCall]) -> Any:
        """A batch of these parsed calls begins (calls that could not be parsed are left out)."""

    def batch_finished(self, results: Sequence[ToolResult], token: Any) -> None:
        """The batch ended with one result per call, in order."""


class Runner(Protocol):
    """Runs the calls of a tool somewhere other than the registry's own threads and loop
    (returned by the ``dispatch`` hook).

    Validation, authorization, hooks, tracing, deadlines and answers stay with the registry:
    a runner only executes ``job.fn(*job.args, **job.kwargs)`` (awaiting it when
    ``job.is_async``) and hands back its outcome through a ``concurrent.futures.Future``:
    the value, or the exception (a :class:`~toolregistry.errors.ToolCallError` chooses the
    error kind and text the model reads, ``ToolTimeoutError()`` reports the deadline). Both
    APIs use it: the sync API waits on the future, the async API awaits it. When the
    deadline passes or the caller is cancelled first, the kernel calls :meth:`cancel` and
    answers ``timeout`` / ``cancelled`` at once; the runner stops the work (forcibly if it
    must) without blocking.
    """

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        """Start ``job``; must not block for the call's duration."""

    def cancel(self, job: Job, future: concurrent.futures.Future[Any]) -> None:
        """Stop ``job``: its deadline passed or its caller gave up."""


class ApprovalRecord(Protocol):
    """One call an authorizing plugin holds for a person, and what became of it (what an
    :class:`ApprovalQueue` lists).

    ``status``: ``pending`` (waiting for a person), ``approved`` / ``denied`` (decided, not
    yet resumed), ``running``, ``done`` (ran, or its denial was given to the model).
    ``request`` is the :class:`~toolregistry.types.ApprovalRequest` the pending result
    carried; ``approver`` and ``note`` who decided and why; ``effective_arguments`` what the
    call runs with (a person may have changed the model's).
    """

    @property
    def id(self) -> str:
        """The approval id (``request.id``)."""

    @property
    def tool(self) -> str:
        """The tool the call is for."""

    @property
    def request(self) -> ApprovalRequest:
        """What the held call asks."""

    @property
    def status(self) -> str:
        """``pending``, ``approved``, ``denied``, ``running`` or ``done``."""

    @property
    def approver(self) -> str | None:
        """Who decided."""

    @property
    def note(self) -> str | None:
        """Why (a denial's note is what the model reads)."""

    @property
    def effective_arguments(self) -> dict[str, Any]:
        """The arguments the call runs with."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the record."""


class ApprovalQueue(Protocol):
    """The calls one authorizing plugin holds for a person's approval in one registry
    (returned by the ``approval_queue`` hook); the kernel's ``registry.approvals`` lists,
    decides and resumes through it, so that other plugins (code mode, the inspector) never
    use the authorizing plugin directly.

    Every method is safe to call from any thread and any process that shares the plugin's
    store. A decision is taken once; a decided call runs once, when resumed.
    """

    def approvals(self, status: str | None = None) -> Sequence[ApprovalRecord]:
        """The calls held (or those in one ``status``), oldest first."""

    def __contains__(self, approval_id: object) -> bool:
        """Whether this queue holds an approval with this id."""

    def get(self, approval_id: str) -> ApprovalRecord:
        """The approval with this id (a ``LookupError`` when the queue has none)."""

    def decide(self, approval_id: str, decision: str, *, by: str | None = None,
               note: str | None = None, arguments: Mapping[str, Any] | None = None
               ) -> ApprovalRecord:
        """Approve (``decision="approve"``, with changed ``arguments`` if given) or deny
        (``"deny"``; ``note`` is what the model reads) a pending call: the record as decided.
        A ``LookupError`` when it is unknown or decided already; a ``ValueError`` when the
        changed arguments do not fit the tool."""

    def resume(self, items: Sequence[Any], *, context: Mapping[str, Any] | None = None,
               timeout: float | None = None) -> list[ToolResult]:
        """Run the decided calls among ``items`` (approval ids, pending results, their
        ``ApprovalRequest`` or its dict) once each: one result per item, in order (an
        undecided one stays pending). An unknown or used id is a ``LookupError``, and then
        nothing runs."""

    async def aresume(self, items: Sequence[Any], *, context: Mapping[str, Any] | None = None,
                      timeout: float | None = None) -> list[ToolResult]:
        """Async twin of :meth:`resume`."""


@hookspec(firstresult=True)
def register(registry: ToolRegistry, tool: Tool) -> Tool | None:
    """A tool is about to enter ``registry`` (every path: function, class, loader, manual).

    Fires after the kernel built and name-checked ``tool`` and before it is stored. An
    implementation may return a replacement :class:`~toolregistry.Tool` (the first non-``None``
    result wins), return ``None`` to accept it unchanged, or raise
    :class:`~toolregistry.errors.ToolRejected` with a reason to refuse it. It must not store
    or register tools itself from here.
    """


@hookspec
def schema_transform(
    registry: ToolRegistry, tool: Tool, schema: dict[str, Any], api_format: str
) -> None:
    """The parameters schema of ``tool`` is being emitted for ``api_format``.

    ``schema`` is a private copy of the tool's JSON Schema parameters object (before the
    provider dialect is applied), and implementations edit it in place; the return value is
    ignored. Fires once per tool and format until the registry changes (results are cached).
    ``api_format`` is the canonical name of a format that emits schemas, one of
    ``registry.formats.names("schemas")`` (the built-in formats and those plugins add with
    ``provider_formats``); a strict OpenAI emission passes ``openai-chat`` /
    ``openai-responses`` with strictness applied afterwards by the format.
    """


@hookspec
def pre_invoke(registry: ToolRegistry, tool: Tool, call: ToolCall) -> None:
    """A call to ``tool`` was parsed and is about to be validated and executed.

    Fires on every path (``invoke``, ``ainvoke``, ``execute_tool_calls``,
    ``aexecute_tool_calls``). Implementations may edit ``call.arguments`` in place and attach
    data to the call (``call.reason``, ``call.extra``); the return value is ignored. Raising
    turns into an error result for that call only.
    """


@hookspec(firstresult=True)
def post_invoke(
    registry: ToolRegistry, tool: Tool, call: ToolCall, result: ToolResult
) -> ToolResult | None:
    """``tool`` ran (successfully or not) and ``result`` is about to go back to the caller.

    An implementation may return a replacement :class:`~toolregistry.ToolResult` (first
    non-``None`` wins) or ``None`` to keep it. Fires on every path, after timeouts and errors
    too (``result.is_error`` tells).
    """


@hookspec
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Something in ``registry`` changed; ``event.kind`` says what.

    Kinds: ``register``, ``unregister``, ``enable``, ``disable``, ``metadata``, ``namespace``,
    ``rename`` (``details["renamed"]`` maps old to new names), ``setting`` (a registry-level option such as ``think_augment`` or ``tool_discovery``).
    Fires after the change is visible, outside the registry's lock, so implementations may
    read the registry and may register or unregister tools. The return value is ignored.
    """


@hookspec
def loaders() -> Sequence[SourceKind]:  # type: ignore[empty-body]
    """Return the kinds of tool source this plugin provides, as
    :class:`~toolregistry.plugin.SourceKind` objects.

    Called once when the plugin host is built. ``registry.register_from_<name>(...)``,
    ``registry.load(name, ...)`` and ``[[tool.toolregistry.sources]]`` entries with
    ``kind = "<name>"`` dispatch to the kind's loader; the kind says which config option is
    its target and which options are paths relative to the configuration file. Two plugins
    claiming one kind: the first keeps it (strict mode: an error).
    """


@hookspec
def settings_model() -> type[BaseModel] | None:
    """Return the pydantic model of this plugin's ``[tool.toolregistry.plugins.<name>]``
    table (``None``: the plugin takes no options).

    Called when a configuration with that table is loaded, so that a bad table is a
    :class:`~toolregistry.errors.ConfigError` naming the plugin, the option and the file
    before anything runs; and by ``registry.plugin_settings(name, model)``. Import the model
    inside the implementation: loading the plugin must stay cheap.
    """


@hookspec
def cli_commands() -> Sequence[Command]:  # type: ignore[empty-body]
    """Return the ``toolregistry`` subcommands this plugin contributes, as
    :class:`~toolregistry.plugin.Command` objects.

    Called when the ``toolregistry`` command builds its parser (``--help`` lists them). A
    plugin whose hook fails, or whose command cannot be added, is reported and left out;
    the other commands keep working. A kernel command's name cannot be taken.
    """


@hookspec(firstresult=True)
def suggest_tools(registry: ToolRegistry, name: str, limit: int) -> list[str] | None:
    """Suggest at most ``limit`` tool names for an unknown ``name`` a model asked for.

    The first non-``None`` answer wins; the kernel falls back to close string matches.
    """


@hookspec
def call_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str] | None:
    """Which of *this plugin's* per-tool hooks concern calls to ``tool``.

    The kernel works out once per tool which hook implementations its calls need (the tool's
    *call plan*), and again after the tool, a registry setting (``set_setting``) or the set of
    plugins changed. Per-tool hooks are those in :data:`PER_TOOL_HOOKS`. At that moment the
    kernel asks each plugin that implements ``call_hooks`` *separately* (not through pluggy's
    one-call-for-all): return the names of this plugin's per-tool hooks that concern ``tool``
    (an empty collection: none do, and none of them runs for its calls), or ``None`` for all
    of them. A plugin without ``call_hooks`` concerns every tool with every hook it implements
    (compatible with plugins written before it). Where several plugins concern a tool, the
    hooks keep pluggy's semantics (order, wrappers, first result) among them.

    The answer must depend only on ``tool`` (its metadata), the registry's settings and the
    plugin's configuration -- what the kernel knows to recompute on. An exception is logged
    (``hook.failed``) and the plugin then concerns the tool with all its hooks.
    """


@hookspec
def schema_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str] | None:
    """Which of *this plugin's* per-tool schema hooks concern the schemas of ``tool``.

    The schema-time counterpart of :func:`call_hooks`. Per-tool schema hooks are those in
    :data:`SCHEMA_HOOKS` (``schema_transform``). When a tool's schema is emitted and not
    cached (after the tool, a registry setting or the set of plugins changed), the kernel asks
    each plugin that implements ``schema_hooks`` *separately*: return the names of this
    plugin's schema hooks that concern ``tool`` (an empty collection: none do, and none of them
    runs for its schemas), or ``None`` for all of them. A tool no implementation concerns goes
    out without the private copy ``schema_transform`` needs. A plugin without ``schema_hooks``
    concerns every tool's schema with every schema hook it implements; where several concern a
    tool, pluggy's semantics hold among them.

    The answer must depend only on ``tool`` (its metadata), the registry's settings and the
    plugin's configuration. An exception is logged (``hook.failed``) and the plugin then
    concerns the tool with all its schema hooks.
    """


@hookspec
def provider_formats() -> Iterable[ProviderFormat]:  # type: ignore[empty-body]
    """Return the provider formats this plugin adds (instances of
    :class:`toolregistry.plugin.ProviderFormat`).

    Called once when the plugin manager is built. Each format becomes an ``api_format=`` name
    for ``get_schemas``, ``build_tool_call_messages`` and ``tool_choice``, and its calls are
    recognised by ``execute_tool_calls``; the built-in formats come first and a name (or
    alias, or call ``type``) already taken is refused with a ``plugin.conflict`` event (an
    error in strict mode). A failure here marks the plugin broken.
    """


@hookspec
def authorize(registry: ToolRegistry, tool: Tool, call: ToolCall, arguments: Mapping[str, Any]
              ) -> Decision | Awaitable[Decision | None] | None:
    """May ``call`` run? Fires after ``pre_invoke`` and validation, before anything runs.

    ``arguments`` are exactly the values the tool will receive, by parameter name: validated
    and converted (``"5000"`` for a ``float`` parameter is ``5000.0`` here; safe coercion
    applied; injected context parameters left out). Decide on them, not on
    ``call.arguments``, which stay as the model sent them (after ``pre_invoke`` and safe
    coercion) for approval requests and logs. ``call.reason`` is the model's rationale when
    the think plugin is on. Return a
    :class:`~toolregistry.types.Decision` (allow, deny with a reason the model sees, pending
    approval) or ``None`` for no opinion. Every concerned implementation is called (pluggy's
    order) and the decisions combine **deny-overrides**: any deny wins, else any pending,
    else the call runs (:meth:`Decision.combine`). A denied call's result has
    ``error_kind="denied"``; a pending one ``error_kind="approval_required"``,
    ``result.pending`` true and ``result.approval`` (an
    :class:`~toolregistry.types.ApprovalRequest`); neither runs, neither goes through
    ``post_invoke``. An exception denies the call, naming the error. Per-tool: compiled into
    the call plan (``call_hooks``).

    A decision that takes a while (a person's answer, a remote service) may be returned as an
    awaitable of a ``Decision`` (or ``None``), e.g. a coroutine: the async API awaits it on the
    caller's event loop before the call runs, without holding the loop; the sync API runs it
    to completion. Unless another implementation denied the call already (then it is closed
    unawaited).
    """


@hookspec
def authorized(registry: ToolRegistry, tool: Tool, call: ToolCall, decision: Decision) -> None:
    """The decision that stands for ``call``, once every concerned ``authorize``
    implementation answered (awaitables included) and their decisions were combined:
    ``allow`` (it runs now), ``deny`` or ``pending`` (it does not run). Fires once per call
    that was authorized; also for a call of a disabled tool, which ends before authorization,
    with a deny whose ``rule`` is ``"disabled"``, and for a call cancelled before its
    decision came, with a deny whose ``rule`` is ``"cancelled"``.

    The place where a plugin that decides about calls keeps its books on what was actually
    decided: count a budget only for calls that run, audit each decision once with the
    outcome that stands, also when another plugin's decision won. Return value ignored.
    Per-tool: compiled into the call plan (``call_hooks``). An exception is logged
    (``hook.failed``) and ignored: the decision stands.
    """


@hookspec
def call_observer(registry: ToolRegistry, tool: Tool) -> CallObserver | None:
    """An observer of ``tool``'s calls (:class:`CallObserver`), or ``None``.

    Called when the tool's call plan is compiled, not per call; every concerned
    implementation's observer is kept (pluggy's order). A tool no observer concerns pays
    nothing. An exception is logged and that plugin observes nothing for the tool.
    """


@hookspec
def batch_observer(registry: ToolRegistry) -> BatchObserver | None:
    """An observer of ``registry``'s batches (:class:`BatchObserver`), or ``None``.

    Called once per registry, and again after a setting changed or a plugin was added. An
    exception is logged and that plugin observes no batch.
    """


@hookspec(firstresult=True)
def dispatch(registry: ToolRegistry, tool: Tool) -> Runner | None:
    """Where ``tool``'s calls run: a :class:`Runner`, or ``None`` for the registry's own
    worker threads and event loop (the default).

    Called when the tool's call plan is compiled; the first runner returned wins. The calls
    keep everything else of the registry (validation, authorization, hooks, observers,
    deadlines, tools that must run alone, answers). An exception propagates to the tool's
    calls (each gets an ``execution`` error naming it): a call never silently runs where it
    was not meant to.
    """


@hookspec
def operation_observer(registry: ToolRegistry) -> OperationObserver | None:
    """An observer of ``registry``'s operations other than calls (:class:`OperationObserver`):
    loading sources, discovery queries, whatever plugins announce with
    :func:`toolregistry.plugin.operation`; or ``None``.

    Called once per registry, and again after a plugin was added. An exception is logged and
    that plugin observes no operation.
    """


@hookspec
def approval_queue(registry: ToolRegistry) -> ApprovalQueue | None:
    """The calls this plugin holds for a person's approval in ``registry`` (an
    :class:`ApprovalQueue`), or ``None``: it holds none.

    An authorizing plugin that answers ``Decision.pending`` implements it so that whoever
    decides (the inspector, code mode, an MCP input request, a LangGraph interrupt, the
    application through ``registry.approvals``) lists, decides and resumes its held calls
    through the kernel, never through the plugin itself. Called whenever
    ``registry.approvals`` is used (not per call). An exception is logged and that plugin's
    queue is left out.
    """


@hookspec
def incoming_context(registry: ToolRegistry, carrier: Mapping[str, str]
                     ) -> AbstractContextManager[Any] | None:
    """A context manager that makes ``carrier`` (what a remote caller sent along with a
    request: W3C ``traceparent`` / ``tracestate``, a request id) current while the registry
    serves the request, or ``None``.

    Servers (the MCP plugin's ``serve``) enter every implementation's manager with
    :func:`toolregistry.plugin.continuing` around a request's calls, so the calls continue
    the caller's trace. An exception is logged and that plugin's manager is skipped.
    """


@hookspec
def pending_changes(registry: ToolRegistry) -> Sequence[PendingChange] | None:
    """The changes to this plugin's tools in ``registry`` that wait for review, as
    :class:`~toolregistry.types.PendingChange` objects (``None`` or empty: none).

    A source that holds a changed tool definition back (the mcp plugin, when a server changes
    a tool after it was accepted) lists it here, with the screening findings of the pending
    version, so that any UI can show it through ``registry.pending_changes()``. Every
    implementation's list is joined. An exception is logged and that plugin's changes are left
    out of the list.
    """


@hookspec(firstresult=True)
def review_change(registry: ToolRegistry, tool: str, version: str, action: str
                  ) -> bool | None:
    """Someone reviewed the pending change ``version`` of ``tool`` (a registry name):
    ``action`` is ``"accept"`` (adopt exactly that version; a newer one stays pending) or
    ``"keep"`` (keep the accepted version; the change stays listed, ``kept``).

    Return ``True`` when ``tool`` is this plugin's and the action was carried out, ``None``
    when it is not (the first ``True`` wins). Raise ``LookupError`` / ``ValueError`` naming
    what was wrong (no such pending version) when the action cannot be carried out. Called by
    ``registry.accept_change`` / ``registry.keep_change``; exceptions propagate to them.
    """


@hookspec
def output_limits(registry: ToolRegistry, tool: Tool) -> OutputLimits | None:
    """The output-size limits a source should respect for ``tool``'s results
    (:class:`~toolregistry.types.OutputLimits`), or ``None`` for no opinion.

    Asked by sources that cut long results themselves (a loader's own size limit, such as
    the MCP plugin's ``max-result-chars``) through :func:`toolregistry.plugin.output_limits`,
    only for a result long enough to matter, so that they need not know which plugin handles
    long output: a plugin that takes long output whole (spooling it to a file) answers
    ``OutputLimits(max_chars=None)`` for the tools it takes. The answers are combined: the
    whole result when any says so, else the smallest limit. An exception is logged and that
    plugin's answer ignored.
    """
