"""The embeddings cache on the registry's store: the second worker (another process, as on
another host) embeds none of the tools the first one embedded; a cache file named in the
configuration stays that file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

EMBEDDER = textwrap.dedent('''
    import hashlib

    class HashEmbedder:
        """Deterministic 32-dimensional vectors from a text's hash."""

        model_id = "hash-embedder-1"

        def __call__(self, texts):
            return [[b / 255 for b in hashlib.sha256(t.encode()).digest()] for t in texts]
''')

WORKER = textwrap.dedent('''
    import json, sys
    from toolregistry import ToolRegistry
    from toolregistry_discovery._plugin import get_discoverer

    registry = ToolRegistry(config=sys.argv[1])
    for i in range(12):
        def tool(x: int) -> int:
            return x
        tool.__doc__ = f"Tool number {i}: does thing {i} to the garden."
        registry.register(tool, name=f"tool_{i}")
    registry.enable_tool_discovery()
    discoverer = get_discoverer(registry)
    discoverer.discover("water the garden")
    print(json.dumps(discoverer.semantic.stats), flush=True)
    registry.close()
''')


@pytest.fixture
def store(any_store_url: str) -> str:
    return any_store_url


def run_worker(tmp_path: Path, name: str, store: str, cache: str | None = None,
               default: bool = False) -> dict[str, Any]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "hashembed.py").write_text(EMBEDDER, encoding="utf-8")
    table = "" if default else 'semantic = true\nembedder = "hashembed:HashEmbedder"\n'
    if cache is not None:
        table += f"embedding-cache = {json.dumps(cache)}\n"
    cfg = folder / "pyproject.toml"
    cfg.write_text(f'[tool.toolregistry]\nstore = "{store}"\n'
                   f"[tool.toolregistry.plugins.discovery]\n{table}", encoding="utf-8")
    # Each worker its own user cache folder: only the store can share the vectors.
    env = {**os.environ, "PYTHONPATH": str(folder), "XDG_CACHE_HOME": str(folder / "cache")}
    done = subprocess.run([sys.executable, "-c", WORKER, str(cfg)], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    stats: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return stats


def test_the_second_worker_embeds_nothing(tmp_path: Path, store: str) -> None:
    first = run_worker(tmp_path, "one", store)
    second = run_worker(tmp_path, "two", store)
    assert first == {"embedded": 12, "from_cache": 0}
    assert second == {"embedded": 0, "from_cache": 12}


def test_the_default_hybrid_shares_the_store_too(tmp_path: Path) -> None:
    # No semantic option at all: hybrid by default (the extra is installed in the tests),
    # opened at the first search, with its vectors on the store like a configured one's.
    store = f"sqlite:///{tmp_path}/state.db"
    first = run_worker(tmp_path, "one", store, default=True)
    second = run_worker(tmp_path, "two", store, default=True)
    assert first == {"embedded": 12, "from_cache": 0}
    assert second == {"embedded": 0, "from_cache": 12}


def test_a_cache_file_in_the_configuration_stays_that_file(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/state.db"
    first = run_worker(tmp_path, "one", store, cache=str(tmp_path / "one.sqlite3"))
    second = run_worker(tmp_path, "two", store, cache=str(tmp_path / "two.sqlite3"))
    assert first == second == {"embedded": 12, "from_cache": 0}
    assert (tmp_path / "one.sqlite3").exists()
