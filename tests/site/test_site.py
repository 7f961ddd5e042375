"""The documentation site hangs together: links, code-block marks, navigation, install extras.

Runs in the ``docs`` nox session (``mkdocs build --strict`` runs there first).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from tests.docs._blocks import (
    LANGUAGES,
    PLUGINS,
    REPO,
    SIGNATURE,
    MarkError,
    all_blocks,
    pages,
    parse,
)

DOCS = REPO / "docs"
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<a href=\"([^\"]+)\"")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def _anchors(path: Path) -> set[str]:
    found: set[str] = set()
    prose = re.sub(r"^\s*```.*?^\s*```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    text = _CODE.sub("", prose)  # no ids from code spans; headings keep theirs (`tool_choice`)
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", prose, re.M):
        # as Markdown renders it: code spans and emphasis marks go, `tool_choice` keeps its `_`
        slug = slugify(re.sub(r"`|\*|(?<!\w)_|_(?!\w)", "", m[1]), "-")
        n, candidate = 0, slug
        while candidate in found:
            n += 1
            candidate = f"{slug}_{n}"
        found.add(candidate)
    for m in re.finditer(r"\{\s*#([\w-]+)\s*\}|<a (?:id|name)=\"([^\"]+)\"", text):
        found.add(m[1] or m[2])
    return found


def _links(path: Path) -> list[tuple[int, str]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for m in _LINK.finditer(_CODE.sub("", line)):
            out.append((n, m[1] or m[2]))
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_internal_link_resolves(page: Path) -> None:
    broken = []
    for line, target in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{page.name}:{line}: {target} (no file {dest})")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{page.name}:{line}: {target} (no heading #{anchor} in {dest.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_code_block_is_marked_in_a_way_the_tests_understand() -> None:
    problems = []
    for path in pages():
        try:
            blocks = parse(path)
        except MarkError as exc:
            problems.append(str(exc))
            continue
        for block in blocks:
            if block.lang not in LANGUAGES:
                problems.append(f"{block.where}: fence language {block.lang!r} is not one of "
                                f"{sorted(LANGUAGES)} (use `text` for plain output)")
            unknown = block.needs - set(PLUGINS)
            if unknown:
                problems.append(f"{block.where}: needs {sorted(unknown)}, which are no plugin "
                                f"of plugins/ ({PLUGINS})")
    assert not problems, "\n".join(problems)


def test_compile_only_blocks_say_why() -> None:
    """A Python block that is only compiled gives its reason; the list is printed, not hidden."""
    python = [b for b in all_blocks() if b.lang == "python"]
    compiled = [b for b in python if b.mode == "compile"]
    unexplained = [b.where for b in compiled
                   if not b.options.get("reason") and not SIGNATURE.fullmatch(b.code)]
    assert not unexplained, unexplained
    print(f"{len(python) - len(compiled)} Python blocks run, {len(compiled)} only compiled:")
    for block in compiled:
        print(f"  {block.where}: {block.options.get('reason', 'a signature without a body')}")


def test_getting_started_comes_first() -> None:
    readme = _links(REPO / "README.md")
    index = _links(DOCS / "index.md")
    assert readme and readme[0][1] == "docs/getting-started.md", readme[:1]
    assert index and index[0][1] == "getting-started.md", index[:1]
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert nav.index("getting-started.md") < nav.index("tools.md")


def test_the_home_page_links_every_page_of_the_site() -> None:
    """docs/index.md is the map of the site: a page in the nav is reachable from it."""
    nav = re.findall(r":\s*([\w./-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(encoding="utf-8"),
                     re.M)
    linked = {target.partition("#")[0] for _, target in _links(DOCS / "index.md")}
    missing = [page for page in nav if page != "index.md" and page not in linked]
    assert not missing, f"docs/index.md links none of these pages of the nav: {missing}"
