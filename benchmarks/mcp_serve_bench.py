"""A served registry against the bare MCP SDK server under load: 200 concurrent clients on
loopback calling a trivial tool over streamable HTTP, p50 / p99 per call.

    python benchmarks/mcp_serve_bench.py [--clients 200] [--calls 10] [--rounds 5] [--check]
    python benchmarks/mcp_serve_bench.py --quick      # 50 clients, 2 rounds: a smoke run
    python benchmarks/mcp_serve_bench.py --sides sdk,ours --rounds 9   # the target only

Target (issue 19 item 6): our p99 at most 1.2x the SDK's. Every server runs in its own
process under uvicorn (h11, no event-loop or parser extras) and serves one tool, the same
function ``echo(text) -> text``:

* ``sdk``: the SDK's low-level ``Server`` whose call handler calls ``echo`` right there, on
  the event loop (the least a server can do: the target's baseline);
* ``ours``: ``toolregistry_mcp.serve`` of a registry holding ``echo`` (validation, hooks, the
  access check, the per-call notification channel, the call's deadline -- so the sync tool
  runs on a worker thread --, the event store of resumable streams: everything a served call
  pays by default);
* ``ours+bearer``: the same with bearer-token authentication;
* ``sdk-tools``: the SDK's own ``MCPServer`` with ``@tool() def echo``, which also runs a sync
  tool on a worker thread (``anyio.to_thread``): for information, the SDK's way of serving the
  same tool;
* on request (``--sides``), to attribute a gap: ``ours-async`` (``async def echo``: no worker
  hop) and ``ours-noresume`` (``event_store="none"``: no resumable streams, so no priming event
  and no stored events per call).

Clients are the SDK's own (``mcp.Client``), all in this process, each on its own session;
every client makes ``--calls`` calls once all are connected, and none disconnects before all
are done. The servers take turns, the starting one rotating per round; figures are medians over
rounds, with the spread of the per-round p99. The server's CPU time per call while the clients
called (Linux ``/proc``) is the steadier figure on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SDK_SERVER = '''
import sys
import uvicorn
import mcp_types as types
from mcp.server.lowlevel import Server

def echo(text: str) -> str:
    """Echo the text."""
    return text

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(
        name="echo", description="Echo the text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"]})])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(
        type="text", text=echo(**params.arguments))])

server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
app = server.streamable_http_app(host="127.0.0.1")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
'''

SDK_MCPSERVER = '''
import sys
import uvicorn
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("sdk-tools")

@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text

app = mcp.streamable_http_app(host="127.0.0.1")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
'''

OUR_SERVER = '''
import json
import sys
from toolregistry import ToolRegistry
from toolregistry_mcp import serve

registry = ToolRegistry(name="ours")

@registry.register
def echo(text: str) -> str:
    """Echo the text."""
    return text

serve(registry, "streamable-http", port=int(sys.argv[1]), **json.loads(sys.argv[2]))
'''

TOKEN = "bench-token-0123456789abcdef"
SIDES = {
    "sdk": (SDK_SERVER, {}),
    "ours": (OUR_SERVER, {}),
    "ours+bearer": (OUR_SERVER, {"auth": "bearer",
                                 "tokens": [{"name": "bench", "env": "BENCH_TOKEN"}]}),
    "sdk-tools": (SDK_MCPSERVER, {}),
    # Not run by default (--sides): what the defaults cost, for attributing a gap.
    "ours-async": (OUR_SERVER.replace("def echo(", "async def echo("), {}),
    "ours-noresume": (OUR_SERVER, {"event_store": "none"}),
}
DEFAULT_SIDES = ("sdk", "ours", "ours+bearer", "sdk-tools")
LABELS = {"sdk": "bare SDK low-level Server", "ours": "toolregistry_mcp.serve",
          "ours+bearer": "toolregistry_mcp.serve, bearer auth",
          "sdk-tools": "SDK MCPServer @tool (sync, on a thread)",
          "ours-async": "serve, async def echo (no worker hop)",
          "ours-noresume": "serve, event_store='none' (no priming)"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(side: str, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    code, options = SIDES[side]
    script = folder / f"{side.replace('+', '_')}.py"
    script.write_text(code, encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port), json.dumps(options)],
                            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "BENCH_TOKEN": TOKEN})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        if proc.poll() is not None:
            raise RuntimeError(f"{side} server exited with {proc.returncode}")
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{side} server did not listen")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load_clients(url: str | Sequence[str], clients: int, calls: int,
                       headers: dict[str, str] | None = None, pid: int | None = None,
                       marks: list[float] | None = None) -> tuple[list[float], float | None]:
    """Every client's call latencies, and the server's CPU seconds while they were made
    (from the moment all clients are connected until the last call returned; Linux).
    Several URLs: client ``i`` calls ``url[i % len(url)]`` (a load balancer's round robin).
    ``marks`` receives ``time.perf_counter()`` at both of those moments."""
    urls = [url] if isinstance(url, str) else list(url)
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    latencies: list[float] = []
    connected = finished = 0
    all_in = asyncio.Event()
    all_done = asyncio.Event()
    cpu: list[float] = []
    measure = pid is not None and os.path.exists(f"/proc/{pid}/stat")

    async def one(i: int) -> None:
        nonlocal connected, finished
        async with create_mcp_http_client(headers=headers or None) as http, \
                Client(streamable_http_client(urls[i % len(urls)], http_client=http),
                       mode="legacy") as client:
            connected += 1
            if connected == clients:
                if marks is not None:
                    marks.append(time.perf_counter())
                if measure:
                    cpu.append(_cpu(pid))  # type: ignore[arg-type]
                all_in.set()
            await all_in.wait()
            for n in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("echo", {"text": f"{i}-{n}"})
                latencies.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
            finished += 1
            if finished == clients:
                if marks is not None:
                    marks.append(time.perf_counter())
                if measure:
                    cpu.append(_cpu(pid))  # type: ignore[arg-type]
                all_done.set()
            await all_done.wait()  # nobody disconnects while others still call

    await asyncio.gather(*(one(i) for i in range(clients)))
    return latencies, (cpu[1] - cpu[0] if len(cpu) == 2 else None)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _spread(values: list[float]) -> str:
    return f"{min(values) * 1e3:.0f}-{max(values) * 1e3:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10, help="calls per client per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sides", default=",".join(DEFAULT_SIDES),
                        help=f"servers to compare, 'sdk' among them, from {', '.join(SIDES)} "
                             f"(default: {','.join(DEFAULT_SIDES)})")
    parser.add_argument("--quick", action="store_true", help="50 clients, 2 rounds")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.rounds, args.calls = 50, 2, 5
    sides = [s for s in args.sides.split(",") if s]
    if "sdk" not in sides or any(s not in SIDES for s in sides):
        parser.error(f"--sides: names from {', '.join(SIDES)}, 'sdk' among them")
    keys = ("p50", "p99", "cpu")
    results: dict[str, dict[str, list[float]]] = {s: {k: [] for k in keys} for s in sides}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
        for r in range(args.rounds):
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                proc, port = _start(side, folder)
                try:
                    headers = {"Authorization": f"Bearer {TOKEN}"} if "bearer" in side else {}
                    url = f"http://127.0.0.1:{port}/mcp"
                    asyncio.run(load_clients(url, min(args.clients, 10), 2, headers))  # warm up
                    lat, cpu = asyncio.run(load_clients(url, args.clients, args.calls, headers,
                                                 proc.pid))
                finally:
                    _stop(proc)
                row = results[side]
                row["p50"].append(_quantile(lat, 0.50))
                row["p99"].append(_quantile(lat, 0.99))
                if cpu is not None:
                    row["cpu"].append(cpu / len(lat))
                print(f"round {r + 1} {side:<12} p50 {row['p50'][-1] * 1e3:7.2f} ms"
                      f"  p99 {row['p99'][-1] * 1e3:7.2f} ms"
                      + (f"  server CPU {cpu / len(lat) * 1e6:5.0f} us/call" if cpu else ""),
                      file=sys.stderr)
    load_after = os.getloadavg()
    med = {s: {k: statistics.median(v) if v else float("nan") for k, v in results[s].items()}
           for s in sides}
    base = med["sdk"]
    print(f"\n{args.clients} concurrent clients x {args.calls} calls, streamable HTTP on "
          f"loopback, medians of {args.rounds} interleaved rounds (spread: lowest-highest "
          f"round); load {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          f"({os.cpu_count()} CPUs)")
    print(f"| {'server':<40} | {'p50':>9} | {'p99':>9} | {'p99 spread':>11} | "
          f"{'p50 vs SDK':>10} | {'p99 vs SDK':>10} | {'server CPU/call':>15} | {'CPU vs SDK':>10} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 11}|{'-' * 13}|{'-' * 12}|{'-' * 12}|{'-' * 17}|"
          f"{'-' * 12}|")
    for side in sides:
        m = med[side]
        print(f"| {LABELS[side]:<40} | {m['p50'] * 1e3:6.1f} ms | {m['p99'] * 1e3:6.1f} ms | "
              f"{_spread(results[side]['p99']) + ' ms':>11} | {m['p50'] / base['p50']:9.2f}x | "
              f"{m['p99'] / base['p99']:9.2f}x | {m['cpu'] * 1e6:10.0f} us | "
              f"{m['cpu'] / base['cpu']:9.2f}x |")
    print("\nserver CPU/call: the server process's CPU time (all its threads) while the clients "
          "called, per call: steadier than latency on a loaded machine. The clients (this "
          "process) use about as much again, on the same CPUs.")
    if "ours" not in sides:
        return 0
    ok = med["ours"]["p99"] <= 1.2 * base["p99"]
    print(f"\ntarget p99 <= 1.2x the SDK's: {'met' if ok else 'NOT met'} "
          f"({med['ours']['p99'] / base['p99']:.2f}x)")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
