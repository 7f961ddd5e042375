"""A ready approval handler for terminal agents: shows the call and asks yes / no / edit."""

from __future__ import annotations

import json
import sys
import threading
from typing import IO, Any

from toolregistry.types import ApprovalRequest

from ._policy import Verdict

__all__ = ["TerminalApprover"]


class TerminalApprover:
    """Asks a person at the terminal about each call held for approval.

    Shows the tool, its arguments, why approval is needed and the model's reason for the call
    (``toolcall_reason``, when the think plugin is on), then reads ``y`` (run it), ``n`` (refuse
    it, with an optional reason the model reads) or ``e`` (type new arguments as a JSON
    object). Reads ``stdin`` and writes ``stderr`` by default (stdout may be a protocol
    channel); one question at a time, even when calls run concurrently. The end of the input
    refuses the call.
    """

    def __init__(self, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
                 approver: str = "terminal") -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.approver = approver
        self._lock = threading.Lock()

    def _read(self, prompt: str) -> str | None:
        out = self.stdout or sys.stderr
        out.write(prompt)
        out.flush()
        line = (self.stdin or sys.stdin).readline()
        return None if not line else line.strip()

    def __call__(self, request: ApprovalRequest) -> Verdict:
        with self._lock:
            return self._ask(request)

    def _ask(self, request: ApprovalRequest) -> Verdict:
        out = self.stdout or sys.stderr
        lines = [f"\nThe model wants to call {request.tool!r}"
                 + (f" (call {request.call_id})" if request.call_id else "") + ":",
                 _indent(json.dumps(dict(request.arguments), indent=2, ensure_ascii=False,
                                    default=str))]
        if request.reason:
            lines.append(f"  its reason: {request.reason}")
        if request.message:
            lines.append(f"  approval needed: {request.message}")
        if request.rule:
            lines.append(f"  rule: {request.rule}")
        out.write("\n".join(lines) + "\n")
        while True:
            answer = self._read("Run it? [y]es / [n]o / [e]dit arguments: ")
            if answer is None:
                return Verdict.deny("no answer (the terminal's input ended)",
                                    approver=self.approver)
            choice = answer.lower()
            if choice in ("y", "yes"):
                return Verdict.approve(approver=self.approver)
            if choice in ("n", "no"):
                why = self._read("Reason for the model (optional): ")
                return Verdict.deny(why or None, approver=self.approver)
            if choice in ("e", "edit"):
                edited = self._edit()
                if edited is not None:
                    return Verdict.approve(edited, approver=self.approver)
                continue
            out.write("Please answer y, n or e.\n")

    def _edit(self) -> dict[str, Any] | None:
        out = self.stdout or sys.stderr
        text = self._read("New arguments (one line of JSON): ")
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            out.write(f"That is not JSON ({exc}).\n")
            return None
        if not isinstance(value, dict):
            out.write("The arguments must be a JSON object.\n")
            return None
        return value


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
