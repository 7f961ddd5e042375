"""Value types that flow through a call: :class:`ToolCall`, :class:`ToolResult`, the content
parts (:class:`Image`, :class:`Audio`, :class:`EmbeddedResource`, :class:`ResourceLink`, from
``_content``), and the seams' values: :class:`Decision` and :class:`ApprovalRequest` (authorization),
:class:`Job` (dispatch), :class:`OutputLimits` (output size)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

from attrs import define, field, frozen

from ._content import Audio, EmbeddedResource, Image, ResourceLink

if TYPE_CHECKING:
    import contextvars

    from ._execution import RetryPolicy
    from .tool import Tool

__all__ = [
    "ApprovalRequest",
    "Audio",
    "Decision",
    "DecisionKind",
    "EmbeddedResource",
    "ErrorKind",
    "Image",
    "Job",
    "OutputLimits",
    "PendingChange",
    "ProgressReporter",
    "ResourceLink",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "answering_in",
    "approval_id_of",
    "calling_for",
    "current_caller",
    "reporting_progress",
]

ProgressReporter = Callable[[float, "float | None", "str | None"], None]
"""``reporter(progress, total, message)``: where :meth:`ToolContext.report_progress` goes."""

_progress: ContextVar[ProgressReporter | None] = ContextVar("toolregistry_progress",
                                                            default=None)


@contextlib.contextmanager
def reporting_progress(reporter: ProgressReporter | None) -> Iterator[None]:
    """Calls started inside the block report their tools' progress to ``reporter``.

    The reporter is taken when a call starts, so it follows the call into worker threads;
    it may be called from any thread. (The MCP server uses it to send
    ``notifications/progress``.)
    """
    token = _progress.set(reporter)
    try:
        yield
    finally:
        _progress.reset(token)

def listen_to_progress(listener: ProgressReporter) -> None:
    """Also send the progress of the calls started from here on in the current context to
    ``listener`` (before any reporter already set there). Meant for
    ``CallObserver.call_started``, which runs in the call's own context: the listener hears
    that call's progress and goes away with it."""
    previous = _progress.get()
    if previous is None:
        _progress.set(listener)
        return

    def both(progress: float, total: float | None, message: str | None) -> None:
        listener(progress, total, message)
        previous(progress, total, message)

    _progress.set(both)


_caller_format: ContextVar[str] = ContextVar("toolregistry_caller_format", default="registry")


@contextlib.contextmanager
def answering_in(api_format: str) -> Iterator[None]:
    """Calls made by name inside the block (``invoke`` / ``ainvoke``) are answered for a
    caller that reads ``api_format`` (``"mcp"``, ``"anthropic"``, ...): their
    :attr:`ToolCall.format` is that format instead of ``"registry"``, so a tool that returns
    tool definitions (``discover_tools``) returns them in the caller's dialect. Calls parsed
    from a provider's own shape keep the format that read them. (A served registry declares
    its protocol's format around each call it runs.)
    """
    if not isinstance(api_format, str) or not api_format:
        raise ValueError(f"answering_in() needs an API format name such as 'mcp' or "
                         f"'openai-chat', got {api_format!r}")
    token = _caller_format.set(api_format)
    try:
        yield
    finally:
        _caller_format.reset(token)


_caller: ContextVar[str | None] = ContextVar("toolregistry_caller", default=None)


@contextlib.contextmanager
def calling_for(caller: str | None) -> Iterator[None]:
    """Calls started inside the block are made for ``caller``: who asked for them (a served
    client's session or token, an application's user), as an opaque string.

    Authorizers that hold calls for a person key the approvals by it: an approval runs only
    a call from the caller it was given for (``ApprovalRequest.caller``). Servers set it
    around a request's calls (the MCP plugin's ``serve`` does); ``None``: nobody in
    particular.
    """
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def current_caller() -> str | None:
    """Whom the calls being made now are for (:func:`calling_for`; ``None``: nobody named)."""
    return _caller.get()


ErrorKind = Literal[
    "unknown_tool",
    "malformed_call",
    "malformed_arguments",
    "invalid_arguments",
    "disabled",
    "undiscovered",
    "execution",
    "timeout",
    "cancelled",
    "hook",
    "remote",
    "denied",
    "approval_required",
]


@define(slots=True, eq=False)
class ToolCall:
    """One call a model asked for, in the registry's own form.

    ``arguments`` is the parsed object (``None`` until parsed); ``raw_arguments`` keeps what
    the model sent (a JSON string or a mapping). ``format`` names the provider format that read
    the call (``openai-chat``, ``anthropic``, ``bedrock-converse``, ... or a plugin's), or
    ``registry`` for the registry's own shape (a call by name; inside :func:`answering_in`,
    the format the caller declared).
    Plugins attach data in ``pre_invoke``: ``reason`` (the think plugin's rationale) and
    ``extra``. ``batch_id``: the same id on every call of one ``execute_tool_calls`` /
    ``aexecute_tool_calls`` (set by the kernel before ``BatchObserver.batch_started``;
    ``None`` for ``invoke``). ``trace_id`` / ``span_id``: the call's span, as lowercase hex,
    set by a tracing plugin's ``CallObserver.call_started`` (``None`` without one), so that
    logs and UIs can link to the trace without importing any tracing library.
    """

    name: str
    arguments: dict[str, Any] | None = None
    id: str | None = None
    raw_arguments: Any = None
    format: str = field(factory=_caller_format.get)
    reason: str | None = None
    extra: dict[str, Any] = field(factory=dict)
    raw: Any = field(default=None, repr=False)
    batch_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


ContentPart = Mapping[str, Any]
"""A content part: ``{"type": "text", "text": ...}``, ``{"type": "image", "image": Image}``,
``{"type": "audio", "audio": Audio}``, ``{"type": "resource", "resource": EmbeddedResource}`` or
``{"type": "resource_link", "resource_link": ResourceLink}``."""


@define(slots=True, eq=False)
class ToolResult:
    """The one result of one call: success, or an error the model can act on.

    ``content`` is what goes back to the model: a string, or a list of parts for multimodal
    results (``{"type": "text", "text": ...}``, ``{"type": "image", "image": Image}``, and
    ``audio``, ``resource`` and ``resource_link`` parts, see :data:`ContentPart`).
    ``structured_content`` is the result as a JSON object beside the content, for a tool that
    declares an output schema (or an MCP server's ``structuredContent``); the content then
    holds the same data as JSON text for callers that read text only.
    ``value`` is the tool's raw return value for the application. On error, ``error_kind``
    says what went wrong and ``content`` explains it for the model.
    """

    call_id: str | None
    name: str
    content: str | list[dict[str, Any]]
    is_error: bool = False
    error_kind: ErrorKind | None = None
    value: Any = field(default=None, repr=False)
    reason: str | None = None
    duration: float = 0.0
    artifact: Any = field(default=None, repr=False)
    metadata: dict[str, Any] = field(factory=dict)
    approval: ApprovalRequest | None = field(default=None, repr=False)
    """What a call that waits for approval asks (``pending`` results only)."""
    redacted_text: str | None = field(default=None, repr=False)
    """The error text without the argument values the kernel quoted in it (an
    ``invalid_arguments`` error says what each bad value was): what logs and traces that keep
    no values record. ``None``: the kernel quoted no value (:attr:`loggable_text` is ``text``)."""
    structured_content: dict[str, Any] | None = field(default=None, repr=False)
    """The result as a JSON object, beside the content (``None``: none)."""

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return not self.is_error

    @property
    def pending(self) -> bool:
        """True when the call waits for approval and did not run (``error_kind`` is
        ``approval_required``; ``approval`` says what is asked). It counts as an error for code
        that does not know about approvals: nothing claims it succeeded."""
        return self.error_kind == "approval_required"

    @property
    def outcome(self) -> str:
        """``"ok"``, or the ``error_kind`` of a failed, refused or pending call."""
        return self.error_kind or ("error" if self.is_error else "ok")

    @property
    def text(self) -> str:
        """The text of the content (text parts joined for multimodal results)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p["text"] for p in self.content if p.get("type") == "text")

    @property
    def loggable_text(self) -> str:
        """:attr:`text` without the argument values the kernel quoted in an error message
        (:attr:`redacted_text` when set): what a log or trace keeps when values are not
        captured. A tool's own output and exception messages are left as they are."""
        return self.text if self.redacted_text is None else self.redacted_text

    @property
    def images(self) -> list[Image]:
        """The images in the content."""
        if isinstance(self.content, str):
            return []
        return [p["image"] for p in self.content if p.get("type") == "image"]

    @property
    def audio(self) -> list[Audio]:
        """The audio parts' :class:`Audio` in the content."""
        if isinstance(self.content, str):
            return []
        return [p["audio"] for p in self.content if p.get("type") == "audio"]


_EVENT_LOCK = threading.Lock()


@define(slots=True, eq=False)
class ToolContext:
    """What a tool parameter annotated ``ToolContext`` receives at call time.

    It is never part of the schema the model sees. ``values`` is the mapping the application
    passed as ``context=`` to ``invoke`` / ``execute_tool_calls``; ``cancel_event`` is set when
    the call times out, so a cooperative tool can stop early.
    """

    registry: Any
    call: ToolCall
    values: Mapping[str, Any] = field(factory=dict)
    # made on first use (most calls never look at it): see the cancel_event property
    _cancel_event: threading.Event | None = field(default=None, repr=False,
                                                  alias="cancel_event")
    deadline: float | None = None
    """When the call's time is up, on the ``time.monotonic()`` clock (``None``: no limit)."""
    progress: ProgressReporter | None = field(factory=_progress.get, repr=False)
    """Where :meth:`report_progress` goes (from :func:`reporting_progress`; ``None``: nowhere)."""

    def report_progress(self, progress: float, total: float | None = None,
                        message: str | None = None) -> None:
        """Say how far the call has got (``progress`` of ``total``, which may be unknown).

        A no-op unless the caller asked for progress (an MCP client that sent a progress
        token to a served registry, or :func:`reporting_progress`); cheap enough to call often.
        """
        reporter = self.progress
        if reporter is not None:
            reporter(progress, total, message)

    @property
    def cancel_event(self) -> threading.Event:
        """Set when the call timed out or was cancelled: long-running tools may check it."""
        event = self._cancel_event
        if event is None:
            with _EVENT_LOCK:  # one event, whichever thread asks first
                event = self._cancel_event
                if event is None:
                    event = self._cancel_event = threading.Event()
        return event

    @property
    def cancelled(self) -> bool:
        """True once the call timed out or was cancelled (stop working and return)."""
        event = self._cancel_event
        return event is not None and event.is_set()

    def remaining(self) -> float | None:
        """Seconds left before the call's deadline (``None`` when it has none)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())


DecisionKind = Literal["allow", "deny", "pending"]

_DECISION_RANK = {"allow": 0, "pending": 1, "deny": 2}


@frozen
class Decision:
    """What an ``authorize`` implementation decided about one call.

    ``allow`` lets it run; ``deny`` refuses it (``reason`` is what the model reads);
    ``pending`` holds it for a human: the call does not run and its result is a pending
    approval (``reason`` says why approval is needed, ``approval_id`` may fix the id, else a
    stable one is derived from the call). ``rule`` names what decided, for audit trails.
    Build them with :meth:`allow`, :meth:`deny` and :meth:`pending`.
    """

    kind: DecisionKind
    reason: str | None = None
    approval_id: str | None = None
    rule: str | None = None

    @classmethod
    def allow(cls, *, rule: str | None = None) -> Decision:
        """Let the call run."""
        return cls("allow", rule=rule)

    @classmethod
    def deny(cls, reason: str, *, rule: str | None = None) -> Decision:
        """Refuse the call; ``reason`` goes to the model."""
        return cls("deny", reason, rule=rule)

    @classmethod
    def pending(cls, reason: str | None = None, *, approval_id: str | None = None,
                rule: str | None = None) -> Decision:
        """Hold the call until a human decides."""
        return cls("pending", reason, approval_id, rule)

    @staticmethod
    def combine(decisions: Iterable[Decision]) -> Decision | None:
        """Deny overrides: any ``deny`` wins, else any ``pending``, else ``allow``; among
        equals the first (in hook call order) wins. ``None`` when there is no decision."""
        best: Decision | None = None
        for decision in decisions:
            if best is None or _DECISION_RANK[decision.kind] > _DECISION_RANK[best.kind]:
                best = decision
        return best


@frozen
class ApprovalRequest:
    """What a call held for approval asks: a serializable record (``to_dict`` /
    ``from_dict``), so that the decision may come in another process.

    ``id`` is stable: the same call (tool, call id, arguments) always gets the same id unless
    the deciding plugin chose one. ``arguments`` are the call's arguments as validated against
    (after ``pre_invoke`` and safe coercion); ``reason`` is the model's rationale for the call
    (``toolcall_reason`` with the think plugin); ``message`` says why approval is needed;
    ``caller`` whom the call was made for (:func:`calling_for`).
    """

    id: str
    tool: str
    arguments: Mapping[str, Any]
    call_id: str | None = None
    reason: str | None = None
    message: str | None = None
    rule: str | None = None
    caller: str | None = None

    @staticmethod
    def stable_id(tool: str, call_id: str | None, arguments: Mapping[str, Any],
                  caller: str | None = None) -> str:
        """The id a call gets when its decision did not choose one: the same for the same
        tool, call id, arguments and caller."""
        what: list[Any] = [tool, call_id, arguments] if caller is None else \
            [tool, call_id, arguments, caller]
        canon = json.dumps(what, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                           default=str)
        import hashlib

        return "apr_" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:24]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (arguments as the model sent them)."""
        return {"id": self.id, "tool": self.tool, "arguments": dict(self.arguments),
                "call_id": self.call_id, "reason": self.reason, "message": self.message,
                "rule": self.rule, "caller": self.caller}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        """The inverse of :meth:`to_dict`; a missing ``id``, ``tool`` or ``arguments`` is a
        ``ValueError`` naming it."""
        missing = [k for k in ("id", "tool", "arguments") if k not in data]
        if missing:
            raise ValueError(f"an approval request needs {', '.join(missing)}")
        if not isinstance(data["arguments"], Mapping):
            raise ValueError("an approval request's arguments must be an object")
        return cls(str(data["id"]), str(data["tool"]), dict(data["arguments"]),
                   data.get("call_id"), data.get("reason"), data.get("message"),
                   data.get("rule"), data.get("caller"))


def approval_id_of(item: Any) -> str | None:
    """The approval id an item of ``resume`` names: an id, a pending result, an
    :class:`~toolregistry.types.ApprovalRequest`, an approval record, or the dict of a request
    or a record; ``None`` for a result that is not pending (passed through as it is)."""
    if isinstance(item, str):
        return item
    if isinstance(item, ToolResult):
        return item.approval.id if item.pending and item.approval is not None else None
    if isinstance(item, ApprovalRequest):
        return item.id
    if isinstance(item, Mapping):
        data = item.get("request", item)
        approval_id = data.get("id") if isinstance(data, Mapping) else None
        if isinstance(approval_id, str):
            return approval_id
    elif isinstance(getattr(item, "request", None), ApprovalRequest):
        return str(item.request.id)
    raise TypeError(f"resume() takes results, approval ids, ApprovalRequest objects or their "
                    f"dicts; got {type(item).__name__}")


@frozen
class Job:
    """One call handed to a runner (the ``dispatch`` hook): what to run and by when.

    ``fn`` is the tool's callable for the API that called (``is_async`` tells whether it
    returns a coroutine), to be called as ``fn(*args, **kwargs)`` -- the arguments are
    validated, and include injected values (a :class:`ToolContext`, application context)
    that a runner in another process must drop or replace. ``timeout`` is the call's limit in
    seconds and ``deadline`` the same on the ``time.monotonic()`` clock (``None``: none).
    ``context`` is the call's own ``contextvars.Context`` (a runner that runs the call in
    this process enters it exactly once: ``job.context.run(fn, *args, **kwargs)``; one that
    ships it elsewhere carries what it can). ``retry`` is the registry's retry policy when
    the tool is idempotent (the kernel does not retry dispatched calls; the runner may).
    ``cancel_event`` is the call's ``ToolContext.cancel_event`` when the tool takes one.
    """

    tool: Tool
    call: ToolCall
    fn: Callable[..., Any]
    is_async: bool
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    timeout: float | None
    deadline: float | None
    context: contextvars.Context = field(repr=False)
    retry: RetryPolicy | None = None
    cancel_event: threading.Event | None = field(default=None, repr=False)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None`` when it has none)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())


@frozen
class PendingChange:
    """A new version of a registered tool that its source holds back until someone reviews
    it (an MCP server changed the tool's description or schema after it was accepted): the
    registered tool stays the accepted version meanwhile.

    ``tool`` is the registry's name; ``version`` the pending version's id (accept exactly that
    one: a newer one stays pending); ``accepted`` the registered version's id;
    ``description`` / ``parameters`` the pending version's; ``findings`` what screening found
    in the *pending* version (``kind``, ``where``, ``excerpt``, ...); ``kept``: someone chose
    to keep the accepted version over this one; ``source`` names where it came from and
    ``plugin`` the plugin that holds it.
    """

    tool: str
    version: str
    accepted: str
    description: str
    parameters: Mapping[str, Any]
    findings: tuple[Mapping[str, Any], ...] = ()
    kept: bool = False
    source: str | None = None
    plugin: str | None = None


@frozen
class OutputLimits:
    """The output-size limits a source should respect for one tool's results (the
    ``output_limits`` hook; asked through :func:`toolregistry.plugin.output_limits`).

    ``max_chars``: the text of a result may be cut to this many characters; ``None``: keep
    the whole result -- a plugin takes long output as it is (writes it to a file and returns
    a head and a handle, pages it), so a source must not cut it first.
    """

    max_chars: int | None = None

    @classmethod
    def combine(cls, answers: Iterable[OutputLimits]) -> OutputLimits | None:
        """Several plugins' answers as one: keep the whole result when any says so (a cut
        cannot be undone), else the smallest limit; ``None`` when nobody answered."""
        limits = list(answers)
        if not limits:
            return None
        if any(limit.max_chars is None for limit in limits):
            return cls(None)
        return cls(min(limit.max_chars for limit in limits if limit.max_chars is not None))
