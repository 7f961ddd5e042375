"""What a served tool says while it runs: its progress (``ToolContext.report_progress``) and
its log records (the standard ``logging`` module), sent to the MCP client that called it as
``notifications/progress`` and ``notifications/message``, on that call's stream, in order,
before the call's result.

A tool may report from any thread; :class:`CallChannel` hands each report to the event loop
and one task sends them. A log record belongs to the call whose context it was emitted in
(the kernel carries the caller's ``contextvars`` into the worker thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from toolregistry.plugin import log

__all__ = ["LEVELS", "CallChannel", "forwarding_logs", "level_number", "mcp_level",
           "want_level"]

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_NUMBERS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": 25,
            "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
            "alert": 60, "emergency": 70}
MAX_LOG_CHARS = 8000  # one forwarded record's text, at most
# The serving machinery's own records (the kernel's call events, the SDK's transport) are not
# the tool's: they stay in the server's log.
_MACHINERY = ("toolregistry", "mcp", "mcp_types", "uvicorn", "sse_starlette")

_channel: ContextVar[CallChannel | None] = ContextVar("toolregistry_mcp_call", default=None)


def level_number(level: str) -> int:
    """The ``logging`` level number of an MCP level (``notice`` is 25)."""
    return _NUMBERS[level]


def mcp_level(levelno: int) -> str:
    """The MCP level of a ``logging`` record's level."""
    if levelno < logging.INFO:
        return "debug"
    if levelno < 25:
        return "info"
    if levelno < logging.WARNING:
        return "notice"
    if levelno < logging.ERROR:
        return "warning"
    if levelno < logging.CRITICAL:
        return "error"
    return "critical"


class CallChannel:
    """One served call's notifications, sent in the order the tool made them.

    ``progress`` says whether the client asked for progress (sent a progress token);
    ``min_level`` is the lowest ``logging`` level forwarded (``None``: no logs);
    ``allowed`` the MCP levels this request may receive at all.
    """

    def __init__(self, ctx: Any, *, min_level: int | None,
                 allowed: frozenset[str] | None = None) -> None:
        self._ctx = ctx
        self._min_level = min_level
        self._allowed = allowed
        self._loop = asyncio.get_running_loop()
        self._items: deque[tuple[Any, ...]] = deque()
        self._wake = asyncio.Event()
        self._closed = False
        # Started by the first notification: most calls send none and cost no task.
        self._task: asyncio.Task[None] | None = None

    # -- from any thread -------------------------------------------------------------------
    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """A ``ToolContext.report_progress`` reporter."""
        self._post(("progress", float(progress), None if total is None else float(total),
                    None if message is None else str(message)))

    def record(self, record: logging.LogRecord) -> None:
        """A log record emitted during the call."""
        if self._min_level is None or record.levelno < self._min_level:
            return
        name = record.name
        if name.split(".", 1)[0] in _MACHINERY:
            return
        level = mcp_level(record.levelno)
        if self._allowed is not None and level not in self._allowed:
            return
        try:
            text = record.getMessage()
        except Exception as exc:  # a record whose arguments do not fit its format
            text = f"{record.msg!r} (unformattable: {type(exc).__name__})"
        if record.exc_info and record.exc_info[0] is not None:
            text += f" ({record.exc_info[0].__name__}: {record.exc_info[1]})"
        self._post(("log", level, record.name, text[:MAX_LOG_CHARS]))

    def _post(self, item: tuple[Any, ...]) -> None:
        if self._closed:
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:  # an async tool, on the loop itself
            self._push(item)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
            self._loop.call_soon_threadsafe(self._push, item)

    # -- on the loop -----------------------------------------------------------------------
    def _push(self, item: tuple[Any, ...]) -> None:
        if self._closed:
            return
        items = self._items
        if item[0] == "progress" and items and items[-1][0] == "progress":
            items[-1] = item  # the client only needs the latest of a burst
        else:
            items.append(item)
        self._wake.set()
        if self._task is None:
            self._task = self._loop.create_task(self._pump())

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._items:
                await self._send(self._items.popleft())
            if self._closed:
                return

    async def _send(self, item: tuple[Any, ...]) -> None:
        import mcp_types as types

        session = self._ctx.session
        try:
            if item[0] == "progress":
                await session.report_progress(item[1], item[2], item[3])
            else:
                await session.send_notification(
                    types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
                        level=item[1], logger=item[2], data=item[3])),
                    related_request_id=self._ctx.request_id)
        except Exception as exc:  # the client went away; the call goes on
            log.debug("mcp.notify_failed", error=f"{type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        """Send what the tool reported before it returned, then stop."""
        self._closed = True
        self._wake.set()
        if self._task is None:
            return
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._task)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Route this context's log records to the channel."""
        token = _channel.set(self)
        try:
            yield
        finally:
            _channel.reset(token)


class _Forward(logging.Handler):
    """Hands a log record to the served call it was emitted in (if any)."""

    def emit(self, record: logging.LogRecord) -> None:
        channel = _channel.get()
        if channel is not None:
            channel.record(record)


_handler = _Forward()
_lock = threading.Lock()
_state: dict[str, Any] = {"users": 0}


def want_level(levelno: int) -> None:
    """A client asked for records down to ``levelno`` (``logging/setLevel``): while serving,
    lower the root logger's level so that such records exist at all (restored when serving
    ends)."""
    root = logging.getLogger()
    with _lock:
        if _state["users"] > 0 and root.getEffectiveLevel() > levelno:
            _lower_root(root, levelno)


def _lower_root(root: logging.Logger, level: int) -> None:
    """Lower the root logger's level for the tools' records, keeping the serving machinery's
    loggers where they were (their records are not forwarded; creating them would only cost
    time on every request). Called with ``_lock`` held."""
    kept = _state.setdefault("machinery", {})
    for name in _MACHINERY:
        logger = logging.getLogger(name)
        if name not in kept and logger.level == logging.NOTSET:
            kept[name] = logging.NOTSET
            logger.setLevel(root.getEffectiveLevel())
    root.setLevel(level)


@contextlib.contextmanager
def forwarding_logs(tool_level: int | None) -> Iterator[None]:
    """While serving: the forwarding handler on the root logger, and the root logger's level
    lowered to ``tool_level`` (when given) so that tools' records below WARNING exist at all.
    Warnings outside calls still reach stderr as they did before."""
    root = logging.getLogger()
    with _lock:
        if _state["users"] == 0:
            _state["level"] = root.level
            _state["fallback"] = None
            if not root.handlers:
                # Python's last-resort handler only speaks when the root has no handler.
                fallback = logging.StreamHandler()
                fallback.setLevel(logging.WARNING)
                root.addHandler(fallback)
                _state["fallback"] = fallback
            root.addHandler(_handler)
        _state["users"] += 1
        if tool_level is not None and root.getEffectiveLevel() > tool_level:
            _lower_root(root, tool_level)
    try:
        yield
    finally:
        with _lock:
            _state["users"] -= 1
            if _state["users"] == 0:
                for name, level in _state.pop("machinery", {}).items():
                    logging.getLogger(name).setLevel(level)
                root.removeHandler(_handler)
                if _state["fallback"] is not None:
                    root.removeHandler(_state["fallback"])
                root.setLevel(_state["level"])
