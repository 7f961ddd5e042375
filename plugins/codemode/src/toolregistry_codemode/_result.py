"""What a program run gives back: :class:`CodeRun` (output, value, the tool calls it made, its
error) and the text the model reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from attrs import define, field, frozen

if TYPE_CHECKING:
    from ._paused import PausedRun

__all__ = ["CallRecord", "CodeError", "CodeRun", "ErrorKind"]

ErrorKind = Literal["syntax", "type", "runtime", "tool", "limit", "crash"]


@frozen
class CallRecord:
    """One tool call a program made, for audit: the tool, the arguments it was called with
    (as the registry received them), the outcome (``ok`` or the error kind), seconds taken."""

    tool: str
    arguments: dict[str, Any]
    outcome: str
    duration: float
    call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"tool": self.tool, "arguments": self.arguments, "outcome": self.outcome,
                "duration": round(self.duration, 6), "call_id": self.call_id}


@frozen
class CodeError:
    """Why a program failed: ``kind`` (syntax, type, runtime, tool, limit, crash), the message,
    the line it failed at when known, and a hint for the model."""

    kind: ErrorKind
    message: str
    line: int | None = None
    source: str | None = None
    hint: str | None = None

    def render(self) -> str:
        """The error as the model reads it."""
        where = f"line {self.line}: " if self.line else ""
        text = f"{where}{self.message}"
        if self.source:
            text += f"\n    {self.source.strip()}"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text


@define
class CodeRun:
    """One program's run: what it printed, its last expression's value (``None`` when it
    ended with a statement), every tool call it made, its error (``None`` on success), and
    ``paused`` when it waits for a person's approval of one of its calls (resume it with
    :meth:`CodeMode.resume`)."""

    output: str = ""
    value: Any = None
    calls: list[CallRecord] = field(factory=list)
    error: CodeError | None = None
    duration: float = 0.0
    value_json: str | None = field(default=None, repr=False)
    paused: PausedRun | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """True when the program ran to its end."""
        return self.error is None and self.paused is None

    def render(self, limit: int | None = None) -> str:
        """What the model reads: the printed text, then ``result: <JSON>`` (either alone when
        the other is empty); on error the output so far and the error. ``limit`` cuts it."""
        parts: list[str] = []
        if self.paused is not None:
            parts.append(_paused_text(self.paused))
            if self.output:
                parts.append("Output so far:\n" + self.output.rstrip("\n"))
        elif self.error is not None:
            parts.append(f"Error: {self.error.render()}")
            if self.output:
                parts.append("Output before the error:\n" + self.output.rstrip("\n"))
            if self.calls:
                parts.append(_calls_line(self.calls))
        else:
            if self.output:
                parts.append(self.output.rstrip("\n"))
            if self.value_json is not None and self.value_json != "null":
                parts.append(self.value_json if not parts else f"result: {self.value_json}")
            if not parts:
                parts.append("(the program printed nothing and returned None)")
        text = "\n".join(parts)
        if limit is not None and len(text) > limit:
            cut = len(text) - limit
            text = (text[:limit] + f"\n[cut: {cut:,} more characters not shown; print less, "
                    "or return only what you need]")
        return text


def _paused_text(paused: PausedRun) -> str:
    asked = "; ".join(f"{h.tool}() (approval {h.approval.id})" for h in paused.held)
    where = f" at line {paused.line}" if paused.line else ""
    return (f"Paused{where}: the program waits for a person's approval of {asked}; that call "
            "has not run. The program continues from there once a person decides (denied, the "
            "call raises PermissionError with their reason); do not run it again.")


def _calls_line(calls: list[CallRecord]) -> str:
    shown = ", ".join(f"{c.tool} {c.outcome}" for c in calls[:10])
    more = f", and {len(calls) - 10} more" if len(calls) > 10 else ""
    return f"Tool calls made before the error ({len(calls)}): {shown}{more}"
