"""A served registry scaled out: 1 worker, 2 workers, 2 "hosts" x 2 workers, under 200
concurrent MCP clients; and what one stateful call costs on a SQLite store against a
PostgreSQL one.

    python benchmarks/serve_scale_bench.py [--clients 200] [--calls 5] [--rounds 3]
    python benchmarks/serve_scale_bench.py --quick        # 40 clients, 1 round: a smoke run
    python benchmarks/serve_scale_bench.py --postgres postgresql://u@host/db --png out.png

Scale: each topology is ``toolregistry serve`` (streamable HTTP, stateless) of a registry
holding ``echo(text) -> text``, started from its configuration exactly as a user would:

* ``1 worker``: one process;
* ``2 workers``: ``workers = 2`` (a supervisor and two worker processes on one port);
* ``2 hosts x 2``: two such supervisors on two ports; the
  clients alternate between the ports, as a load balancer in front of two hosts would.

Clients are the SDK's own (``mcp.Client``), all in this process, each on connections of its
own; every client makes ``--calls`` calls once all are connected. p50 / p99 are over every
call of every round, calls/s is calls over the time from the first call to the last answer
(median over rounds). On a machine with fewer cores than processes, the client process and
the workers share the same cores: the figures then show the cost of more processes, not
their gain (see benchmarks/README.md).

Stateful calls, in this process, on two registries sharing the store (as two workers do),
each call timed end to end, ``--stateful`` times (p50 / p99):

* ``budgeted call``: a tool with a call budget (one charge transaction under the budget lock);
* ``approval cycle``: a call held for approval by worker A, approved by worker B through
  ``registry.approvals``, resumed (and run) by A;
* ``spool write``: a 200 KB result spooled by A (the file and the handle index);
* ``spooled read``: B reads A's new handle (index lookup; on PostgreSQL the text is fetched
  from the store into B's spool folder), its last 20 lines.

``none`` is the same on one registry without a store (state in the process), for scale.
Without ``--postgres`` a throwaway cluster is started with ``initdb`` (PostgreSQL's binaries,
e.g. Debian's ``postgresql`` package) and removed afterwards; it runs with ``fsync=off``, so
its commits do not wait for the disk (the SQLite store's spool index and the discovery cache
do not either; budgets and approvals on SQLite do).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcp_serve_bench import load_clients  # the same clients as the single-server benchmark

TOOLS = '''
from toolregistry.decorators import tool

__all__ = ["echo"]


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text
'''

TOPOLOGIES = {"1 worker": (1, 1), "2 workers": (1, 2), "2 hosts x 2": (2, 2)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- scale ------------------------------------------------------------------------------------

def _host(folder: Path, workers: int, store: str | None) -> tuple[Path, int]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_tools.py").write_text(TOOLS, encoding="utf-8")
    port = _free_port()
    store_line = f"store = {json.dumps(store)}\n" if store else ""
    config = folder / "pyproject.toml"
    config.write_text(textwrap.dedent(f'''
        [tool.toolregistry]
        {store_line}
        [[tool.toolregistry.sources]]
        kind = "python"
        target = "bench_tools"

        [tool.toolregistry.plugins.mcp.serve]
        transport = "streamable-http"
        stateless = true
        workers = {workers}
        host = "127.0.0.1"
        port = {port}
    '''), encoding="utf-8")
    return config, port


@contextlib.contextmanager
def _served(config: Path, port: int, workers: int) -> Iterator[str]:
    """``toolregistry serve`` of ``config``; its URL once every worker is up; stopped after
    (SIGTERM to the supervisor, which stops its workers; anything left is killed)."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-m", "toolregistry.cli", "--config", str(config),
                             "serve"], cwd=config.parent, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(config.parent)})
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode} ({config})")
            with socket.socket() as s:
                up = s.connect_ex(("127.0.0.1", port)) == 0
            spawned = [c for c in psutil.Process(proc.pid).children()
                       if "spawn_main" in " ".join(c.cmdline())]
            if up and (workers == 1 or len(spawned) >= workers):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not come up on port {port}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        family = [proc.pid]
        with contextlib.suppress(psutil.Error):
            family += [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        for pid in family[1:]:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


async def _load(urls: list[str], clients: int, calls: int) -> tuple[list[float], float]:
    """Every call's latency, and the seconds from the first call to the last answer."""
    marks: list[float] = []
    latencies, _ = await load_clients(urls, clients, calls, marks=marks)
    return latencies, marks[1] - marks[0]


def scale(folder: Path, store: str | None, clients: int, calls: int, rounds: int
          ) -> dict[str, dict[str, float]]:
    samples: dict[str, tuple[list[float], list[float]]] = {t: ([], []) for t in TOPOLOGIES}
    names = list(TOPOLOGIES)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            hosts, workers = TOPOLOGIES[name]
            print(f"[bench] round {r + 1}: {name}", file=sys.stderr, flush=True)
            configs = [_host(folder / f"r{r}-{name.replace(' ', '')}-{h}", workers,
                             store) for h in range(hosts)]
            with contextlib.ExitStack() as stack:
                urls = [stack.enter_context(_served(c, p, workers)) for c, p in configs]
                asyncio.run(_load(urls, min(clients, 20), 1))  # warm every worker up
                latencies, seconds = asyncio.run(_load(urls, clients, calls))
            samples[name][0].extend(latencies)
            samples[name][1].append(len(latencies) / seconds)
    return {name: {"processes": hosts * (workers + (workers > 1)),
                   "p50": _quantile(lat, 0.5), "p99": _quantile(lat, 0.99),
                   "rate": statistics.median(rates)}
            for name, (lat, rates) in samples.items()
            for hosts, workers in [TOPOLOGIES[name]]}


# -- stateful calls ---------------------------------------------------------------------------

def _registry(folder: Path, store: str | None) -> Any:
    import toolregistry_policy as tp
    from toolregistry import ToolMetadata, ToolRegistry

    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "pyproject.toml"
    config.write_text(f"[tool.toolregistry.plugins.spool]\nthreshold-tokens = 1000\n"
                      f"directory = {json.dumps(str(folder / 'spool'))}\n", encoding="utf-8")
    reg = ToolRegistry(config=config, store=store)
    reg.register(lambda: "ok", name="budgeted")
    reg.register(lambda: "sent", name="send")
    text = "".join(f"line {i:06d} {'x' * 60}\n" for i in range(3000))  # ~200 KB
    reg.register(lambda: text, name="big", metadata=ToolMetadata(too_long_to_file=True))
    tp.configure(reg, rules=[tp.Rule("ask", tools=["send"])],
                 budgets={"tools": {"budgeted": {"max-calls": 10**9}}})
    return reg


def stateful(folder: Path, store: str | None, n: int) -> dict[str, list[float]]:
    import toolregistry_spool as ts

    a = _registry(folder / "a", store)
    b = _registry(folder / "b", store) if store else a
    times: dict[str, list[float]] = {"budgeted call": [], "approval cycle": [],
                                     "spool write": [], "spooled read": []}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = fn()
        times[name].append(time.perf_counter() - start)
        return out

    def cycle() -> None:
        held = a.invoke("send", {})
        assert held.pending, held.text
        b.approvals.decide(held.approval.to_dict()["id"], "approve", by="bench")
        done = a.approvals.resume([held])
        assert done[0].ok, done[0].text

    def read(handle: str) -> None:
        page = ts.read_output(b, handle, tail=20)
        assert "line 002999" in page, page

    try:
        for i in range(n + 1):  # the first round warms up (imports, schemas, connections)
            assert timed("budgeted call", lambda: a.invoke("budgeted", {})).ok
            timed("approval cycle", cycle)
            handle = timed("spool write", lambda: a.invoke("big", {})).metadata["spool"]["handle"]
            timed("spooled read", functools.partial(read, handle))
            if i == 0:
                for kept in times.values():
                    kept.clear()
    finally:
        a.close()
        if b is not a:
            b.close()
    return times


# -- output -----------------------------------------------------------------------------------

def draw(png: Path, cores: int | None, scaled: dict[str, dict[str, float]],
         calls: dict[str, dict[str, list[float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = list(scaled)
    rates = [scaled[n]["rate"] for n in names]
    bars = left.bar(names, rates, color=["#4c72b0", "#55a868", "#c44e52"])
    for bar, name in zip(bars, names):
        left.annotate(f"p50 {scaled[name]['p50'] * 1e3:.0f} ms\np99 {scaled[name]['p99'] * 1e3:.0f} ms",
                      (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha="center", va="bottom", fontsize=8)
    left.set_ylabel("calls/s")
    left.set_title(f"echo under concurrent clients ({cores} cores)")
    left.set_ylim(0, max(rates) * 1.3)
    kinds = list(next(iter(calls.values())))
    backends = list(calls)
    width = 0.8 / len(backends)
    for i, backend in enumerate(backends):
        p50 = [statistics.median(calls[backend][k]) * 1e3 for k in kinds]
        right.bar([x + i * width for x in range(len(kinds))], p50, width, label=backend)
    right.set_xticks([x + width * (len(backends) - 1) / 2 for x in range(len(kinds))], kinds,
                     fontsize=8)
    right.set_ylabel("ms per call (p50)")
    right.set_title("one stateful call, by store")
    right.legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


@contextlib.contextmanager
def _postgres(url: str | None) -> Iterator[str | None]:
    """``url``, else a database on a throwaway cluster, else ``None`` (no PostgreSQL here)."""
    if url:
        yield url
        return
    from toolregistry.testing import PostgresCluster, _postgres_bindir

    bindir = _postgres_bindir()
    try:
        import psycopg  # noqa: F401
    except ImportError:
        bindir = None
    if bindir is None:
        print("[bench] no PostgreSQL (initdb and pg_ctl, psycopg): its column is left out; "
              "pass --postgres URL, or apt-get install -y postgresql", file=sys.stderr)
        yield None
        return
    cluster = PostgresCluster(bindir)
    try:
        yield cluster.new_database()
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 clients, 2 calls, 1 round")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5, help="calls per client")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stateful", type=int, default=100, help="stateful calls per kind")
    parser.add_argument("--postgres", default=None, metavar="URL",
                        help="an empty database (default: a throwaway local cluster)")
    parser.add_argument("--png", type=Path, default=None, help="draw the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.calls, args.rounds, args.stateful = 40, 2, 1, 10
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="serve-scale-") as tmp, \
            _postgres(args.postgres) as pg:
        folder = Path(tmp)
        scaled = scale(folder, pg, args.clients, args.calls, args.rounds)
        calls = {}
        for backend, store in (("none", None), ("sqlite", f"sqlite:///{folder}/state.db"),
                               ("postgresql", pg)):
            if backend == "postgresql" and pg is None:
                continue
            print(f"[bench] stateful calls: {backend}", file=sys.stderr, flush=True)
            calls[backend] = stateful(folder / backend, store, args.stateful)
    print(f"\nserve_scale_bench: {args.clients} concurrent clients x {args.calls} calls, "
          f"{args.rounds} round(s); {cores} cores; Python {sys.version.split()[0]}")
    print(f"{'topology':<14} {'processes':>9} {'p50':>8} {'p99':>8} {'calls/s':>8}")
    for name, row in scaled.items():
        print(f"{name:<14} {row['processes']:>9.0f} {row['p50'] * 1e3:>6.1f}ms "
              f"{row['p99'] * 1e3:>6.1f}ms {row['rate']:>8.0f}")
    print(f"\nstateful calls, {args.stateful} each: p50 / p99 (ms)")
    print(f"{'call':<16}" + "".join(f"{b:>18}" for b in calls))
    for kind in next(iter(calls.values())):
        cells = [f"{statistics.median(calls[b][kind]) * 1e3:.2f} / "
                 f"{_quantile(calls[b][kind], 0.99) * 1e3:.2f}" for b in calls]
        print(f"{kind:<16}" + "".join(f"{c:>18}" for c in cells))
    if args.png is not None:
        draw(args.png, cores, scaled, calls)
        print(f"\nfigure: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
