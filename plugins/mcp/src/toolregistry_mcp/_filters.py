"""The ``include`` / ``exclude`` lists of an MCP source: tool names or glob patterns, checked
before the server is started, and those that matched none of the server's tools (a typo)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

__all__ = ["check_patterns", "report_unmatched"]


def _bracket_problem(pattern: str) -> str | None:
    """Why ``pattern``'s character classes are malformed (fnmatch would silently match a
    lone ``[`` literally, so ``"tool_[0-9"`` would match nothing the user meant)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            end = pattern.find("]", j)
            if end < 0:
                return f"the '[' at position {i} is never closed (write '[[]' for a literal '[')"
            i = end
        i += 1
    return None


def check_patterns(option: str, value: Any) -> tuple[str, ...] | None:
    """``value`` as a tuple of patterns (``None``: no list), or a :class:`ConfigError` naming
    the option and the pattern."""
    if value is None:
        return None
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, (list, tuple)) or not all(isinstance(p, str) for p in patterns):
        raise ConfigError(f"register_from_mcp: {option} must be a tool name or glob pattern, "
                          f"or a list of them (e.g. ['git_*', 'search']), not {value!r}")
    for pattern in patterns:
        problem = "it is empty" if not pattern.strip() else _bracket_problem(pattern)
        if problem is not None:
            raise ConfigError(f"register_from_mcp: {option} pattern {pattern!r} is not a "
                              f"valid tool name or glob: {problem}")
    return tuple(patterns)


def report_unmatched(server: str, option: str, patterns: tuple[str, ...] | None,
                     names: Iterable[str]) -> list[str]:
    """The patterns that match none of ``names`` (each logged as ``mcp.pattern_unmatched``)."""
    if not patterns:
        return []
    names = list(names)
    missed = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    for pattern in missed:
        log.warning("mcp.pattern_unmatched", server=server, option=option, pattern=pattern,
                    tools=len(names))
    return missed
