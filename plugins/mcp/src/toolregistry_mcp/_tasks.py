"""Tools run as tasks: the ``io.modelcontextprotocol/tasks`` extension at 2026-07-28, core
tasks at 2025-11-25.

The client declares the extension through the SDK's ``ClientExtension``; a server that speaks
it answers a ``tools/call`` it decides to run as a task with a ``CreateTaskResult``
(``resultType: "task"``), which the SDK's ``Client.call_tool`` hands to this module's claim.
The claim drives the task to its end within the call's deadline: ``tasks/get`` at the server's
``pollIntervalMs`` until the task is terminal (a completed task's result is inlined there), a
task waiting for input (``input_required``) has its ``inputRequests`` answered by the client's
elicitation / sampling handlers and sent back with ``tasks/update``; at the deadline, or when
the caller gives up, ``tasks/cancel`` is sent. The caller sees an ordinary tool result.

At 2025-11-25 the client asks for the task (:func:`call_as_task`, for a tool whose definition
requires it), polls ``tasks/get`` and fetches the result with ``tasks/result``; the server's
questions come as requests on the session meanwhile.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
import mcp_types as types
from pydantic import ConfigDict, Field

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log

from ._deadline import now
from ._sdk_private import send_unvalidated

if TYPE_CHECKING:
    from mcp.client.extension import ClaimContext, ClientExtension

__all__ = ["TASKS", "CallScope", "call_as_task", "extension", "offered", "scope"]

TASKS = "io.modelcontextprotocol/tasks"
_TERMINAL = ("completed", "failed", "cancelled")
_MIN_POLL = 0.05  # seconds: a server's pollIntervalMs below this is not honoured
_TASK_TTL_MS = 10 * 60 * 1000  # how long a 2025-11-25 server keeps a task's result for us


@attrs.frozen
class CallScope:
    """What the claim needs to know about the call it finishes."""

    server: str
    tool: str
    deadline: float | None  # anyio clock
    timeout: float | None

    @classmethod
    def start(cls, server: str, tool: str, timeout: float | None) -> CallScope:
        """A call of ``tool`` starting now, with ``timeout`` seconds."""
        deadline = None if timeout is None else now() + timeout
        return cls(server, tool, deadline, timeout)

    def left(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        if self.deadline is None:
            return None
        return max(self.deadline - now(), 0.001)

    def timed_out(self, task_id: str) -> ToolCallError:
        log.warning("mcp.call_timeout", server=self.server, tool=self.tool,
                    timeout=self.timeout, task=task_id)
        return ToolCallError(
            f"MCP server {self.server}: tool {self.tool!r} (run as a task) did not finish "
            f"within {self.timeout or 0:g}s; the task was cancelled (tasks/cancel sent)",
            kind="timeout")


scope: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "toolregistry_mcp_task_call", default=None)
"""Set by the client around each ``tools/call``: the claim runs in the same task."""


class CreatedTask(types.Result):
    """A ``CreateTaskResult`` of the extension: the task's envelope, flat."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    status_message: str | None = None


class _TaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class _TaskRequest(types.Request[_TaskParams, str]):
    name_param = "taskId"  # tasks/* carry Mcp-Name: <taskId> (SEP-2663)


def offered(capabilities: types.ServerCapabilities | None) -> bool:
    """The server advertises the extension."""
    extensions = getattr(capabilities, "extensions", None) if capabilities else None
    return bool(extensions) and TASKS in extensions  # type: ignore[operator]


def extension() -> ClientExtension:
    """The extension to give the SDK's ``Client``: its capability ad and its claim."""
    from mcp.client.extension import ClientExtension, ResultClaim

    class Tasks(ClientExtension):
        identifier = TASKS

        def claims(self) -> list[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=CreatedTask, resolve=_finish)]

    return Tasks()


async def _send(session: Any, method: str, task_id: str, timeout: float | None,
                input_responses: dict[str, Any] | None = None) -> dict[str, Any]:
    from pydantic import TypeAdapter

    request = _TaskRequest(method=method, params=_TaskParams(
        task_id=task_id, input_responses=input_responses))
    answer: dict[str, Any] = await session.send_request(
        request, TypeAdapter(dict[str, Any]), request_read_timeout_seconds=timeout)
    return answer


async def _finish(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    """Drive the task ``created`` to its end and return its result."""
    import anyio

    call = scope.get() or CallScope("?", ctx.tool_name, None, None)
    session = ctx.session
    task_id = created.task_id
    detail: dict[str, Any] = created.model_dump(by_alias=True, mode="json")

    async def cancel() -> None:
        await _send(session, "tasks/cancel", task_id, 5)

    from ._deadline import driven_to_its_end

    try:
        with driven_to_its_end(), anyio.fail_after(call.left()):
            while True:
                status = detail.get("status")
                if status in _TERMINAL:
                    return _outcome(detail)
                if status == "input_required" and detail.get("inputRequests"):
                    answers = await _answer(session, detail["inputRequests"])
                    await _send(session, "tasks/update", task_id, call.left(), answers)
                else:
                    pause = (detail.get("pollIntervalMs") or created.poll_interval_ms or 1000)
                    await anyio.sleep(max(pause / 1000, _MIN_POLL))
                detail = await _send(session, "tasks/get", task_id, call.left())
    except TimeoutError:
        await _cancel(cancel, task_id, call)
        raise call.timed_out(task_id) from None
    except anyio.get_cancelled_exc_class():
        await _cancel(cancel, task_id, call)
        raise


async def call_as_task(session: Any, name: str, arguments: dict[str, Any] | None,
                       meta: Mapping[str, Any] | None) -> types.CallToolResult:
    """A 2025-11-25 task-augmented call: created, polled (at the server's ``pollInterval``)
    until it ends, its result fetched; cancelled on the server when the deadline passes
    first or the caller gives up."""
    import anyio

    call = scope.get() or CallScope("?", name, None, None)
    params: dict[str, Any] = {"name": name, "arguments": arguments or {},
                              "task": {"ttl": _TASK_TTL_MS}}
    if meta:
        params["_meta"] = dict(meta)
    created = types.CreateTaskResult.model_validate(
        await send_unvalidated(session, "tools/call", params, call.left()), by_name=False)
    task: Any = created.task
    ask = {"taskId": task.task_id}

    async def cancel() -> None:
        await send_unvalidated(session, "tasks/cancel", ask, 5)

    try:
        with anyio.fail_after(call.left()):
            # input_required: the server's questions come as requests on the session while
            # the result is awaited; the handlers answer them.
            while task.status == "working":
                await anyio.sleep(max((task.poll_interval or 1000) / 1000, _MIN_POLL))
                task = types.GetTaskResult.model_validate(
                    await send_unvalidated(session, "tasks/get", ask, call.left()),
                    by_name=False)
            if task.status in ("failed", "cancelled"):
                return types.CallToolResult(is_error=True, content=[types.TextContent(
                    type="text", text=f"the task {task.status}"
                    + (f": {task.status_message}" if task.status_message else ""))])
            raw = await send_unvalidated(session, "tasks/result", ask, call.left())
            return types.CallToolResult.model_validate(raw, by_name=False)
    except Exception as exc:
        if not (isinstance(exc, TimeoutError) or _is_timeout(exc)):
            raise
        await _cancel(cancel, task.task_id, call)
        raise call.timed_out(task.task_id) from None
    except anyio.get_cancelled_exc_class():
        await _cancel(cancel, task.task_id, call)
        raise


def _is_timeout(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp_types import REQUEST_TIMEOUT

    from ._session import _first_error

    exc = _first_error(exc)
    return isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT


def _outcome(detail: dict[str, Any]) -> types.CallToolResult:
    """A terminal task as the tool result the caller would have had without a task."""
    status = detail.get("status")
    if status == "completed" and isinstance(detail.get("result"), dict):
        return types.CallToolResult.model_validate(detail["result"], by_name=False)
    error: dict[str, Any] = detail["error"] if isinstance(detail.get("error"), dict) else {}
    why = error.get("message") or detail.get("statusMessage") or ""
    code = f" (JSON-RPC error {error['code']})" if "code" in error else ""
    text = f"the task {status}" + (f": {why}{code}" if why else code)
    return types.CallToolResult(is_error=True, content=[types.TextContent(type="text",
                                                                           text=text)])


async def _answer(session: Any, asks: dict[str, Any]) -> dict[str, Any]:
    """Each of a waiting task's input requests, answered by the client's handlers."""
    from mcp.client.session import ClientRequestContext
    from mcp.shared.exceptions import MCPError
    from pydantic import TypeAdapter

    parse: TypeAdapter[Any] = TypeAdapter(types.InputRequest)
    answers: dict[str, Any] = {}
    for key, raw in asks.items():
        request = parse.validate_python(raw, by_name=False)
        meta = request.params.meta if getattr(request, "params", None) else None
        answer = await session.dispatch_input_request(
            ClientRequestContext(session=session, request_id=key, meta=meta), request)
        if isinstance(answer, types.ErrorData):
            raise MCPError(answer.code, answer.message, answer.data)
        answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    return answers


async def _cancel(cancel: Callable[[], Awaitable[None]], task_id: str, call: CallScope
                  ) -> None:
    """``cancel()`` the task on the server, whatever is cancelling this call, within 5 s."""
    import anyio

    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        try:
            await cancel()
            log.info("mcp.task_cancelled", server=call.server, tool=call.tool, task=task_id)
        except Exception as exc:
            log.warning("mcp.task_cancel_failed", server=call.server, tool=call.tool,
                        task=task_id, error=f"{type(exc).__name__}: {exc}")
