"""Every command in the documentation that installs one of our distributions from the package
index pins ``>=1.0.0.dev0``.

The public index has the unrelated toolregistry 0.19 (and none of our 1.0 distributions yet):
an unpinned ``pip install "toolregistry[mcp]"`` quietly installs 0.19.0 with a mere "does not
provide the extra" warning, where a pinned one fails saying no matching version exists. Code
blocks and inline code spans alike: a reader copies both.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ._blocks import PLUGINS, REPO, pages

OURS = {"toolregistry", *(f"toolregistry-{p}" for p in PLUGINS)}
PIN = re.compile(r"(>=|==)1\.0\.0\.dev0\b")
# `pip install ...` / `uv pip install ...` / `uv add ...`, up to the end of the line, of the
# code span or of a shell comment.
_COMMAND = re.compile(r"\b(?:pip install|uv add)\b(?P<args>[^`#\n]*)")
_REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?(?P<spec>.*)")


def index_requirements(line: str) -> list[str]:
    """The requirements of ours that an install command on ``line`` takes from the index
    (local paths, ``-e`` / ``-r`` / ``-c`` arguments and options left out)."""
    found = []
    for command in _COMMAND.finditer(line):
        try:
            words = shlex.split(command["args"])
        except ValueError:  # a quote closed on another line of prose
            words = command["args"].split()
        for before, word in zip(["", *words], words):
            if word.startswith("-") or "/" in word or before in {"-r", "-c", "-e"}:
                continue
            m = _REQUIREMENT.fullmatch(word)
            if m and m["name"].lower() in OURS:
                found.append(word)
    return found


def unpinned(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    where = path.relative_to(REPO)
    return [f"{where}:{number}: {word}" for number, line in enumerate(lines, 1)
            for word in index_requirements(line) if not PIN.search(word)]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_index_installs_of_ours_pin_the_1_0_release_train(page: Path) -> None:
    bad = unpinned(page)
    assert not bad, ("installs that would take toolregistry 0.19 from the index; pin "
                     "'>=1.0.0.dev0' so that they fail until 1.0 is published:\n"
                     + "\n".join(bad))


@pytest.mark.parametrize(("line", "expected"), [
    ('pip install "toolregistry[mcp,discovery]"', ["toolregistry[mcp,discovery]"]),
    ("pip install toolregistry toolregistry-openapi openai",
     ["toolregistry", "toolregistry-openapi"]),
    ("`pip install 'toolregistry-discovery[semantic]'` (see", ["toolregistry-discovery[semantic]"]),
    ('pip install -e "./core[mcp]" -e ./plugins/mcp -r workspace.txt', []),
    ("uv add toolregistry-mcp  # the plugin", ["toolregistry-mcp"]),
])
def test_index_requirements_reads_commands(line: str, expected: list[str]) -> None:
    assert index_requirements(line) == expected
