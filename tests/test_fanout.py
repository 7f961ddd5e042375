"""Tool-list changes shared through the store (``share_changes``): what one registry changes,
every other registry on the same SQLite file or PostgreSQL database hears; what a registry can
apply by itself (disable, enable, a reviewed change) it applies; nothing echoes back."""

from __future__ import annotations

import queue
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolregistry import ToolRegistry
from toolregistry.errors import ConfigError
from toolregistry.hookspecs import hookimpl
from toolregistry.testing import PostgresCluster
from toolregistry.types import PendingChange


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    return str(request.getfixturevalue("postgres_url"))


def _eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError("not within the time allowed")
        time.sleep(0.02)


class HeldBack:
    """A source holding its tool's changed definition back until it is reviewed."""

    def __init__(self) -> None:
        self.pending: str | None = "v2"
        self.reviews: list[tuple[str, str]] = []

    @hookimpl
    def pending_changes(self, registry: ToolRegistry) -> list[PendingChange]:
        if self.pending is None:
            return []
        return [PendingChange("fetch", self.pending, "v1", "Fetch.", {"type": "object"}, (),
                              plugin="held")]

    @hookimpl
    def review_change(self, tool: str, version: str, action: str) -> bool | None:
        if version != self.pending:
            raise LookupError(f"no pending version {version}")
        self.reviews.append((action, version))
        self.pending = None
        return True


@pytest.fixture
def pair(store: str) -> Iterator[tuple[ToolRegistry, ToolRegistry, HeldBack, HeldBack]]:
    held_a, held_b = HeldBack(), HeldBack()
    a = ToolRegistry("a", store=store, plugins=[held_a])
    b = ToolRegistry("b", store=store, plugins=[held_b])
    try:
        for reg in (a, b):
            reg.register(lambda x: x, name="fetch")
            reg.register(lambda x: x, name="send", namespace="mail")
        yield a, b, held_a, held_b
    finally:
        a.close()
        b.close()


def test_a_change_on_one_registry_is_heard_and_applied_by_the_other(
        pair: tuple[ToolRegistry, ToolRegistry, HeldBack, HeldBack]) -> None:
    a, b, held_a, held_b = pair
    heard_a: list[object] = []
    heard_b: list[object] = []
    a.share_changes(poll=0.05).on_remote(heard_a.append)
    b.share_changes(poll=0.05).on_remote(heard_b.append)
    assert a.share_changes() is a.shared_changes  # once per registry

    a.disable("fetch", reason="maintenance")
    _eventually(lambda: not b.is_enabled("fetch"))
    assert b.disabled_reason("fetch") == "maintenance"
    a.disable("mail")  # a namespace
    _eventually(lambda: not b.is_enabled("mail-send"))
    a.enable("fetch")
    _eventually(lambda: b.is_enabled("fetch"))

    a.register(lambda: "new", name="only_on_a")  # heard, not replayed: b has no such tool
    _eventually(lambda: any(getattr(c, "kind", "") == "register" for c in heard_b))
    assert "only_on_a" not in b
    change = next(c for c in heard_b if getattr(c, "kind", "") == "register")
    assert change.names == ("only_on_a",)  # type: ignore[attr-defined]
    assert change.origin == a.shared_changes.origin  # type: ignore[attr-defined]

    a.accept_change("fetch", "v2")  # a reviewed change: adopted on b too
    _eventually(lambda: held_b.reviews == [("accept", "v2")])
    assert held_a.reviews == [("accept", "v2")]

    time.sleep(0.5)
    # b applied what it heard without publishing it again: a heard nothing back.
    assert heard_a == []
    assert [getattr(c, "kind", "") for c in heard_b] == [
        "disable", "disable", "enable", "register", "review"]


def test_a_registry_without_a_store_cannot_share(registry: ToolRegistry) -> None:
    with pytest.raises(ConfigError, match="needs a store"):
        registry.share_changes()


LISTENER = """
import sys, time
from toolregistry import ToolRegistry
reg = ToolRegistry(store=sys.argv[1])
reg.register(lambda x: x, name="fetch")
shared = reg.share_changes()
shared.on_remote(lambda c: print(c.kind, *c.names, flush=True))
print("ready", flush=True)
sys.stdin.readline()
reg.close()
"""


def test_a_listener_in_another_process_hears_again_after_the_server_came_back(
        tmp_path: Path) -> None:
    """PostgreSQL stopped and started under a listening process: it reconnects, is told to
    look again (``resync``: what was published meanwhile is lost) and hears what follows."""
    from toolregistry.testing import _postgres_bindir

    bindir = _postgres_bindir()
    if bindir is None:
        pytest.skip("needs PostgreSQL's initdb and pg_ctl")
    cluster = PostgresCluster(bindir)  # a cluster of its own: this test stops it
    proc = None
    try:
        url = cluster.new_database()
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(LISTENER), url],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdin is not None
        lines: queue.Queue[str] = queue.Queue()
        out = proc.stdout

        def read() -> None:
            for line in out:
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()

        def heard() -> list[str]:
            return lines.get(timeout=30).split()

        assert heard() == ["ready"]
        with ToolRegistry(store=url) as here:
            here.register(lambda x: x, name="fetch")
            here.share_changes()
            here.disable("fetch")
            assert heard() == ["disable", "fetch"]
            cluster.stop_server()
            here.enable("fetch")  # published nowhere: logged, not raised
            cluster.start_server()
            assert heard() == ["resync"]
            here.disable("fetch")
            assert heard() == ["disable", "fetch"]
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(30) == 0
    finally:
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        cluster.stop()
