"""Code mode on one registry: which tools programs see, the ``run_code`` tool, and a program's
run -- the sandbox on one side, the registry's own call path on the other."""

from __future__ import annotations

import asyncio
import fnmatch
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry import Tool, ToolMetadata
from toolregistry.plugin import log
from toolregistry.tool import Provenance
from toolregistry.types import ApprovalRequest, ToolContext, ToolResult

from ._bridge import CURRENT, Run, call_tool, external, no_os
from ._driver import PausedAgain, continue_paused, drive
from ._errors import blocking, classify
from ._paused import PausedRun
from ._result import CodeError, CodeRun
from ._sandbox import MODULES, Sandbox
from ._settings import PLUGIN_NAME, CodeModeSettings
from ._stubs import ToolFunction, function_for, identifier, stub_module

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

__all__ = ["MODULES", "CodeMode", "View"]

_Decide = Callable[[], Awaitable[Mapping[str, ToolResult]]]
"""Decides a paused run's held calls (their results, by approval id)."""

_SCRIPT = "program.py"
_HOST_GRACE = 0.5
_KEPT_PAUSED = 256
"""Paused programs kept in memory by approval id (the oldest are forgotten first)."""

_KIND_TO_RESULT = {"syntax": "invalid_arguments", "type": "invalid_arguments",
                   "runtime": "execution", "tool": "execution", "limit": "execution",
                   "crash": "execution"}


@frozen
class View:
    """The tools programs see at one registry version: listed ones (in the description),
    deferred ones (through ``call_tool`` only), their stubs and the sandbox's externals."""

    version: int
    listed: tuple[ToolFunction, ...]
    deferred: tuple[ToolFunction, ...]
    by_name: Mapping[str, ToolFunction]
    stubs: str
    externals: Mapping[str, Callable[..., Any]]


class CodeMode:
    """Programmatic tool calling on ``registry``: see ``docs/codemode.md``.

    :meth:`run` runs a program (what ``run_code`` does); :meth:`description` is what the model
    reads; :meth:`stubs` what the type checker reads.
    """

    def __init__(self, registry: ToolRegistry, settings: CodeModeSettings) -> None:
        self.registry = registry
        self.settings = settings
        self.sandbox = Sandbox(settings)
        self._view: View | None = None
        self._lock = threading.Lock()
        self._paused: OrderedDict[str, PausedRun] = OrderedDict()

    # -- what programs see ----------------------------------------------------------------
    def exposed(self, tool: Tool) -> bool:
        """Whether programs may call ``tool`` (the settings' globs, namespaces and tags)."""
        s = self.settings
        name = tool.name
        if name == s.tool_name:
            return False
        if not any(fnmatch.fnmatchcase(name, g) for g in s.include):
            return False
        if any(fnmatch.fnmatchcase(name, g) for g in s.exclude):
            return False
        if s.namespaces is not None and tool.namespace not in s.namespaces:
            return False
        if s.tags is not None:
            tags = {t.value for t in tool.metadata.tags} | set(tool.metadata.custom_tags)
            if not tags & set(s.tags):
                return False
        return s.include_deferred or not tool.metadata.defer

    def view(self) -> View:
        """The current :class:`View` (recomputed when the registry changed)."""
        registry = self.registry
        view = self._view
        if view is not None and view.version == registry.version:
            return view
        with self._lock:
            version = registry.version
            taken: set[str] = set()
            listed: list[ToolFunction] = []
            deferred: list[ToolFunction] = []
            for tool in registry.get_tools():
                if not self.exposed(tool):
                    continue
                py = identifier(tool.name, taken)
                taken.add(py)
                fn = function_for(tool, py, tool.metadata.defer)
                (deferred if fn.deferred else listed).append(fn)
            by_name = {f.tool_name: f for f in (*listed, *deferred)}
            externals: dict[str, Callable[..., Any]] = {f.py: external(f) for f in listed}
            externals["call_tool"] = call_tool
            view = View(version, tuple(listed), tuple(deferred), by_name, stub_module(listed),
                        externals)
            self._view = view
        return view

    def stubs(self) -> str:
        """The stub module programs are type-checked against."""
        return self.view().stubs

    def description(self) -> str:
        """``run_code``'s description: how to write a program, then the tools' signatures."""
        view = self.view()
        s = self.settings
        text = (
            "Run a short Python program that calls the tools below; you get back only what it "
            "prints and the value of its last expression (as JSON). Use it to chain tool "
            "calls, loop over results, filter and aggregate them, instead of calling tools one "
            "at a time.\n"
            "The tools are async functions: call them with await, and run independent calls "
            "together with asyncio.gather(...). Results are plain dicts, lists, strings and "
            "numbers. A failed call raises an exception (catch it with try/except). "
            "The program is type-checked against these signatures before it runs. "
            f"Available modules: {', '.join(MODULES)}; no files, network or environment. "
            f"Limits: {s.wall_time:g} s, {s.memory_mb} MiB, {s.max_tool_calls} tool calls, "
            f"{s.max_output_chars:,} characters of output.\n"
        )
        if view.deferred:
            text += ("More tools exist than are listed here: "
                     + ("find them with discover_tools(query=...) and "
                        if "discover_tools" in view.by_name else "")
                     + "call one with await call_tool(name, {arguments}).\n")
        else:
            text += "await call_tool(name, {arguments}) calls a tool by its registry name.\n"
        return text + "\n" + "\n".join(f.listing() for f in view.listed)

    # -- the run_code tool ------------------------------------------------------------------
    def tool(self) -> Tool:
        """The ``run_code`` tool for the registry's current tools."""
        mode = self

        async def run_code(code: str, ctx: ToolContext | None = None) -> ToolResult:
            run = await mode.run(code, context=ctx.values if ctx is not None else None,
                                 call_id=ctx.call.id if ctx is not None else None)
            return mode.to_result(run)

        s = self.settings
        return Tool(
            name=s.tool_name,
            description=self.description(),
            parameters={
                "type": "object",
                "properties": {"code": {
                    "type": "string",
                    "description": "The Python program. End it with an expression to return "
                                   "its value; print() what else you need to see.",
                }},
                "required": ["code"],
                "additionalProperties": False,
            },
            callable=run_code,
            metadata=ToolMetadata(timeout=s.wall_time + 10.0, too_long_to_file=True),
            provenance=Provenance("plugin", "toolregistry_codemode", s.tool_name,
                                  plugin=PLUGIN_NAME),
            context_param="ctx",
        )

    def to_result(self, run: CodeRun) -> ToolResult:
        """A run as the tool result the model reads (``value`` is the :class:`CodeRun`;
        ``metadata["calls"]`` the audit of its tool calls). Long text is cut to
        ``result_chars`` unless the spool plugin takes it. A paused run is a pending result
        (``approval_required``) whose ``approval`` is what its first held call asks."""
        spool = self.registry.plugins.is_loaded("spool")
        limit = None if spool else self.settings.result_chars
        error = run.error
        meta: dict[str, Any] = {"calls": [c.to_dict() for c in run.calls]}
        if error is not None:
            meta["error"] = {"kind": error.kind, "line": error.line}
        paused = run.paused
        if paused is not None:
            meta["paused"] = {"approvals": [h.approval.id for h in paused.held],
                              "line": paused.line}
            result = ToolResult(call_id=None, name="", content=run.render(limit),
                                is_error=True, error_kind="approval_required", value=run,
                                metadata=meta)
            result.approval = paused.approval
            return result
        return ToolResult(call_id=None, name="", content=run.render(limit),
                          is_error=error is not None,
                          error_kind=_KIND_TO_RESULT[error.kind] if error else None,  # type: ignore[arg-type]
                          value=run, metadata=meta)

    # -- running ------------------------------------------------------------------------------
    async def run(self, code: str, *, context: Mapping[str, Any] | None = None,
                  call_id: str | None = None) -> CodeRun:
        """Run ``code``; its tool calls carry ``context`` (the application's ``context=``).
        Never raises for a bad program: the run's ``error`` says what went wrong, and its
        ``paused`` that it waits for a person's approval (see :meth:`aresume`). ``call_id``
        is the ``run_code`` call's id (kept in a paused run)."""
        if not isinstance(code, str) or not code.strip():
            return CodeRun(error=CodeError("syntax", "the program is empty",
                                           hint="pass the Python source as `code`"))
        run = Run(self.registry, self.settings, self.view(), context)
        return await self._execute(run, code, call_id, None, None)

    def run_sync(self, code: str, *, context: Mapping[str, Any] | None = None) -> CodeRun:
        """:meth:`run` from synchronous code (not from inside a running event loop)."""
        return asyncio.run(self.run(code, context=context))

    async def _execute(self, run: Run, code: str, call_id: str | None,
                       paused: PausedRun | None, decide: _Decide | None) -> CodeRun:
        from pydantic_monty import MontyError

        token = CURRENT.set(run)
        started = time.perf_counter()
        try:
            await self._session(run, code, paused, decide)
        except MontyError as exc:
            run.result.error = classify(exc, code, run, self.settings)
        except TimeoutError:
            s = self.settings
            busy = run.in_flight()
            run.result.error = CodeError(
                "limit", f"the program ran past its wall-time limit of {s.wall_time:g} s"
                + (f" while waiting for {busy}" if busy else ""),
                hint="do less per program (fewer or cheaper calls), or split the work")
        finally:
            CURRENT.reset(token)
            await run.cancel_calls()
            if run.pausing is not None and run.result.error is None:
                run.result.paused = run.pause(run.pausing, code, call_id)
            run.result.output = run.output()
            run.result.calls = run.call_records()
            run.result.duration = time.perf_counter() - started
        result = run.result
        if result.paused is not None:
            self._keep(result.paused)
        log.info("codemode.ran", calls=len(result.calls), ok=result.ok,
                 error=result.error.kind if result.error else None,
                 paused=[h.approval.id for h in result.paused.held] if result.paused else None,
                 duration=round(result.duration, 6))
        return result

    async def _session(self, run: Run, code: str, paused: PausedRun | None,
                       decide: _Decide | None) -> None:
        from pydantic_monty import MontyTypingError

        s = self.settings
        pool = await self.sandbox.pool()
        check = s.type_check and paused is None
        # The sandbox stops a program that computes past wall_time itself (naming the line);
        # the host's timeout, a little later, covers the time spent waiting for tools.
        run.ends = time.monotonic() + s.wall_time
        async with asyncio.timeout(s.wall_time + _HOST_GRACE), pool.checkout(
            script_name=_SCRIPT,
            limits=self.sandbox.limits(),  # type: ignore[arg-type]
            type_check=check,
            type_check_stubs=run.view.stubs if check else None,
            type_check_format="concise",
            os_policy={"sleep_system_max": float("inf")},
        ) as session:
            run.loop = asyncio.get_running_loop()
            run.session = session
            externals = dict(run.view.externals)
            stepped = self._may_hold()

            async def program(skip_check: bool) -> Any:
                if paused is not None and decide is not None:
                    snap = await session.load_snapshot(
                        paused.state, print_callback=run.printed, external_lookup=externals,
                        os=no_os)
                    return await continue_paused(run, snap, paused, decide)
                if stepped:  # a call may be held: the host follows every suspension
                    return await drive(run, await session.feed_start(
                        code, external_lookup=externals, print_callback=run.printed,
                        os=no_os, skip_type_check=skip_check))
                # No call can be held: the sandbox drives itself (a cheaper round trip).
                return await session.feed_run(
                    code, external_lookup=externals, print_callback=run.printed, os=no_os,
                    skip_type_check=skip_check)

            def feed(skip_check: bool) -> asyncio.Future[Any]:
                run.feed = asyncio.ensure_future(program(skip_check))
                return run.feed

            try:
                try:
                    value = await feed(False)
                except MontyTypingError as exc:
                    if blocking(exc.display()):
                        raise
                    # Only diagnostics that running will settle (an Optional not narrowed, a
                    # possibly unbound name): run it; a real fault raises at its line.
                    value = await feed(True)
            except PausedAgain:
                return
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                if run.pausing is not None:  # paused at a held call awaited alone
                    return
                if run.stopped is None:
                    raise
                run.result.error = run.stopped
                return
        if run.stopped is not None:  # the program caught the exception of a stop and ended
            run.result.error = run.stopped
            return
        run.finish(value)

    def _may_hold(self) -> bool:
        """Whether a loaded plugin authorizes calls, and so may hold one for a person."""
        return any(p["status"] == "loaded" and "authorize" in p["hooks"]
                   for p in self.registry.plugins.report())

    # -- resuming after approval ----------------------------------------------------------------
    def _keep(self, paused: PausedRun) -> None:
        with self._lock:
            for held in paused.held:
                self._paused[held.approval.id] = paused
                self._paused.move_to_end(held.approval.id)
            while len(self._paused) > _KEPT_PAUSED:
                self._paused.popitem(last=False)

    def paused(self, item: Any) -> PausedRun:
        """The :class:`PausedRun` ``item`` names: ``run_code``'s pending result, its
        :class:`CodeRun`, a :class:`PausedRun` or its ``to_dict()``, or an approval id (or
        the result's ``approval``, or its ``to_dict()``) of a program paused in this
        process. ``LookupError`` when there is none."""
        if isinstance(item, ToolResult):
            run = item.value
            if isinstance(run, CodeRun) and run.paused is not None:
                return run.paused
            item = item.approval
        if isinstance(item, CodeRun) and item.paused is not None:
            return item.paused
        if isinstance(item, PausedRun):
            return item
        if isinstance(item, Mapping):
            if "format" in item:
                return PausedRun.from_dict(item)
            item = item.get("id")
        if isinstance(item, ApprovalRequest):
            item = item.id
        if isinstance(item, str):
            with self._lock:
                found = self._paused.get(item)
            if found is not None:
                return found
            raise LookupError(f"no program paused in this process waits for approval {item!r}; "
                              "resume it with its PausedRun (or its to_dict()) instead")
        raise TypeError(f"resume() takes run_code's pending result, a CodeRun, a PausedRun, its "
                        f"dict or an approval id; got {type(item).__name__}")

    async def aresume(self, item: Any, *, context: Mapping[str, Any] | None = None
                      ) -> ToolResult:
        """Continue a program paused at calls held for approval, once a person decided (with
        the policy plugin: ``approve`` / ``deny`` on its queue). ``item`` as in
        :meth:`paused`. The held call runs as approved (with the person's arguments when
        they changed them), or raises ``PermissionError`` with their reason in the program,
        which goes on from there; the result is ``run_code``'s (for the same call id), or
        pending again when the program stops at another held call or nobody decided yet.
        The paused state is loaded and checked first: one that does not wait on exactly the
        held calls is a ``RuntimeError`` before any of them is decided or run.
        With the policy plugin the decision is taken from its queue, so a used approval is
        its ``ApprovalError`` and nothing runs twice; otherwise the held call is made again
        (same call id and arguments) and the authorizing plugin decides."""
        paused = self.paused(item)
        with self._lock:
            for held in paused.held:
                if self._paused.get(held.approval.id) is paused:
                    del self._paused[held.approval.id]
        run = Run(self.registry, self.settings, self.view(), context)
        run.restore(paused)
        try:
            done = await self._execute(run, paused.code, paused.call_id, paused,
                                       lambda: self._decide(paused, context))
        except BaseException:
            self._keep(paused)
            raise
        return self._answer(done, paused.call_id)

    def resume(self, item: Any, *, context: Mapping[str, Any] | None = None) -> ToolResult:
        """:meth:`aresume` from synchronous code (not from inside a running event loop)."""
        return asyncio.run(self.aresume(item, context=context))

    def _answer(self, run: CodeRun, call_id: str | None) -> ToolResult:
        result = self.to_result(run)
        result.call_id = call_id
        result.name = self.settings.tool_name
        return result

    async def _decide(self, paused: PausedRun, context: Mapping[str, Any] | None
                      ) -> dict[str, ToolResult]:
        """Each held call's result now: ran, denied, or still pending."""
        # The kernel's pending approvals resume the calls an authorizing plugin queued (each
        # runs once, as its person decided); a call held by a plugin without a queue is asked
        # again, as that plugin expects.
        approvals = self.registry.approvals
        queued = [h for h in paused.held if h.approval.id in approvals]
        again = [h for h in paused.held if h not in queued]
        asked = asyncio.gather(*(
            self.registry.ainvoke(h.tool, dict(h.arguments), context=context,
                                  call_id=h.call_id) for h in again))
        if queued:
            from_queue, from_tools = await asyncio.gather(
                approvals.aresume([h.approval.id for h in queued], context=context), asked)
            results = [*from_queue, *from_tools]
        else:
            results = list(await asked)
        return dict(zip([h.approval.id for h in (*queued, *again)], results))
