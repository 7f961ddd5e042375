"""The inspector's performance targets (issue 23).

Run: ``python benchmarks/inspector_bench.py [--quick]`` with an interpreter that has ``core``
and ``plugins/inspector`` installed (``nox -s bench`` has both).

* **log overhead**: ``registry.invoke`` of a trivial tool, inline on the calling thread, in
  four registries of one process: the log off (``log = false``: the plugin loaded, observing
  nothing), a no-op call observer (what the kernel's observer seam itself costs), the log in
  memory, the log in memory and written to an SQLite file. Rounds are interleaved; the table
  gives the median µs per call and what each adds to "log off". The log's own work is the
  difference to the no-op observer, and is also timed alone (``call_started`` +
  ``call_finished`` of the log's observer on one call, no registry): target ≤ 5 µs.
* **1,000 calls/s**: calls paced at 1,000 per second, in one-second turns alternating between
  a registry with the log off and one with the log file: the latency of every call (median,
  p99 per side; what the log adds at that rate), and after the last call how long until every
  call is in the file (the writer keeps up when this stays small and no call is missing).
* **log pages**: over a log-db of 100,000 calls, the server-side time of the log page (the
  newest 200, an older page, a time-and-tool filter), the stats page (percentiles over the
  100,000) and what one open page's event stream reads per look at 1,000 calls/s (500 new
  calls).
* **live updates**: calls paced at 1,000 per second into a log file while an inspector
  serves it and one open page's event stream reads them over HTTP: the lag from a call's end
  to its event at the reader (median, p99, max) and whether every call arrived (the stream
  keeps up).
* **tools page**: the server-side time to render the tools page of a registry of 10,000
  tools (target ≤ 300 ms), median of several requests through the ASGI app in process
  (the whole app: token check, filtering, the first page of 100 rows, HTML).
"""

from __future__ import annotations

import argparse
import contextvars
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class _Noop:
    def call_started(self, call: Any) -> None:
        return None

    def call_finished(self, call: Any, result: Any, token: Any) -> None:
        return None


class _NoopPlugin:
    """A call observer that does nothing: the kernel's seam alone."""

    def __init__(self) -> None:
        from toolregistry.plugin import hookimpl

        def call_observer(tool: Any) -> _Noop:
            return _Noop()

        self.call_observer = hookimpl(call_observer)


def _registry(folder: Path, table: str, plugins: tuple[Any, ...] = ()) -> Any:
    from toolregistry import ToolRegistry

    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "pyproject.toml"
    config.write_text("[tool.toolregistry]\ninline-calls = true\n"
                      "[tool.toolregistry.plugins.inspector]\n" + table, encoding="utf-8")
    registry = ToolRegistry(config=config, plugins=plugins)

    @registry.register
    def echo(text: str, n: int = 1) -> str:
        """Echo."""
        return text

    registry.invoke("echo", {"text": "warm"})
    return registry


def _per_call(registry: Any, calls: int) -> float:
    invoke = registry.invoke
    args = {"text": "hello", "n": 2}
    start = time.perf_counter()
    for _ in range(calls):
        invoke("echo", args, call_id="c")
    return (time.perf_counter() - start) / calls * 1e6


def log_overhead(root: Path, rounds: int, calls: int) -> list[tuple[str, float, float]]:
    sides: dict[str, Any] = {
        "log off": _registry(root / "off", "log = false\n"),
        "no-op observer (kernel seam)": _registry(root / "noop", "log = false\n",
                                                  (_NoopPlugin(),)),
        "log in memory": _registry(root / "mem", "log = true\n"),
        "log + SQLite file": _registry(root / "db", 'log-db = "calls.sqlite"\n'),
    }
    times: dict[str, list[float]] = {k: [] for k in sides}
    order = list(sides)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            times[name].append(_per_call(sides[name], calls))
    for registry in sides.values():
        registry.close()
    base = statistics.median(times["log off"])
    return [(name, statistics.median(t), statistics.median(t) - base) for name, t in times.items()]


def observer_alone(rounds: int, calls: int, watching: bool = False) -> float:
    """µs per call of the log's observer (``call_started`` + ``call_finished``), median;
    ``watching``: while an inspector shows the calls in flight."""
    from toolregistry import ToolCall, ToolResult
    from toolregistry_inspector import ExecutionLog

    log = ExecutionLog(10_000)
    if watching:
        log.watch_running()
    observer = log.observer
    call = ToolCall(name="echo", arguments={"text": "hello", "n": 2}, id="c")
    result = ToolResult(call_id="c", name="echo", content="hello", duration=1e-5)
    started, finished = observer.call_started, observer.call_finished
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        if watching:  # as the kernel does: call_started in the call's own context
            for _ in range(calls):
                finished(call, result, contextvars.copy_context().run(started, call))
        else:
            for _ in range(calls):
                finished(call, result, started(call))
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def _pace(start: float, i: int, rate: int) -> bool:
    """Wait for the turn of call ``i`` of a run at ``rate`` calls per second that began at
    ``start``; True when that turn is more than 50 ms past."""
    due = start + i / rate
    now = time.perf_counter()
    if now < due:
        time.sleep(due - now)
        return False
    return now - due > 0.05


def paced(root: Path, seconds: float, rate: int) -> tuple[dict[str, float], list[tuple[Any, ...]]]:
    """Calls paced at ``rate`` per second, in one-second turns alternating between a registry
    with the log off and one with the log written to a file: every call must reach the file,
    and the latency of each call is timed (median and p99 per side)."""
    from toolregistry_inspector import execution_log, query_log

    sides = {"log off": _registry(root / "paced-off", "log = false\n"),
             "log + SQLite file": _registry(root / "paced", 'log-db = "calls.sqlite"\n')}
    log = execution_log(sides["log + SQLite file"])
    log.flush()
    first = (query_log(log.db, limit=1) or [None])[-1]
    latencies: dict[str, list[float]] = {k: [] for k in sides}
    late = 0
    sent_total = 0
    turn_start = time.perf_counter()
    for turn in range(int(seconds) * 2):
        name = list(sides)[turn % 2]
        invoke = sides[name].invoke
        start = time.perf_counter()
        for i in range(rate):
            late += _pace(start, i, rate)
            t0 = time.perf_counter()
            invoke("echo", {"text": f"call {i}"}, call_id=f"{turn}-{i}")
            latencies[name].append((time.perf_counter() - t0) * 1e6)
        if name == "log + SQLite file":
            sent_total += rate
    sent = time.perf_counter()
    log.flush()
    lag = time.perf_counter() - sent
    rows = query_log(log.db, after=first.seq if first else 0)
    elapsed = sent - turn_start
    for registry in sides.values():
        registry.close()
    summary = {"calls logged": sent_total, "rate": 2 * rate * int(seconds) / elapsed,
               "in file": len(rows), "flush lag ms": lag * 1000, "late calls": late}
    table = []
    for name, values in latencies.items():
        values.sort()
        table.append((name, statistics.median(values), values[int(len(values) * 0.99)]))
    return summary, table


def live_stream(root: Path, seconds: float, rate: int) -> dict[str, float]:
    """Calls paced at ``rate`` per second into a registry whose log is written to a file,
    with an inspector serving it and one open page's event stream (``/api/events``, read
    over HTTP on loopback by a thread of this process): the lag from each call's end to its
    event reaching the reader (median, p99, max), and whether every call arrived."""
    import http.client
    import json
    import threading
    from urllib.parse import urlsplit

    from toolregistry_inspector import execution_log, serve

    registry = _registry(root / "live", 'log-db = "live.sqlite"\n')
    server = serve(registry, port=0, token="bench-token-live", block=False, quiet=True)
    assert server is not None
    execution_log(registry).flush()
    total = int(seconds * rate)
    lags: dict[str, float] = {}
    ready, done = threading.Event(), threading.Event()
    where = urlsplit(server.url)

    def read() -> None:
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port,
                                          timeout=60)
        conn.request("GET", "/api/events", headers={
            "Authorization": "Bearer bench-token-live", "Host": where.netloc})
        response = conn.getresponse()
        event = ""
        try:
            while len(lags) < total:
                line = response.fp.readline()
                if not line:
                    break
                if line.startswith(b"retry:"):
                    ready.set()
                elif line.startswith(b"event: "):
                    event = line[7:].strip().decode()
                elif line.startswith(b"data: ") and event == "call":
                    e = json.loads(line[6:])
                    if str(e["call_id"]).startswith("live-"):
                        lags[e["call_id"]] = time.time() - (e["time"] + e["duration"])
        finally:
            conn.close()
            done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    ready.wait(30)
    time.sleep(LIVE_LOOK)  # the stream has looked once: it follows from the newest call
    invoke = registry.invoke
    start = time.perf_counter()
    for i in range(total):
        _pace(start, i, rate)
        invoke("echo", {"text": f"call {i}"}, call_id=f"live-{i}")
    sent = time.perf_counter() - start
    done.wait(30)
    server.close()
    registry.close()
    values = sorted(lags.values())
    if not values:
        values = [float("nan")]
    return {"calls": total, "rate": total / sent, "received": len(lags),
            "lag median ms": statistics.median(values) * 1000,
            "lag p99 ms": values[int(len(values) * 0.99)] * 1000,
            "lag max ms": values[-1] * 1000}


LIVE_LOOK = 0.5
"""Seconds between two looks of an event stream at the log (the app's ``LIVE_INTERVAL``)."""


async def _get(app: Any, path: str, query: str = "") -> int:
    """One GET through the ASGI app in process (no network, no client library); the status."""
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
             "query_string": query.encode(), "root_path": "", "scheme": "http",
             "http_version": "1.1",
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer bench-token")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


def log_pages(root: Path, calls: int, requests: int) -> list[tuple[Any, ...]]:
    """Server-side ms of the log's pages over a log-db of ``calls`` calls, and of what one
    page's event stream reads per look at 1,000 calls/s (the last 500 calls)."""
    import asyncio

    from toolregistry_inspector import create_app, execution_log
    from toolregistry_inspector._reads import read_log

    registry = _registry(root, 'log-db = "pages.sqlite"\nlog-size = 1000\n')
    for i in range(calls):
        registry.invoke("echo", {"text": "x", "n": i}, call_id=f"c{i}")
    log = execution_log(registry)
    log.flush(120)
    app = create_app(registry, token="bench-token")
    middle = calls // 2
    pages = [("/log", ""), ("/log", f"before={middle}"), ("/log", "since=1h&tool=echo"),
             ("/stats", "")]
    rows: list[tuple[Any, ...]] = []

    async def run() -> None:
        for path, query in pages:
            times = []
            for _ in range(requests + 1):
                start = time.perf_counter()
                status = await _get(app, path, query)
                times.append((time.perf_counter() - start) * 1000)
                if status != 200:
                    raise RuntimeError(f"{path}?{query} answered {status}")
            rows.append((f"{path}?{query}" if query else path, statistics.median(times[1:]),
                         max(times[1:])))

    asyncio.run(run())
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        got = read_log(log, after=calls - 500, limit=500)
        times.append((time.perf_counter() - start) * 1000)
        assert len(got) == 500
    rows.append(("event stream: 500 new calls", statistics.median(times), max(times)))
    registry.close()
    return rows


def tools_page(tools: int, requests: int) -> list[float]:
    import asyncio

    from toolregistry import Tool, ToolRegistry
    from toolregistry_inspector import create_app

    registry = ToolRegistry()
    params = {"type": "object", "properties": {"query": {"type": "string"}}}
    registry.register_tools([
        Tool(name=f"ns{i % 50}-tool_{i}", description=f"Tool number {i}: does thing {i}.",
             parameters=params, callable=lambda query="": query)
        for i in range(tools)])
    app = create_app(registry, token="bench-token")
    times: list[float] = []

    async def run() -> None:
        for _ in range(requests + 1):
            start = time.perf_counter()
            status = await _get(app, "/tools")
            times.append((time.perf_counter() - start) * 1000)
            if status != 200:
                raise RuntimeError(f"the tools page answered {status}")

    asyncio.run(run())
    registry.close()
    return times[1:]  # the first request builds the caches


def _table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    print(f"\n{title}")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        print(" | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=["log", "paced", "live", "page", "logpages"],
                        default=None)
    args = parser.parse_args()
    rounds, calls = (5, 2000) if args.quick else (15, 20000)
    steps: dict[str, Callable[[Path], None]] = {}

    def do_log(root: Path) -> None:
        rows = log_overhead(root, rounds, calls)
        _table(f"log overhead: registry.invoke, inline, median of {rounds} rounds x {calls} "
               "calls", ("registry", "µs per call", "added to 'log off' (µs)"), rows)
        own = observer_alone(rounds, calls * 5)
        watched = observer_alone(rounds, calls * 5, watching=True)
        seam = rows[1][1]
        print(f"the log over the no-op observer: {rows[2][1] - seam:.2f} µs (memory), "
              f"{rows[3][1] - seam:.2f} µs (+ file); the log's observer alone: {own:.2f} µs "
              f"({watched:.2f} µs while an inspector shows the calls in flight)")
        print(f"target: the log adds <= 5 µs per call -> {'MET' if own <= 5 else 'MISSED'}")

    def do_paced(root: Path) -> None:
        result, table = paced(root, 2.0 if args.quick else 6.0, 1000)
        _table("1,000 calls/s, one-second turns: log off / log + SQLite file",
               tuple(result), [tuple(result.values())])
        _table("latency per call at 1,000 calls/s (µs)", ("registry", "median", "p99"), table)
        added = table[1][1] - table[0][1]
        kept = result["in file"] == result["calls logged"] and result["flush lag ms"] < 1000
        print(f"the log + file adds {added:.2f} µs to the median call at 1,000 calls/s")
        print(f"target: every call in the file, written within 1 s -> "
              f"{'MET' if kept else 'MISSED'}; <= 5 µs added -> "
              f"{'MET' if added <= 5 else 'MISSED'}")

    def do_live(root: Path) -> None:
        result = live_stream(root, 3.0 if args.quick else 10.0, 1000)
        _table("live updates: 1,000 calls/s into a log file, one open page's event stream "
               "(HTTP on loopback)", tuple(result), [tuple(result.values())])
        kept = result["received"] == result["calls"] and result["lag p99 ms"] < 2000
        print(f"target: every call reaches the page, p99 lag < 2 s (the stream keeps up) -> "
              f"{'MET' if kept else 'MISSED'}")

    def do_page(root: Path) -> None:
        times = tools_page(10_000, 5 if args.quick else 15)
        median = statistics.median(times)
        _table("tools page, 10,000 tools, server-side (ASGI in process)",
               ("requests", "median ms", "max ms"), [(len(times), median, max(times))])
        print(f"target: <= 300 ms -> {'MET' if median <= 300 else 'MISSED'}")

    def do_log_pages(root: Path) -> None:
        calls = 20_000 if args.quick else 100_000
        rows = log_pages(root, calls, 3 if args.quick else 9)
        _table(f"log pages over {calls:,} logged calls in a log-db, server-side (ASGI in "
               "process)", ("page", "median ms", "max ms"), rows)
        worst = max(r[1] for r in rows)
        print(f"target: every page <= 300 ms -> {'MET' if worst <= 300 else 'MISSED'}")

    steps = {"log": do_log, "paced": do_paced, "live": do_live, "page": do_page,
             "logpages": do_log_pages}
    with tempfile.TemporaryDirectory() as tmp:
        for name, step in steps.items():
            if args.only in (None, name):
                step(Path(tmp))


if __name__ == "__main__":
    main()
