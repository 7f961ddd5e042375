"""The documentation keeps up with the code: every hook documented with its exact signature."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from toolregistry import hookspecs
from toolregistry._plugins import HOOK_NAMES

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", HOOK_NAMES)
def test_every_hook_is_documented_with_its_signature(name: str) -> None:
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    signature = str(inspect.signature(getattr(hookspecs, name))).replace("'", "")
    assert f"def {name}{signature}" in text, f"docs/hooks.md lacks `def {name}{signature}`"
    assert f"## {name}" in text


def test_every_docs_page_is_in_the_site_navigation() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        assert page.name in nav, f"{page.name} is not in mkdocs.yml nav"


def test_every_hook_method_of_the_facade_states_its_error_policy() -> None:
    from toolregistry._hooks import Hooks
    from toolregistry._plugins import HOST_HOOKS

    members = {n: f for cls in reversed(Hooks.__mro__) for n, f in vars(cls).items()}
    public = [n for n, f in members.items()
              if callable(f) and not n.startswith("_") and n != "refresh"]
    hooks = set(HOOK_NAMES) - set(HOST_HOOKS)  # asked one plugin at a time by the host
    assert hooks <= set(public), sorted(hooks - set(public))
    for name in public:
        doc = inspect.getdoc(getattr(Hooks, name)) or ""
        assert "Error policy:" in doc, f"Hooks.{name} does not state its error policy"


def test_plugins_import_hookimpl_only_from_toolregistry_plugin() -> None:
    import re

    root = DOCS.parent / "plugins"
    pattern = re.compile(r"^from (\S+) import .*\bhookimpl\b", re.M)
    sources = sorted(root.glob("*/src/**/*.py"))
    assert sources
    for path in sources:
        for module in pattern.findall(path.read_text(encoding="utf-8")):
            assert module == "toolregistry.plugin", f"{path}: hookimpl from {module}"


def test_the_progress_example_of_tools_md_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "tools.md").read_text(encoding="utf-8"),
                        re.S)
    block = next(b for b in blocks if "reporting_progress" in b)
    exec(compile(block, "tools.md:progress", "exec"), {"__name__": "docs_example"})
    assert capsys.readouterr().out.splitlines() == ["1 3 chunk 1", "2 3 chunk 2", "3 3 chunk 3"]
