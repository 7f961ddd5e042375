"""The code blocks of the documentation, with the marks that say how each is tested.

Every fenced block of ``docs/*.md`` and ``README.md`` is found here (indented ones inside lists
and tabs too) and gets exactly one *home*: the nox session whose environment it runs in. A page
sets defaults in one comment, a block overrides them in a comment on the line just above its
fence, and a hidden block (set-up the reader need not see) is a comment of its own:

    <!-- doctest-page: needs=mcp,openapi -->       the page's blocks need these plugins
    <!-- doctest: needs=think fresh -->            this block: other plugins, a new namespace
    <!-- doctest: compile reason="a fragment: response_calls comes from your model" -->
    <!-- doctest: file=server.py -->               written to the page's folder (compiled)
    <!-- doctest: run -->                          a shell block whose commands are run
    <!-- doctest: background port=8000 -->         a shell command left running until the page ends
    <!-- doctest: output -->                       text the previous block must have printed
    <!-- doctest: python=0.19 -->                  runs against toolregistry 0.19 in its own venv
    <!-- doctest-setup
    hidden Python, run before the next block
    -->

What each language means (tests/docs/test_blocks.py runs them):

* ``python``: executed, the page's blocks in order in one namespace (top-level ``await`` works),
  in a temporary folder that is the page's working directory. ``compile`` (with a ``reason``)
  only compiles it. ``file=NAME`` writes it to that folder. A block that is one ``def`` line
  (a signature shown without a body, as in ``docs/hooks.md``) is compiled, needing no mark.
* ``toml`` / ``json``: parsed; ``file=NAME`` writes them too (a ``pyproject.toml`` the next
  blocks read).
* ``sh`` / ``console`` / ``bash``: every ``pip install`` names distributions of this repository
  (or well-known third-party ones listed in ``THIRD_PARTY``) and extras that exist, every
  ``python path/x.py`` names a file that exists; ``run`` also runs the commands.
* ``text``: displayed as is, unless ``output``.

A page's home is the set of plugins it ``needs``: none -> the ``core`` session, one -> that
plugin's session, several -> ``integration``; ``python=0.19`` -> the ``docs`` session. No block
is skipped anywhere: in a session a block is either run (its home) or not collected (another
session runs it), and ``tests/site/test_site.py`` checks that every mark names a real plugin.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PLUGINS = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").exists())

PYTHON = {"python", "py", "pycon"}
SHELL = {"sh", "console", "bash", "shell"}
DATA = {"toml", "json"}
DISPLAY = {"text"}
LANGUAGES = PYTHON | SHELL | DATA | DISPLAY
BLOCK_KEYS = {"needs", "fresh", "compile", "reason", "file", "run", "background", "port",
              "output", "python"}
PAGE_KEYS = {"needs"}

# One `def` line and nothing else: compiled with a `: ...` body, never run.
SIGNATURE = re.compile(r"(async )?def [^\n]*\)( -> [^\n]*)?\n")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_MARK = re.compile(r"^\s*<!--\s*doctest:(?P<opts>.*?)-->\s*$")
_PAGE = re.compile(r"^\s*<!--\s*doctest-page:(?P<opts>.*?)-->\s*$")
_SETUP = re.compile(r"^\s*<!--\s*doctest-setup(?P<opts>[^\n]*)$")
# docs/formats.md's own mark (tests/test_formats.py reads it too): same as doctest: file=NAME
_FILE = re.compile(r"^\s*<!--\s*file:\s*(?P<file>\S+)\s*-->\s*$")


class MarkError(ValueError):
    """A doctest mark that cannot be understood (named with its page and line)."""


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository
    line: int  # 1-based line of the opening fence (or of the setup comment)
    lang: str
    code: str
    options: dict[str, str] = field(default_factory=dict)
    page_options: dict[str, str] = field(default_factory=dict)
    hidden: bool = False

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def needs(self) -> frozenset[str]:
        raw = self.options.get("needs", self.page_options.get("needs", ""))
        return frozenset(n for n in raw.split(",") if n)

    @property
    def home(self) -> str:
        """The nox session that runs this block."""
        if self.options.get("python") == "0.19":
            return "docs"
        needs = self.needs
        if not needs:
            return "core"
        if len(needs) == 1:
            return next(iter(needs))
        return "integration"

    @property
    def mode(self) -> str:
        for mode in ("compile", "file", "background", "run", "output"):
            if mode in self.options:
                return mode
        if self.lang in PYTHON and SIGNATURE.fullmatch(self.code):
            return "compile"  # a signature shown without a body (hooks.md): nothing to run
        if self.lang in PYTHON:
            return "exec"
        if self.lang in SHELL:
            return "check"
        if self.lang in DATA:
            return "parse"
        return "display"


def _options(text: str, where: str, allowed: set[str]) -> dict[str, str]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise MarkError(f"{where}: cannot read the mark {text!r}: {exc}") from None
    options: dict[str, str] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key not in allowed:
            raise MarkError(f"{where}: unknown doctest option {key!r}; known: {sorted(allowed)}")
        options[key] = value
    if "compile" in options and not options.get("reason"):
        raise MarkError(f"{where}: a compile-only block must say why: reason=\"...\"")
    return options


def parse(path: Path) -> list[Block]:
    """The blocks of one Markdown file, in order."""
    page = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    page_options: dict[str, str] = {}
    pending: dict[str, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        where = f"{page}:{i + 1}"
        if m := _PAGE.match(line):
            page_options = _options(m["opts"], where, PAGE_KEYS)
        elif m := _MARK.match(line):
            pending = _options(m["opts"], where, BLOCK_KEYS)
            i += 1
            continue
        elif m := _FILE.match(line):
            pending = {"file": m["file"]}
            i += 1
            continue
        elif m := _SETUP.match(line):
            options = _options(m["opts"].strip(), where, BLOCK_KEYS)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->"), None)
            if end is None:
                raise MarkError(f"{where}: doctest-setup comment is not closed by a line '-->'")
            blocks.append(Block(page, i + 1, "python", "\n".join(lines[i + 1:end]) + "\n",
                                options, page_options, hidden=True))
            i = end
        elif m := _FENCE.match(line):
            indent, fence = m["indent"], m["fence"]
            lang = m["info"].strip().split(" ")[0].split("{")[0].lower()
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].strip() == fence and lines[j].startswith(indent)), None)
            if end is None:
                raise MarkError(f"{where}: code fence is never closed")
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                    for ln in lines[i + 1:end]]
            blocks.append(Block(page, i + 1, lang, "\n".join(body) + "\n",
                                pending or {}, page_options))
            i = end
        elif pending is not None and line.strip():
            raise MarkError(f"{where}: a doctest mark must be on the line just above a fence")
        pending = None
        i += 1
    return blocks


def pages() -> list[Path]:
    """Every documentation page whose code blocks are tested."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def all_blocks() -> Iterator[Block]:
    for path in pages():
        yield from parse(path)


def readme_commands() -> list[str]:
    """The README's two commands: the lines of its first sh block."""
    block = next(b for b in parse(REPO / "README.md") if b.lang == "sh")
    lines = [ln.strip() for ln in block.code.splitlines() if ln.strip()]
    assert len(lines) == 2, lines
    return lines


def plugins_of(requirements: Path) -> set[str]:
    """The plugins a requirements file installs from this repository (``-e ./plugins/<name>``)."""
    text = requirements.read_text(encoding="utf-8")
    return set(re.findall(r"^-e \./plugins/([\w-]+)\s*$", text, re.M))


def readme_requirements() -> Path:
    """The requirements file the README's first command installs."""
    m = re.search(r"pip install (?:-q )?-r (\S+)", readme_commands()[0])
    assert m, f"README.md: the first command installs no requirements file: {readme_commands()[0]}"
    return REPO / m[1]
