"""Reading the examples and quoted messages out of the docs pages, for the tests that check
that the pages say what is true (used by the kernel's, the plugins' and the integration
tests)."""

from __future__ import annotations

import re
from pathlib import Path

from .docs._blocks import DOCS, parse


def blocks(page: str, lang: str) -> list[str]:
    """The fenced ``lang`` blocks of ``docs/<page>``, in page order (``""``: unmarked)."""
    return [b.code for b in parse(DOCS / page) if b.lang == lang and not b.hidden]


def quoted(page: str, start: str) -> str:
    """The one inline-code span of ``docs/<page>`` that starts with ``start`` (it may not hold
    a backtick)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    found = re.findall(r"`(" + re.escape(start) + r"[^`]*)`", text)
    assert len(found) == 1, f"docs/{page}: {len(found)} spans start with {start!r}"
    return found[0]


def config_example(folder: Path) -> Path:
    """docs/configuration.md's example project written into ``folder``: ``my_tools.py`` (its
    first Python block) and ``pyproject.toml`` (its TOML block with sources)."""
    (folder / "my_tools.py").write_text(next(b for b in blocks("configuration.md", "python") if "class Calculator" in b))
    (toml,) = [b for b in blocks("configuration.md", "toml") if "[[tool.toolregistry.sources]]" in b]
    (folder / "pyproject.toml").write_text(toml)
    return folder / "pyproject.toml"


def usage_lines(page: str = "cli.md") -> dict[str, str]:
    """``{command: the rest of its usage line}`` from the first ``text`` block of ``page``
    (continuation lines joined)."""
    (usage,) = blocks(page, "text")[:1]
    lines: list[str] = []
    for line in usage.splitlines():
        if line.startswith("toolregistry "):
            lines.append(line)
        elif line.strip():
            lines[-1] += " " + line.strip()
    found = {}
    for line in lines:
        match = re.match(r"toolregistry \[--config PYPROJECT\] (\S+)(.*)$", line)
        assert match, line
        found[match[1]] = match[2].strip()
    return found


def usage_options(rest: str) -> dict[str, bool]:
    """``{--option: required}`` of one usage line's tail (``[--x X]`` is optional)."""
    options = {}
    for bracketed, bare in re.findall(r"\[(--[a-z-]+)[^\]]*\]|(--[a-z-]+)", rest):
        options[bracketed or bare] = not bracketed
    return options
