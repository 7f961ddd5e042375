"""A real MCP server speaking the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``,
SEP-2663) on the SDK's ``MCPServer``, through the SDK's own server extension interface:

    python tasks_server.py [--http PORT]

The server decides which calls become tasks (for a client that declares the extension):
``slow_compute(seconds, label)``, ``failing_job``, ``protocol_error_job``,
``confirm_delete(filename)`` (asks the client to confirm while the task waits, through
``tasks/get``'s ``inputRequests`` and ``tasks/update``) and ``research(topic, seconds)``,
which runs only as a task (a client without the extension gets an error result). ``greet`` is
never a task; ``task_log`` says what happened to every task (its status, and whether
``tasks/cancel`` reached it). ``tasks/get`` inlines the result of a finished task; there is no
``tasks/result``. The suite's own server scenarios for the extension
(``tasks-lifecycle``, ``tasks-wire-fields``, ...) check this server in
``test_tasks.py``, so the client is tested against the wire the suite defines.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

TASKS = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
POLL_MS = 100
TTL_MS = 10 * 60 * 1000


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


def _declared(meta: Any) -> bool:
    """The request's ``_meta`` says its client speaks the tasks extension."""
    caps = (meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY) or {}
    return TASKS in (caps.get("extensions") or {})


class TaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class _Task:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.status = "working"
        self.created = self.updated = _now()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.asks: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, asyncio.Future[Any]] = {}
        self.runner: asyncio.Task[None] | None = None
        self.cancel_requested = False

    def set(self, status: str) -> None:
        self.status, self.updated = status, _now()

    def envelope(self) -> dict[str, Any]:
        return {"taskId": self.id, "status": self.status, "createdAt": self.created,
                "lastUpdatedAt": self.updated, "ttlMs": TTL_MS, "pollIntervalMs": POLL_MS}

    async def ask(self, message: str, schema: dict[str, Any]) -> Any:
        """Park the task in ``input_required`` until the client answers through tasks/update."""
        key = f"ask-{uuid.uuid4().hex[:8]}"
        self.asks[key] = {"method": "elicitation/create",
                          "params": {"mode": "form", "message": message,
                                     "requestedSchema": schema}}
        self.answers[key] = asyncio.get_running_loop().create_future()
        self.set("input_required")
        try:
            return await self.answers[key]
        finally:
            self.asks.pop(key, None)
            if not self.asks:
                self.set("working")


def _text(text: str, error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"resultType": "complete",
                           "content": [{"type": "text", "text": text}]}
    if error:
        out["isError"] = True
    else:  # the tools' declared output: {"result": str}
        out["structuredContent"] = {"result": text}
    return out


class _Protocol(Exception):
    """A job failing at the protocol level (the task ends ``failed`` with an error object)."""


Job = Callable[[_Task, dict[str, Any]], Awaitable[dict[str, Any]]]


async def slow_compute(task: _Task, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("seconds", 0)))
    return _text(f"computed {args.get('label', '')}".strip())


async def failing_job(task: _Task, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0.2)
    return _text("the job failed: disk full", error=True)


async def protocol_error_job(task: _Task, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0.2)
    raise _Protocol("the worker crashed")


async def confirm_delete(task: _Task, args: dict[str, Any]) -> dict[str, Any]:
    name = args.get("filename", "")
    answer = await task.ask(f"Delete {name}?", {
        "type": "object", "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]})
    ok = isinstance(answer, dict) and answer.get("action") == "accept" and \
        (answer.get("content") or {}).get("confirm") is True
    return _text(f"deleted {name}" if ok else f"kept {name}")


async def research(task: _Task, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("seconds", 0.5)))
    return _text(f"Research report: {args.get('topic', '')}")


JOBS: dict[str, Job] = {"slow_compute": slow_compute, "failing_job": failing_job,
                        "protocol_error_job": protocol_error_job,
                        "confirm_delete": confirm_delete, "research": research}
ONLY_AS_TASK = {"research"}


class TasksExtension(Extension):
    identifier = TASKS

    def __init__(self) -> None:
        self.tasks: dict[str, _Task] = {}

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        job = JOBS.get(params.name)
        if job is None:
            return await call_next(ctx)
        if not _declared(ctx.meta):
            if params.name in ONLY_AS_TASK:
                return _text(f"{params.name} runs only as a task: declare the {TASKS} "
                             "extension", error=True)
            return await job(_Task(), dict(params.arguments or {}))
        task = _Task()
        self.tasks[task.id] = task
        task.runner = asyncio.get_running_loop().create_task(
            self._run(task, job, dict(params.arguments or {})))
        return {"resultType": "task", **task.envelope()}

    async def _run(self, task: _Task, job: Job, args: dict[str, Any]) -> None:
        try:
            task.result = await job(task, args)
            task.set("completed")
        except asyncio.CancelledError:
            task.set("cancelled")
        except _Protocol as exc:
            task.error = {"code": -32603, "message": str(exc)}
            task.set("failed")

    def _find(self, ctx: Any, params: TaskParams) -> _Task:
        if not _declared(ctx.meta):
            raise MCPError(MISSING_CAPABILITY, f"{ctx.method} needs the {TASKS} extension",
                           {"requiredCapabilities": {"extensions": {TASKS: {}}}})
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(-32602, f"unknown task {params.task_id!r}")
        return task

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        out: dict[str, Any] = {"resultType": "complete", **task.envelope()}
        if task.status == "completed":
            out["result"] = task.result
        elif task.status == "failed":
            out["error"] = task.error
        elif task.status == "input_required":
            out["inputRequests"] = dict(task.asks)
        return out

    async def update(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        for key, answer in (params.input_responses or {}).items():
            waiting = task.answers.get(key)
            if waiting is not None and not waiting.done():
                waiting.set_result(answer)
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        if task.status in ("working", "input_required") and task.runner is not None:
            task.cancel_requested = True
            task.runner.cancel()
            await asyncio.gather(task.runner, return_exceptions=True)
        return {"resultType": "complete"}

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskParams, self.get),
                MethodBinding("tasks/update", TaskParams, self.update),
                MethodBinding("tasks/cancel", TaskParams, self.cancel)]


def build() -> MCPServer:
    extension = TasksExtension()
    server = MCPServer("tasks-server", version="1.0.0", extensions=[extension])

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone (never a task)."""
        return f"Hello, {name}!"

    @server.tool()
    def slow_compute(seconds: float = 0, label: str = "") -> str:
        """Sleep, then answer (a task when the client speaks the extension)."""
        return "computed"

    @server.tool()
    def failing_job() -> str:
        """Fails as a tool (a task)."""
        return ""

    @server.tool()
    def protocol_error_job() -> str:
        """Fails at the protocol level (a task)."""
        return ""

    @server.tool()
    def confirm_delete(filename: str) -> str:
        """Asks for a confirmation while the task waits."""
        return ""

    @server.tool()
    def research(topic: str, seconds: float = 0.5) -> str:
        """Research a topic (only as a task)."""
        return ""

    @server.tool()
    def task_log() -> str:
        """Every task: its status and whether a tasks/cancel reached it."""
        return json.dumps([{"status": t.status, "cancel_requested": t.cancel_requested}
                           for t in extension.tasks.values()])

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    opts = parser.parse_args()
    server = build()
    if opts.http is None:
        server.run("stdio")
        return
    import uvicorn

    uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1",
                port=opts.http, log_level="warning")


if __name__ == "__main__":
    main()
