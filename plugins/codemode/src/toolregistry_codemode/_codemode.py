"""Code mode on one registry: which tools programs see, the ``run_code`` tool, and a program's
run -- the sandbox on one side, the registry's own call path on the other."""

from __future__ import annotations

import asyncio
import fnmatch
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from toolregistry import Tool, ToolMetadata
from toolregistry.plugin import log
from toolregistry.tool import Provenance
from toolregistry.types import ToolContext, ToolResult

from ._bridge import CURRENT, Run, call_tool, external, no_os
from ._errors import blocking, classify
from ._result import CodeError, CodeRun
from ._sandbox import MODULES, Sandbox
from ._settings import PLUGIN_NAME, CodeModeSettings
from ._stubs import ToolFunction, function_for, identifier, stub_module

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

__all__ = ["MODULES", "CodeMode", "View"]

_SCRIPT = "program.py"
_HOST_GRACE = 0.5

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
            run = await mode.run(code, context=ctx.values if ctx is not None else None)
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
        ``result_chars`` unless the spool plugin takes it."""
        spool = self.registry.plugins.is_loaded("spool")
        limit = None if spool else self.settings.result_chars
        error = run.error
        meta: dict[str, Any] = {"calls": [c.to_dict() for c in run.calls]}
        if error is not None:
            meta["error"] = {"kind": error.kind, "line": error.line}
        return ToolResult(call_id=None, name="", content=run.render(limit),
                          is_error=error is not None,
                          error_kind=_KIND_TO_RESULT[error.kind] if error else None,  # type: ignore[arg-type]
                          value=run, metadata=meta)

    # -- running ------------------------------------------------------------------------------
    async def run(self, code: str, *, context: Mapping[str, Any] | None = None) -> CodeRun:
        """Run ``code``; its tool calls carry ``context`` (the application's ``context=``).
        Never raises for a bad program: the run's ``error`` says what went wrong."""
        from pydantic_monty import MontyError

        if not isinstance(code, str) or not code.strip():
            return CodeRun(error=CodeError("syntax", "the program is empty",
                                           hint="pass the Python source as `code`"))
        view = self.view()
        run = Run(self.registry, self.settings, view, context)
        token = CURRENT.set(run)
        started = time.perf_counter()
        try:
            await self._run(run, code)
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
            run.result.output = run.output()
            run.result.calls = run.call_records()
            run.result.duration = time.perf_counter() - started
        log.info("codemode.ran", calls=len(run.result.calls), ok=run.result.ok,
                 error=run.result.error.kind if run.result.error else None,
                 duration=round(run.result.duration, 6))
        return run.result

    def run_sync(self, code: str, *, context: Mapping[str, Any] | None = None) -> CodeRun:
        """:meth:`run` from synchronous code (not from inside a running event loop)."""
        return asyncio.run(self.run(code, context=context))

    async def _run(self, run: Run, code: str) -> None:
        from pydantic_monty import MontyTypingError

        s = self.settings
        pool = await self.sandbox.pool()
        # The sandbox stops a program that computes past wall_time itself (naming the line);
        # the host's timeout, a little later, covers the time spent waiting for tools.
        async with asyncio.timeout(s.wall_time + _HOST_GRACE), pool.checkout(
            script_name=_SCRIPT,
            limits=self.sandbox.limits(),  # type: ignore[arg-type]
            type_check=s.type_check,
            type_check_stubs=run.view.stubs if s.type_check else None,
            type_check_format="concise",
            os_policy={"sleep_system_max": float("inf")},
        ) as session:
            run.loop = asyncio.get_running_loop()

            def feed(skip_check: bool) -> asyncio.Future[Any]:
                run.feed = asyncio.ensure_future(session.feed_run(
                    code, external_lookup=dict(run.view.externals), print_callback=run.printed,
                    os=no_os, skip_type_check=skip_check))
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
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if run.stopped is None or (task is not None and task.cancelling()):
                    raise
                run.result.error = run.stopped
                return
        if run.stopped is not None:  # the program caught the exception of a stop and ended
            run.result.error = run.stopped
            return
        run.finish(value)
