"""The Python examples of docs/discovery.md and docs/discovery.zh.md run, in page order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("page", ["discovery.md", "discovery.zh.md"])
def test_docs_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the embedding cache's default home
    path = DOCS / page
    if not path.exists():  # the plugin tested outside this repository
        pytest.skip(f"{path} not present")
    blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for block in blocks:
        exec(compile(block, f"{page}:example", "exec"), namespace)
    discoverer = namespace["discoverer"]
    assert discoverer.discover("read text file")[0]["name"] == "read_file"  # type: ignore[attr-defined]
    hybrid = namespace["hybrid"]
    assert hybrid.discover("sum of 3 and 4")[0]["name"] == "add"  # type: ignore[attr-defined]
    lexical = namespace["lexical"]
    assert lexical.discover("sum of 3 and 4") == []  # type: ignore[attr-defined]
    assert hybrid.discover("show me what the document says")[0]["name"] == "read_file"  # type: ignore[attr-defined]
    assert (tmp_path / "toolregistry" / "discovery-embeddings.sqlite3").exists()
