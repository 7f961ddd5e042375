"""Every code block of the documentation runs (or is parsed / checked) in its home session.

Which blocks a session runs follows from what is installed: no plugin -> ``core``; one plugin ->
that plugin's session; several -> ``integration``. See ``tests/docs/_blocks.py`` for the marks.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from ._blocks import PLUGINS, PYTHON, REPO, SHELL, SIGNATURE, Block, all_blocks

THIRD_PARTY = {  # what the docs may tell a reader to pip install besides our distributions
    "openai", "anthropic", "google-genai", "fastapi", "uvicorn", "langchain-core",
    "langchain-community", "tiktoken", "mcp", "nox", "uv",
}


def _session() -> str:
    installed = sorted({ep.name for ep in entry_points(group="toolregistry.plugins")}
                       & set(PLUGINS))
    if not installed:
        return "core"
    return installed[0] if len(installed) == 1 else "integration"


SESSION = _session()
BLOCKS = list(all_blocks())
HERE_PAGES = sorted({b.page for b in BLOCKS if b.home == SESSION})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Page:
    """One page's run in this session: its folder, namespace, background processes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.printed = ""
        self.ports: dict[str, str] = {}
        self.processes: list[subprocess.Popen[bytes]] = []

    def text(self, code: str) -> str:
        for old, new in self.ports.items():
            code = re.sub(rf"\b{old}\b", new, code)
        return code

    def namespace(self, block: Block) -> dict[str, Any]:
        key = "fresh" if "fresh" in block.options else "page"
        if key == "fresh" or key not in self.namespaces:
            # A real module, as a script's __main__ is: libraries that look up a class's
            # module in sys.modules (pydantic, langchain) find its globals.
            module = types.ModuleType(f"__docs_{key}__")
            sys.modules[module.__name__] = module
            self.namespaces[key] = module.__dict__
        return self.namespaces[key]

    def close(self) -> None:
        for key, namespace in self.namespaces.items():
            sys.modules.pop(f"__docs_{key}__", None)
            for value in list(namespace.values()):
                if type(value).__name__ == "ToolRegistry":
                    value.close()
        for proc in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _exec(block: Block, page: Page) -> None:
    namespace = page.namespace(block)
    code = page.text(block.code)
    compiled = compile(code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if compiled.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(compiled, namespace))
        else:
            exec(compiled, namespace)
    page.printed = out.getvalue()
    sys.stdout.write(page.printed)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _commands(code: str) -> Iterator[str]:
    for raw in code.splitlines():
        line = raw.strip().removeprefix("$ ")
        if line and not line.startswith("#"):
            yield line.split(" #")[0].strip()


def _check_shell(block: Block) -> None:
    extras = tomllib.loads((REPO / "core/pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    ours = {"toolregistry", *(f"toolregistry-{p}" for p in PLUGINS)}
    for line in _commands(block.code):
        words = shlex.split(line)
        if "pip" in words and "install" in words:
            args = words[words.index("install") + 1:]
            for before, word in zip(["", *args], args):
                if word.startswith("-") or "/" in word or before in {"-r", "-c", "-e"}:
                    continue
                m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?(?:[<>=!~].*)?", word)
                assert m, f"{block.where}: cannot read the requirement {word!r}"
                name = m[1].lower()
                assert name in ours | THIRD_PARTY, (
                    f"{block.where}: `pip install {word}`: {name} is neither a distribution of "
                    f"this repository ({sorted(ours)}) nor a known third-party one")
                if name == "toolregistry" and m[2]:
                    unknown = set(m[2].split(",")) - set(extras)
                    assert not unknown, f"{block.where}: toolregistry has no extra {unknown}"
        for word in words:
            if re.fullmatch(r"[\w./-]+\.(py|toml|txt|yaml|json)", word) and "/" in word \
                    and not word.startswith("/"):
                assert (REPO / word).exists() or "run" in block.options, (
                    f"{block.where}: `{line}` names {word}, which does not exist")


def _run_shell(block: Block, page: Page) -> None:
    for line in _commands(page.text(block.code)):
        proc = subprocess.run(line, shell=True, cwd=page.folder, env=_env(),
                              capture_output=True, text=True, timeout=120)
        page.printed = proc.stdout
        sys.stdout.write(proc.stdout)
        assert proc.returncode == 0, (
            f"{block.where}: `{line}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")


def _background(block: Block, page: Page) -> None:
    port = block.options.get("port")
    if port:
        page.ports[port] = str(_free_port())
    (line,) = list(_commands(page.text(block.code)))
    log = page.folder / f".background-{len(page.processes)}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(line, shell=True, cwd=page.folder, env=_env(),
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    page.processes.append(proc)
    if port:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"{block.where}: `{line}` exited: {log.read_text()}"
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", int(page.ports[port])), timeout=1):
                break
            assert time.monotonic() < deadline, f"{block.where}: nothing listens on {port}"
            time.sleep(0.1)


def run_block(block: Block, page: Page) -> None:
    """Run one block the way its mark says."""
    mode = block.mode
    if mode == "file":
        target = page.folder / block.options["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page.text(block.code), encoding="utf-8")
    if block.lang in PYTHON and mode in {"compile", "file"}:
        code = block.code
        if SIGNATURE.fullmatch(code):  # a signature, shown without a body
            code = code.rstrip() + ": ...\n"
        compile(code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    elif block.lang in PYTHON:
        _exec(block, page)
    elif block.lang == "toml":
        tomllib.loads(block.code)
    elif block.lang == "json":
        json.loads(block.code)
    elif block.lang in SHELL:
        _check_shell(block)
        if mode == "run":
            _run_shell(block, page)
        elif mode == "background":
            _background(block, page)
    elif mode == "output":
        expected = " ".join(block.code.split())
        assert expected in " ".join(page.printed.split()), (
            f"{block.where}: the previous block did not print this; it printed:\n{page.printed}")


@pytest.mark.parametrize("page_name", HERE_PAGES)
def test_page_blocks(page_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's blocks of this session, in page order, in one folder and namespace."""
    blocks = [b for b in BLOCKS if b.page == page_name and b.home == SESSION]
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    # caches a page's code writes by default (discovery's embeddings) stay in the test's folder
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache-home"))
    page = Page(tmp_path)
    try:
        for block in blocks:
            try:
                run_block(block, page)
            except Exception as exc:
                raise AssertionError(
                    f"{block.where} ({block.lang}, {block.mode}): {type(exc).__name__}: {exc}\n"
                    "A block that cannot run as it stands takes a mark on the line above its "
                    "fence: <!-- doctest: compile reason=\"...\" --> (docs/contributing.md)"
                ) from exc
    finally:
        page.close()
        for name in [m for m, mod in sys.modules.items()
                     if str(getattr(mod, "__file__", "") or "").startswith(str(tmp_path))]:
            del sys.modules[name]


def test_this_session_runs_blocks_or_says_why() -> None:
    """Not a silent pass: print what this session runs, and that every block has a home."""
    homes = {b.home for b in BLOCKS}
    unknown = homes - {"core", "integration", "docs", *PLUGINS}
    assert not unknown, f"blocks whose home is no session: {unknown}"
    mine = [b for b in BLOCKS if b.home == SESSION]
    print(f"session {SESSION}: {len(mine)} of {len(BLOCKS)} documentation blocks, "
          f"pages {HERE_PAGES}")
