"""A sandbox error as the model reads it: the kind, the line, the source line and a hint."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ._result import CodeError
from ._sandbox import MODULES

if TYPE_CHECKING:
    from pydantic_monty import MontyError

    from ._bridge import Run
    from ._settings import CodeModeSettings

__all__ = ["BLOCKING", "blocking", "classify"]

BLOCKING = frozenset({
    "invalid-syntax", "missing-argument", "unknown-argument", "too-many-positional-arguments",
    "parameter-already-assigned", "invalid-argument-type", "unresolved-reference",
    "unresolved-import", "call-non-callable", "invalid-await",
})
"""Type-check findings that refuse a program: wrong calls, unknown names, syntax. Others (an
``Optional`` not narrowed before ``.group()``, ...) let it run: if it really is wrong, the
runtime error names the line."""

_CODE = re.compile(r"error\[([a-z-]+)\]")


def blocking(diagnostics: str) -> bool:
    """Whether the type checker's ``diagnostics`` refuse the program (see :data:`BLOCKING`; a
    coroutine used without ``await`` too)."""
    codes = set(_CODE.findall(diagnostics))
    return bool(codes & BLOCKING) or "CoroutineType" in diagnostics or not codes

_MAX_DIAGNOSTICS = 20
_DIAGNOSTIC = re.compile(r"^\S*?:(\d+):\d+: ", re.M)


def _source_line(code: str, line: int | None) -> str | None:
    if not line:
        return None
    lines = code.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def classify(exc: MontyError, code: str, run: Run, settings: CodeModeSettings) -> CodeError:
    """A sandbox error as a :class:`CodeError` with its line and a hint."""
    from pydantic_monty import (
        MontyCrashedError,
        MontyRuntimeError,
        MontySyntaxError,
        MontyTypingError,
    )

    run.result.output = run.output()
    if isinstance(exc, MontyTypingError):
        text = exc.display().strip()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        more = len(lines) - _MAX_DIAGNOSTICS
        shown = "\n".join(lines[:_MAX_DIAGNOSTICS]) + (f"\n... and {more} more" if more > 0 else "")
        match = _DIAGNOSTIC.search(text)
        line = int(match.group(1)) if match else None
        syntax = "invalid-syntax" in text
        hint = None
        if re.search(r"`(open|input|__import__|exit|quit)` used when not defined", text):
            hint = "programs have no files, console or environment; get data through the tools"
        elif not syntax:
            hint = "the tools' signatures are in the description; tools are async (await them)"
        return CodeError(
            "syntax" if syntax else "type",
            ("the program has a syntax error" if syntax else "the program does not type-check")
            + f"; nothing ran:\n{shown}", line, _source_line(code, line), hint)
    if isinstance(exc, MontyCrashedError):
        return CodeError("crash", f"the sandbox worker stopped ({exc}); it was replaced",
                         hint="run the program again; if it keeps failing, simplify it")
    frame_line: int | None = None
    source: str | None = None
    if isinstance(exc, (MontyRuntimeError, MontySyntaxError)):
        frames = exc.traceback()
        if frames:
            frame = frames[-1]
            frame_line, source = frame.line, frame.source_line
        message = exc.display("type-msg")
    else:
        message = str(exc)
    inner = exc.exception()
    if isinstance(exc, MontySyntaxError):
        return CodeError("syntax", f"the program has a syntax error; nothing ran: {message}",
                         frame_line, source or _source_line(code, frame_line))
    source = source or _source_line(code, frame_line)
    if run.last_tool_error is not None and run.last_tool_error in message:
        return CodeError("tool", message, frame_line, source,
                         "arguments are checked against the tool's schema; fix them, or catch "
                         "the exception with try/except to handle the failure")
    kind, hint = _hint(inner, message, settings)
    return CodeError(kind, message, frame_line, source, hint)


def _hint(inner: BaseException, message: str, settings: CodeModeSettings) -> tuple[Any, str | None]:
    s = settings
    if isinstance(inner, TimeoutError):
        if "sleep" in message:
            return "limit", f"programs may sleep {s.wall_time:g} s in all"
        return "limit", (f"the program computed for more than {s.wall_time:g} s (wall_time); "
                         "look for a loop that never ends")
    if isinstance(inner, MemoryError):
        return "limit", f"the program used more than {s.memory_mb} MiB (memory_mb)"
    if isinstance(inner, RecursionError):
        return "limit", f"recursion deeper than {s.max_recursion_depth} (max_recursion_depth)"
    if isinstance(inner, ModuleNotFoundError):
        return "runtime", f"programs can import only: {', '.join(MODULES)}"
    if isinstance(inner, NameError):
        if re.search(r"'(open|__import__|input|exit|quit)'", message):
            return "runtime", "programs have no files, console or environment; use the tools"
        return "runtime", ("only the listed tools, call_tool and the builtins exist; tools are "
                           "called by the names in the description")
    if isinstance(inner, PermissionError):
        return "runtime", "programs have no files, environment or network; use the tools"
    if isinstance(inner, TypeError) and ("await" in message or "coroutine" in message):
        return "runtime", "tools are async: write `result = await tool(...)`"
    if isinstance(inner, RuntimeError) and "suspension limit" in message:
        return "limit", (f"too many host round trips; at most {s.max_tool_calls} tool calls "
                         "per program")
    return "runtime", None
