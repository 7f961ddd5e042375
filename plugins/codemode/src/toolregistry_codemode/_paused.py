"""A program paused at tool calls held for a person's approval: the sandbox's dumped state
and the host's side of the run, as plain data, so that the decision may come -- and the
program continue -- in another process."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from toolregistry.types import ApprovalRequest

__all__ = ["FORMAT", "HeldCall", "PausedRun"]

FORMAT = "toolregistry-codemode/paused-1"


@frozen
class HeldCall:
    """One call the program waits on: its place among the program's calls (``seq``), the
    tool, arguments and call id it was made with, what was asked, and the sandbox's id of
    the call (``None`` in a run paused before these were kept)."""

    seq: int
    tool: str
    arguments: Mapping[str, Any]
    call_id: str
    approval: ApprovalRequest
    sandbox_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reads it back)."""
        return {"seq": self.seq, "tool": self.tool,
                "arguments": dict(self.arguments), "call_id": self.call_id,
                "approval": self.approval.to_dict(), "sandbox_id": self.sandbox_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HeldCall:
        """The inverse of :meth:`to_dict`."""
        sandbox_id = data.get("sandbox_id")
        return cls(int(data["seq"]), str(data["tool"]),
                   dict(data["arguments"]), str(data["call_id"]),
                   ApprovalRequest.from_dict(data["approval"]),
                   None if sandbox_id is None else int(sandbox_id))


@frozen
class PausedRun:
    """A program paused at ``held`` calls (see :meth:`CodeMode.resume`).

    ``state`` is the sandbox's dump (opaque bytes of pydantic-monty ``monty``); ``code`` the
    program; ``run_id`` and ``count`` name and number its calls; ``calls`` are the calls made
    so far as ``[seq, tool, arguments, outcome, duration, call_id]``; ``output`` what it
    printed; ``call_id`` the ``run_code`` call's id (the resumed
    result answers it); ``line`` where the program waits (when known). ``to_dict`` / ``from_dict`` give JSON-ready data.
    Treat it like the approvals store: the application keeps it, the model never sees it.
    """

    state: bytes
    code: str
    run_id: str
    count: int
    calls: tuple[tuple[Any, ...], ...]
    output: str
    held: tuple[HeldCall, ...]
    monty: str
    call_id: str | None = None
    line: int | None = None

    @property
    def approval(self) -> ApprovalRequest:
        """What is asked first (the pending result's ``approval``)."""
        return self.held[0].approval

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reads it back)."""
        return {"format": FORMAT, "monty": self.monty,
                "state": base64.b64encode(self.state).decode("ascii"), "code": self.code,
                "run_id": self.run_id, "count": self.count,
                "calls": [list(c) for c in self.calls], "output": self.output,
                "held": [h.to_dict() for h in self.held], "call_id": self.call_id,
                "line": self.line}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PausedRun:
        """The inverse of :meth:`to_dict`; data of another format, or dumped by another
        pydantic-monty version, is a ``ValueError`` saying so."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"not a paused code-mode program (expected format {FORMAT!r})")
        from pydantic_monty import __version__

        if data.get("monty") != __version__:
            raise ValueError(f"this program was paused by pydantic-monty {data.get('monty')}; "
                             f"this process has {__version__}, which cannot load its state")
        try:
            return cls(base64.b64decode(data["state"], validate=True), str(data["code"]),
                       str(data["run_id"]), int(data["count"]),
                       tuple(tuple(c) for c in data["calls"]), str(data["output"]),
                       tuple(HeldCall.from_dict(h) for h in data["held"]),
                       str(data["monty"]), data.get("call_id"), data.get("line"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a paused code-mode program's data is damaged: {exc!r}") from None
