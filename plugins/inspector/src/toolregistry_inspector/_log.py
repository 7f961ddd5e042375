"""The execution log: a bounded ring buffer of calls fed by the kernel's call observer seam,
optionally written to an SQLite file or the shared store by a background thread (``_sinks``);
``_reads`` reads it back.

The observer's work per call is one tuple appended to a ``deque`` (and, when a file or store
is configured, put on a queue, with the call in flight handed to the writer for the shared
``running`` table, ``_live``): everything else (redaction, JSON, SQL) happens when the log is
read or on the writer thread, so logging adds next to nothing to a call.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

from toolregistry.plugin import log as events
from toolregistry.plugin import refresh_call_plans, value_shape

from ._filter import _Filter
from ._live import LiveRows
from ._log_content import cut as _cut
from ._log_content import shape_result
from ._running import start as start_running
from ._settings import PLUGIN_NAME, InspectorSettings
from ._sinks import FileSink, ServerSink, sink

if TYPE_CHECKING:
    from toolregistry import ToolCall, ToolRegistry, ToolResult
    from toolregistry.plugin import StoreURL

    from ._running import Running, RunningCalls

ArgumentMode = Literal["redacted", "full"]

# (seq, time, tool, call_id, arguments, outcome, duration, reason, error, approval, spool,
#  format, content, batch, trace_id, span_id): what the observer keeps per call, turned into a
#  LogEntry when read.
_Record = tuple[int, float, str, "str | None", Any, str, float, "str | None", Any, Any, Any, str,
                Any, "str | None", "str | None", "str | None"]

_STATE_KEY = "log"
SYNC_SECONDS = 0.5
"""How often the writer brings the shared log's calls in flight up to date."""
_create_lock = threading.Lock()


@frozen
class LogEntry:
    """One logged call.

    ``time``: when it started (seconds since the epoch); ``duration`` in seconds;
    ``outcome``: ``"ok"`` or the error kind (``execution``, ``timeout``, ``denied``,
    ``approval_required``, ...); ``error``: the error text the model got; ``arguments``: each
    value redacted to its type and size (``"<str, 5 chars>"``) unless the log keeps them
    ``"full"``; ``reason``: the model's ``toolcall_reason`` (think plugin); ``approval``: the
    approval asked for a pending call (``id``, ``rule``, ``reason``, ``message``); ``spool``:
    the spool handle of an output written to a file (spool plugin); ``format``: the provider
    format the call came in; ``seq``: its number in this log (in the SQLite file: the row id);
    ``result``: the content the model got back, as parts (``{"type": "text", "text": ...}``,
    ``{"type": "image", "media_type": ..., "bytes": ...}``, the same with ``"type": "audio"``,
    ``{"type": "resource", "uri", "media_type", "bytes"}`` with its ``text`` for a text
    resource, ``{"type": "resource_link", "uri", "mime_type"}``), each value redacted to its
    shape like the arguments unless the log keeps them ``"full"`` (then texts, cut at
    ``max_field_chars``, and images and audio as ``data:`` URLs up to ``MAX_IMAGE_CHARS``);
    ``batch``: the id the kernel gave the calls of one ``execute_tool_calls``; ``trace_id`` /
    ``span_id``: the call's span, when a tracing plugin made one (hex).
    """

    seq: int
    time: float
    tool: str
    call_id: str | None
    arguments: dict[str, Any]
    outcome: str
    duration: float
    reason: str | None = None
    error: str | None = None
    approval: dict[str, Any] | None = None
    spool: str | None = None
    format: str = "registry"
    result: list[dict[str, Any]] | None = None
    batch: str | None = None
    trace_id: str | None = None
    span_id: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.outcome == "ok"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {"seq": self.seq, "time": self.time, "tool": self.tool, "call_id": self.call_id,
                "arguments": self.arguments, "outcome": self.outcome,
                "duration": self.duration, "reason": self.reason, "error": self.error,
                "approval": self.approval, "spool": self.spool, "format": self.format,
                "result": self.result, "batch": self.batch, "trace_id": self.trace_id,
                "span_id": self.span_id}


redact = value_shape
"""An argument value as its type and size only: ``"<str, 5 chars>"``, ``"<int>"``,
``"<list, 3 items>"``, ``"<object, 2 keys>"`` (the kernel's ``value_shape``)."""


def _full(value: Any, max_chars: int) -> Any:
    """The value itself when its JSON is short, else its JSON cut to ``max_chars``."""
    text = json.dumps(value, default=repr, ensure_ascii=False)
    if len(text) <= max_chars:
        return json.loads(text)
    return f"{text[:max_chars]}… ({len(text)} chars)"


def shape_arguments(arguments: Any, mode: ArgumentMode, max_chars: int) -> dict[str, Any]:
    """The arguments as the log shows them (``mode``: ``redacted`` or ``full``)."""
    if not isinstance(arguments, Mapping):
        return {} if arguments is None else {"(arguments)": redact(arguments)}
    if mode == "full":
        return {str(k): _full(v, max_chars) for k, v in arguments.items()}
    return {str(k): redact(v) for k, v in arguments.items()}


def _approval(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    data: dict[str, Any] = value.to_dict()
    data.pop("arguments", None)  # the entry's own arguments (redacted) say what was asked
    return data


def _spool(value: Any) -> str | None:
    if isinstance(value, Mapping):
        handle = value.get("handle") or value.get("path")
        return None if handle is None else str(handle)
    return None if value is None else str(value)


def _error(value: Any, mode: ArgumentMode) -> str | None:
    """The error text of a failed call's result; in ``redacted`` mode without the argument
    values the kernel's message quotes (an ``invalid_arguments`` error names each bad value)."""
    if value is None or isinstance(value, str):
        return value
    text: str = value.text if mode == "full" else value.loggable_text
    return text


def _bounded_arguments(shown: dict[str, Any], limit: int) -> dict[str, Any]:
    """The shown arguments, or their shape when their JSON is longer than ``limit`` (many
    keys): a stored field never grows without bound."""
    if len(json.dumps(shown, ensure_ascii=False, default=repr)) <= limit:
        return shown
    return {"(arguments)": f"<object, {len(shown)} keys, over {limit} chars>"}


def _bounded_approval(data: dict[str, Any] | None, limit: int) -> dict[str, Any] | None:
    if data is None:
        return None
    out = {k: _cut(v, limit // 4) if isinstance(v, str) else v for k, v in data.items()}
    if len(json.dumps(out, default=repr)) > limit:
        out = {k: out[k] for k in ("id", "rule") if k in out}
    return out


@frozen
class _Shaper:
    """How a record becomes what the log shows and stores: arguments shaped (``redacted`` or
    ``full``), the error without the values the kernel quoted unless ``full``, every field
    bounded (``max_field_chars``), so that no row grows without bound."""

    mode: ArgumentMode
    max_value_chars: int
    max_field_chars: int

    def entry(self, record: _Record) -> LogEntry:
        seq, started, tool, call_id, arguments, outcome, duration, reason, error, approval, \
            spool, fmt, content, batch, trace_id, span_id = record
        limit = self.max_field_chars
        shown = shape_arguments(arguments, self.mode, self.max_value_chars)
        return LogEntry(seq=seq, time=started, tool=_cut(tool, limit) or "",
                        call_id=_cut(call_id, limit),
                        arguments=_bounded_arguments(shown, limit), outcome=outcome[:limit],
                        duration=duration, reason=_cut(reason, limit),
                        error=_cut(_error(error, self.mode), limit),
                        approval=_bounded_approval(_approval(approval), limit),
                        spool=_cut(_spool(spool), limit), format=fmt[:limit],
                        result=shape_result(content, self.mode, limit),
                        batch=_cut(batch, limit), trace_id=_cut(trace_id, limit),
                        span_id=_cut(span_id, limit))


class _Observer:
    """The registry's call observer: one record per finished call, nothing else. It is told
    of ends only (``call_started`` is ``None``): a call's start time is its end less its
    duration, and the kernel has no start to run for it."""

    __slots__ = ("_append", "_live", "_put", "_seq", "running")

    call_started: Callable[[ToolCall], Any] | None = None

    def __init__(self, execution_log: ExecutionLog) -> None:
        self._append = execution_log._buffer.append
        self._seq = execution_log._seq
        writer = execution_log._writer
        self._put = writer.put if writer is not None else None
        self._live = writer.live.calls.__setitem__ if writer is not None else None
        self.running: RunningCalls | None = None

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        duration = result.duration
        error = result.error_kind
        record = (next(self._seq), time.time() - duration if token is None else token,
                  call.name, call.id, call.arguments,
                  error or ("error" if result.is_error else "ok"), duration, call.reason,
                  result if result.is_error else None, result.approval,
                  result.metadata.get("spool") if result.metadata else None, call.format,
                  result.content, call.batch_id, call.trace_id, call.span_id)
        self._append(record)
        if self._put is not None:
            self._put(record)


class _Watching(_Observer):
    """The observer while the calls in flight are shown: to an open inspector of this
    process (``running``), or to any process through the shared log (each call is also handed
    to the writer thread, which writes the calls that run a while to the log's ``running``
    table). The log turns its observer into one (``__class__``) and has the call plans, which
    hold that very object, compiled again (the kernel reads whether an observer has a start
    when it compiles a plan); a call with neither pays nothing for it."""

    __slots__ = ()

    def call_started(self, call: ToolCall) -> Running:
        running = start_running(call)
        if self.running is not None:
            self.running.add(running)
        if self._live is not None:
            self._live(running.key, running)
        return running

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        if token is not None:  # None: a call of a plan compiled before the switch
            token.ended = True
            if self.running is not None:
                self.running.finish(token)
            token = token.started
        super().call_finished(call, result, token)


class ExecutionLog:
    """The calls of one registry, newest last: ``execution_log(registry)``.

    It records the calls that end from its making on (``since``: when, epoch seconds); the
    plugin makes a registry's log on its first use, or with the registry when it records
    from the start (see ``InspectorSettings.log``). Memory holds the last ``size`` calls;
    with ``db`` (an SQLite file, or a store URL: a
    PostgreSQL database every worker and host writes to) they are also written there (by a
    background thread; ``flush()`` waits for it), where ``query_log(db)`` and
    ``toolregistry log`` read them from any process.
    """

    def __init__(self, size: int = 10_000, *, db: str | Path | StoreURL | None = None,
                 arguments: ArgumentMode = "redacted", max_value_chars: int = 2000,
                 retention_seconds: float = 7 * 86_400.0, max_rows: int = 1_000_000,
                 registry_name: str = "registry", max_field_chars: int = 8000) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"the execution log's size must be a positive integer, got {size!r}")
        if arguments not in ("redacted", "full"):
            raise ValueError(f"arguments must be 'redacted' or 'full', got {arguments!r}")
        if not isinstance(max_field_chars, int) or max_field_chars < 64:
            raise ValueError("max_field_chars must be an integer of at least 64, got "
                             f"{max_field_chars!r}")
        self.size = size
        self.since = time.time()
        self.arguments: ArgumentMode = arguments
        self.max_value_chars = max_value_chars
        self.max_field_chars = max_field_chars
        self._buffer: deque[_Record] = deque(maxlen=size)
        self._seq = itertools.count(1)
        self._shaper = _Shaper(arguments, max_value_chars, max_field_chars)
        self._writer = (_Writer(sink(db), self._shaper, retention_seconds, max_rows,
                                registry_name) if db is not None else None)
        self.observer = _Observer(self)
        # Has the registry's call plans compiled again (they hold the observer).
        self._replan: Callable[[], None] | None = None
        if self._writer is not None:  # other processes see the calls in flight
            self.observer.__class__ = _Watching

    @property
    def db(self) -> Path | None:
        """The SQLite file the log is written to, if any."""
        sink = self._writer.sink if self._writer is not None else None
        return sink.path if isinstance(sink, FileSink) else None

    @property
    def store(self) -> StoreURL | None:
        """The store the log is written to (a SQLite file or a PostgreSQL database), if any."""
        return self._writer.sink.url if self._writer is not None else None

    def __len__(self) -> int:
        return len(self._buffer)

    def cancel_calls_with(self, cancel: Callable[[str, str], bool]) -> None:
        """Let inspectors of other processes cancel this log's calls in flight (through the
        shared log): ``cancel(call_id, reason)``, the registry's ``cancel_call``."""
        if self._writer is not None:
            self._writer.live.cancel = cancel

    def watch_running(self) -> RunningCalls:
        """The calls in flight, tracked from now on (an inspector calls it when it opens)."""
        with _create_lock:
            if self.observer.running is None:
                from ._running import RunningCalls

                self.observer.running = RunningCalls()
                if type(self.observer) is not _Watching:
                    self.observer.__class__ = _Watching
                    if self._replan is not None:
                        self._replan()
            return self.observer.running

    def entry(self, record: _Record) -> LogEntry:
        """A record as the log shows and stores it (see :class:`_Shaper`)."""
        return self._shaper.entry(record)

    def entries(self, *, tool: str | None = None, outcome: str | None = None,
                since: float | None = None, call_id: str | None = None,
                after: int | None = None, limit: int | None = None,
                until: float | None = None, before: int | None = None,
                batch: str | None = None, oldest: bool = False) -> list[LogEntry]:
        """The logged calls that match, oldest first (the last ``limit`` of them; with
        ``oldest``, the first: what follows ``after``, in order).

        ``tool``: a name or glob (``"srv-*"``); ``outcome``: ``"ok"``, an error kind, or
        ``"error"`` for every call that did not succeed; ``since`` / ``until``: calls that
        started at or after / before these times (epoch seconds); ``after`` / ``before``:
        only entries with a larger / smaller ``seq`` (to follow the log, to page back);
        ``batch``: the calls of one batch.
        """
        where = _Filter(tool, outcome, since, call_id, after, until, before, batch)
        matched = [r for r in self._buffer.copy() if where.match(r)]
        if limit is not None:
            matched = matched[:max(limit, 0)] if oldest else \
                matched[-limit:] if limit > 0 else []
        return [self.entry(r) for r in matched]

    def last(self) -> LogEntry | None:
        """The newest entry (``None`` when empty)."""
        try:
            return self.entry(self._buffer[-1])
        except IndexError:
            return None

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, errors, and the median and largest duration (seconds)."""
        by_tool: dict[str, list[_Record]] = {}
        for r in self._buffer.copy():
            by_tool.setdefault(r[2], []).append(r)
        out = {}
        for name, records in sorted(by_tool.items()):
            durations = sorted(r[6] for r in records)
            out[name] = {"calls": len(records),
                         "errors": sum(r[5] != "ok" for r in records),
                         "median": durations[len(durations) // 2], "max": durations[-1]}
        return out

    def clear(self) -> None:
        """Forget the calls in memory (the SQLite file keeps its rows)."""
        self._buffer.clear()

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every call logged so far is in the SQLite file (no-op without one)."""
        if self._writer is not None:
            self._writer.flush(timeout)

    def close(self) -> None:
        """Write what is queued and stop the writer thread (the registry's ``close()`` does)."""
        if self._writer is not None:
            self._writer.stop()


class _Writer:
    """Batches records from the observer into the log's file or database on a thread of its
    own, and applies the retention (age, then row count) every few seconds."""

    def __init__(self, sink: FileSink | ServerSink, shaper: _Shaper,
                 retention_seconds: float, max_rows: int, registry_name: str) -> None:
        self.sink = sink
        self._shaper = shaper
        self._queue: SimpleQueue[Any] = SimpleQueue()
        self.put = self._queue.put
        self.retention = retention_seconds
        self.max_rows = max_rows
        self.registry_name = registry_name
        self._stopped = False
        self.live = LiveRows(sink, registry_name)
        self._thread = threading.Thread(target=self._run, name="toolregistry-inspector-log",
                                        daemon=True)
        self._thread.start()

    def _rows(self, records: list[_Record]) -> Iterator[tuple[Any, ...]]:
        for r in records:
            e = self._shaper.entry(r)
            yield (e.time, self.registry_name, e.tool, e.call_id,
                   json.dumps(e.arguments, ensure_ascii=False), e.outcome, e.duration,
                   e.reason, e.error,
                   None if e.approval is None else json.dumps(e.approval, default=repr),
                   e.spool, e.format,
                   None if e.result is None else json.dumps(e.result, ensure_ascii=False),
                   e.batch, e.trace_id, e.span_id)

    def _write(self, records: list[_Record]) -> None:
        try:
            self.sink.write(self._rows(records))
        except Exception as exc:
            events.warning("inspector.log_write_failed", store=str(self.sink.url),
                           calls=len(records), error=f"{type(exc).__name__}: {exc}")

    def _run(self) -> None:
        last_retention = 0.0
        while True:
            try:
                item = self._queue.get(timeout=SYNC_SECONDS)
            except Empty:
                item = False  # a turn with nothing new: the calls in flight are synced
            batch: list[_Record] = []
            waiters: list[threading.Event] = []
            stop = False
            while True:
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                elif item is not False:
                    batch.append(item)
                if len(batch) >= 2000:
                    break
                try:
                    item = self._queue.get_nowait()
                except Empty:
                    break
            if batch:
                self._write(batch)
            self._quietly("inspector.log_running_failed", self.live.sync, time.time())
            now = time.monotonic()
            if now - last_retention > 5.0 or stop:
                self._quietly("inspector.log_retention_failed", self.sink.retain,
                              time.time() - self.retention, self.max_rows)
                self._quietly("inspector.log_running_failed", self.live.expire, time.time())
                last_retention = now
            for waiter in waiters:
                waiter.set()
            if stop:
                self._quietly("inspector.log_running_failed", self.live.clear)
                self.sink.close()
                return

    def _quietly(self, event: str, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except Exception as exc:
            events.warning(event, store=str(self.sink.url),
                           error=f"{type(exc).__name__}: {exc}")

    def flush(self, timeout: float) -> None:
        if self._stopped:
            return
        done = threading.Event()
        self.put(done)
        if not done.wait(timeout):
            raise TimeoutError(f"the execution log was not written to {self.sink.url} "
                               f"within {timeout} s")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._queue.put(None)
        self._thread.join(30.0)


def log_store(registry: ToolRegistry, settings: InspectorSettings) -> StoreURL | None:
    """Where ``registry``'s log is written besides memory: ``log-db`` (a file, relative to
    the configuration file, or a store URL), else the registry's ``store``, else nowhere."""
    return registry.store_url(settings.log_db)


def get_log(registry: ToolRegistry) -> ExecutionLog | None:
    """The registry's execution log, made on first use from its configuration (``None`` when
    ``log = false``): a use, from which on it records every call."""
    state = registry.plugin_state(PLUGIN_NAME)
    if _STATE_KEY not in state and _made_log(registry, state) is not None:
        refresh_call_plans(registry)  # the calls from now on are logged (plans hold the observer)
    found: ExecutionLog | None = state[_STATE_KEY]
    return found


def recording_log(registry: ToolRegistry) -> ExecutionLog | None:
    """The registry's execution log if it records (what the ``call_observer`` hook gives the
    kernel): once used, or from the start with ``log = true`` or when it is also written to
    a file or the store (other processes read it); else ``None``, and nothing is made."""
    state = registry.plugin_state(PLUGIN_NAME)
    if _STATE_KEY not in state:
        settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
        if settings.log == "on-use" and log_store(registry, settings) is None:
            return None  # not used yet, and nothing outside this process reads it
        _made_log(registry, state, settings)
    found: ExecutionLog | None = state[_STATE_KEY]
    return found


def _made_log(registry: ToolRegistry, state: dict[str, Any],
              settings: InspectorSettings | None = None) -> ExecutionLog | None:
    """The registry's log, made from its configuration (``settings`` when read already)
    unless another thread made it."""
    with _create_lock:
        if _STATE_KEY not in state:
            if settings is None:
                settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
            made = None
            if settings.log:
                made = ExecutionLog(settings.log_size, db=log_store(registry, settings),
                                    arguments=settings.arguments,
                                    max_value_chars=settings.max_value_chars,
                                    max_field_chars=settings.max_field_chars,
                                    retention_seconds=settings.log_retention_seconds,
                                    max_rows=settings.log_max_rows,
                                    registry_name=registry.name)
                made.cancel_calls_with(registry.cancel_call)
                made._replan = functools.partial(refresh_call_plans, registry)
                registry.add_closer(made.close)
            state[_STATE_KEY] = made
    result: ExecutionLog | None = state[_STATE_KEY]
    return result


def format_entry(entry: LogEntry) -> str:
    """One line for a terminal: time, outcome, duration, tool, call id, arguments, and the
    reason or error."""
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.time))
    millis = int(math.modf(entry.time)[0] * 1000)
    args = json.dumps(entry.arguments, ensure_ascii=False)
    line = (f"{stamp}.{millis:03d} {entry.outcome:<17} {entry.duration * 1000:9.1f} ms "
            f"{entry.tool} [{entry.call_id or '-'}] {args}")
    if entry.reason:
        line += f"  reason: {entry.reason}"
    if entry.error and not entry.ok:
        line += "  error: " + entry.error.splitlines()[0][:200]
    if entry.approval and entry.approval.get("id"):
        line += f"  approval: {entry.approval['id']}"
    if entry.spool:
        line += f"  spool: {entry.spool}"
    return line

