"""With ``inline-calls`` on, sync calls with a deadline on the main thread run inline and the
watchdog stops them on time (a tool that resists is the exception: see test_deadlines.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from toolregistry import ToolContext, ToolRegistry, _watchdog

pytestmark = pytest.mark.skipif(not hasattr(__import__("signal"), "SIGRTMIN"),
                                reason="needs real-time signals")


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry(inline_calls=True)  # the opt-in; off by default
    yield reg
    reg.close()


def test_calls_run_on_the_calling_thread_and_blocking_ones_stop_on_time(
        registry: ToolRegistry) -> None:
    seen: list[int] = []

    @registry.register
    def where() -> str:
        seen.append(threading.get_ident())
        return "here"

    @registry.register
    def nap(seconds: float, ctx: ToolContext) -> str:
        time.sleep(seconds)
        return "woke"

    @registry.register
    def spin(seconds: float) -> int:
        end, n = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            n += 1
        return n

    assert registry.invoke("where").text == "here"
    assert seen == [threading.get_ident()]
    for name in ("nap", "spin"):
        started = time.monotonic()
        result = registry.invoke(name, {"seconds": 5}, timeout=0.3)
        assert result.error_kind == "timeout", result.text
        assert time.monotonic() - started < 1.5
    assert registry.invoke("nap", {"seconds": 0.01}, timeout=5).text == "woke"


def test_an_outer_deadline_passes_through_inner_calls(registry: ToolRegistry) -> None:
    @registry.register
    def nap(seconds: float) -> str:
        time.sleep(seconds)
        return "woke"

    @registry.register
    def outer() -> str:
        return registry.invoke("nap", {"seconds": 5}, timeout=30).text

    started = time.monotonic()
    result = registry.invoke("outer", timeout=0.3)
    assert result.error_kind == "timeout" and "'outer'" in result.text
    assert time.monotonic() - started < 1.5
    assert not _watchdog.outer_fired()
    assert registry.invoke("nap", {"seconds": 0}, timeout=1).text == "woke"


def test_other_threads_and_opt_out_use_a_worker(tmp_path: object) -> None:
    code = textwrap.dedent('''
        import threading, time
        from toolregistry import ToolRegistry
        r = ToolRegistry()
        seen = []
        @r.register
        def where() -> str:
            seen.append(threading.get_ident())
            return "ok"
        r.invoke("where")
        @r.register
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"
        t = time.monotonic()
        res = r.invoke("nap", {"seconds": 3}, timeout=0.2)
        print(seen[0] != threading.get_ident(), res.error_kind, time.monotonic() - t < 1.5)
        r.close()
    ''')
    env = {**os.environ, "TOOLREGISTRY_INLINE_CALLS": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.stdout.split() == ["True", "timeout", "True"], out.stderr


def test_a_signal_the_application_uses_is_left_alone() -> None:
    code = textwrap.dedent('''
        import signal, threading
        signal.signal(signal.SIGRTMIN + 7, lambda *a: None)
        from toolregistry import ToolRegistry
        r = ToolRegistry(inline_calls=True)
        seen = []
        @r.register
        def where() -> str:
            seen.append(threading.get_ident())
            return "ok"
        print(r.invoke("where").text, seen[0] != threading.get_ident())
        r.close()
    ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["ok", "True"], out.stderr


def test_a_forked_child_gets_its_own_watchdog() -> None:
    code = textwrap.dedent('''
        import os, time
        from toolregistry import ToolRegistry
        r = ToolRegistry(inline_calls=True)
        @r.register
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"
        r.invoke("nap", {"seconds": 0}, timeout=1)  # the parent's watchdog starts
        pid = os.fork()
        if pid == 0:
            t = time.monotonic()
            res = r.invoke("nap", {"seconds": 5}, timeout=0.2)
            os._exit(0 if res.error_kind == "timeout" and time.monotonic() - t < 1.5 else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    ''')
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == "0", out.stderr


def test_many_short_deadlines_never_leak_a_cancellation(registry: ToolRegistry) -> None:
    @registry.register
    def quick(seconds: float) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        return "done"

    kinds = {registry.invoke("quick", {"seconds": s}, timeout=0.002).error_kind
             for s in [0.0005, 0.001, 0.0019, 0.002, 0.0021, 0.003] * 30}
    assert kinds <= {None, "timeout"}
    assert registry.invoke("quick", {"seconds": 0}, timeout=5).text == "done"
