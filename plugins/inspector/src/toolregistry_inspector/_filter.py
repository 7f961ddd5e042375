"""The conditions of one log query, checked against the memory buffer's records or written
as SQL for the log's SQLite file or PostgreSQL store."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._log import _Record

def _glob_regex(pattern: str) -> str:
    """A glob (``*``, ``?``, ``[...]``, as SQLite's ``GLOB``) as an anchored POSIX regular
    expression (PostgreSQL's ``~``)."""
    out, i = ["^"], 0
    while i < len(pattern):
        c = pattern[i]
        close = pattern.find("]", i + 2) if c == "[" else -1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif close != -1:
            body = pattern[i + 1:close]
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = close
        else:
            out.append("\\" + c if not c.isalnum() else c)
        i += 1
    return "".join(out) + "$"


class _Filter:
    """The conditions of one query, shared by the memory buffer, the SQLite file and the
    store."""

    def __init__(self, tool: str | None = None, outcome: str | None = None,
                 since: float | None = None, call_id: str | None = None,
                 after: int | None = None, until: float | None = None,
                 before: int | None = None, batch: str | None = None) -> None:
        if outcome is not None and not isinstance(outcome, str):
            raise TypeError(f"outcome must be a string such as 'ok' or 'error', got {outcome!r}")
        self.tool = tool
        self.outcome = outcome
        self.since = since
        self.call_id = call_id
        self.after = after
        self.until = until
        self.before = before
        self.batch = batch

    def match(self, r: _Record) -> bool:
        if self.after is not None and r[0] <= self.after:
            return False
        if self.before is not None and r[0] >= self.before:
            return False
        if self.until is not None and r[1] >= self.until:
            return False
        if self.since is not None and r[1] < self.since:
            return False
        if self.call_id is not None and r[3] != self.call_id:
            return False
        if self.batch is not None and r[13] != self.batch:
            return False
        if self.outcome is not None:
            if self.outcome == "error":
                if r[5] == "ok":
                    return False
            elif r[5] != self.outcome:
                return False
        return self.tool is None or fnmatch.fnmatchcase(r[2], self.tool)

    def sql(self, kind: str = "sqlite") -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        for value, clause in ((self.after, "seq > ?"), (self.since, "time >= ?"),
                              (self.before, "seq < ?"), (self.until, "time < ?"),
                              (self.call_id, "call_id = ?"), (self.batch, "batch = ?")):
            if value is not None:
                where.append(clause)
                params.append(value)
        if self.outcome == "error":
            where.append("outcome != 'ok'")
        elif self.outcome is not None:
            where.append("outcome = ?")
            params.append(self.outcome)
        if self.tool is not None:
            if not any(c in self.tool for c in "*?["):
                # One tool: its (tool, seq) index gives the newest calls in order.
                where.append("tool = ?")
                params.append(self.tool)
            elif kind == "sqlite":
                # A pattern: walking the calls newest first stops at the page's end; the
                # tool index would make the database sort every call the pattern matches.
                where.append("+tool GLOB ?")
                params.append(self.tool)
            else:
                where.append("tool ~ ?")
                params.append(_glob_regex(self.tool))
        return (" WHERE " + " AND ".join(where)) if where else "", params
