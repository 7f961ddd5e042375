"""Tasks at spec revision 2026-07-28: the ``io.modelcontextprotocol/tasks`` extension.

The client declares the extension through the SDK's ``ClientExtension``; a server that speaks
it answers a ``tools/call`` it decides to run as a task with a ``CreateTaskResult``
(``resultType: "task"``), which the SDK's ``Client.call_tool`` hands to this module's claim.
The claim drives the task to its end within the call's deadline: ``tasks/get`` at the server's
``pollIntervalMs`` until the task is terminal (a completed task's result is inlined there), a
task waiting for input (``input_required``) has its ``inputRequests`` answered by the client's
elicitation / sampling handlers and sent back with ``tasks/update``; at the deadline, or when
the caller gives up, ``tasks/cancel`` is sent. The caller sees an ordinary tool result.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Literal

import attrs
import mcp_types as types
from pydantic import ConfigDict, Field

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log

if TYPE_CHECKING:
    from mcp.client.extension import ClaimContext, ClientExtension

__all__ = ["TASKS", "CallScope", "extension", "offered", "scope"]

TASKS = "io.modelcontextprotocol/tasks"
_TERMINAL = ("completed", "failed", "cancelled")
_MIN_POLL = 0.05  # seconds: a server's pollIntervalMs below this is not honoured


@attrs.frozen
class CallScope:
    """What the claim needs to know about the call it finishes."""

    server: str
    tool: str
    deadline: float | None  # anyio clock
    timeout: float | None


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


def _left(call: CallScope | None) -> float | None:
    import anyio

    if call is None or call.deadline is None:
        return None
    return max(call.deadline - anyio.current_time(), 0.001)


async def _finish(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    """Drive the task ``created`` to its end and return its result."""
    import anyio

    call = scope.get()
    session = ctx.session
    detail: dict[str, Any] = created.model_dump(by_alias=True, mode="json")
    try:
        with anyio.fail_after(_left(call)):
            while True:
                status = detail.get("status")
                if status in _TERMINAL:
                    return _outcome(detail)
                if status == "input_required" and detail.get("inputRequests"):
                    answers = await _answer(session, detail["inputRequests"])
                    await _send(session, "tasks/update", created.task_id, _left(call), answers)
                else:
                    pause = (detail.get("pollIntervalMs") or created.poll_interval_ms or 1000)
                    await anyio.sleep(max(pause / 1000, _MIN_POLL))
                detail = await _send(session, "tasks/get", created.task_id, _left(call))
    except TimeoutError:
        await _cancel(session, created.task_id, call)
        timeout = call.timeout if call is not None else None
        log.warning("mcp.call_timeout", server=call.server if call else "?",
                    tool=ctx.tool_name, timeout=timeout, task=created.task_id)
        raise ToolCallError(
            f"MCP server {call.server if call else '?'}: tool {ctx.tool_name!r} (run as a "
            f"task) did not finish within {timeout or 0:g}s; the task was cancelled "
            "(tasks/cancel sent)", kind="timeout") from None
    except anyio.get_cancelled_exc_class():
        await _cancel(session, created.task_id, call)
        raise


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


async def _cancel(session: Any, task_id: str, call: CallScope | None) -> None:
    import anyio

    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        try:
            await _send(session, "tasks/cancel", task_id, 5)
            log.info("mcp.task_cancelled", server=call.server if call else "?",
                     tool=call.tool if call else "?", task=task_id)
        except Exception as exc:
            log.warning("mcp.task_cancel_failed", server=call.server if call else "?",
                        task=task_id, error=f"{type(exc).__name__}: {exc}")
