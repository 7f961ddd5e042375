"""A served registry against the bare MCP SDK server under load: 200 concurrent clients on
loopback calling a trivial tool over streamable HTTP, p50 / p99 per call.

    python benchmarks/mcp_serve_bench.py [--clients 200] [--calls 10] [--rounds 5] [--check]
    python benchmarks/mcp_serve_bench.py --quick      # 50 clients, 2 rounds: a smoke run

Target (issue 19 item 6): our p99 at most 1.2x the SDK's. Both servers run in their own
process under uvicorn with the same settings and serve one tool, ``echo(text) -> text``: the
SDK's low-level ``Server`` with its own handlers, and ``toolregistry_mcp.serve`` of a registry
holding the same function (validation, hooks, the access check, the per-call notification
channel: everything a served call pays). A third row serves the registry with bearer-token
authentication. Clients are the SDK's own (``mcp.Client``), all in this process, each on its
own session; every client makes ``--calls`` calls once all are connected. The servers take
turns, the starting one alternating per round; figures are medians over rounds.
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
from pathlib import Path

SDK_SERVER = '''
import sys
import uvicorn
import mcp_types as types
from mcp.server.lowlevel import Server

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(
        name="echo", description="Echo the text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"]})])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text",
                                                           text=params.arguments["text"])])

server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
app = server.streamable_http_app(host="127.0.0.1")
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
}


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


async def _load(url: str, clients: int, calls: int, headers: dict[str, str]) -> list[float]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    latencies: list[float] = []
    connected = 0
    all_in = asyncio.Event()

    async def one(i: int) -> None:
        nonlocal connected
        async with create_mcp_http_client(headers=headers or None) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            connected += 1
            if connected == clients:
                all_in.set()
            await all_in.wait()
            for n in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("echo", {"text": f"{i}-{n}"})
                latencies.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(result.content[0].text)

    await asyncio.gather(*(one(i) for i in range(clients)))
    return latencies


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10, help="calls per client per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50 clients, 2 rounds")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.rounds, args.calls = 50, 2, 5
    sides = list(SIDES)
    results: dict[str, dict[str, list[float]]] = {s: {"p50": [], "p99": []} for s in sides}
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
                    asyncio.run(_load(url, min(args.clients, 10), 2, headers))  # warm up
                    lat = asyncio.run(_load(url, args.clients, args.calls, headers))
                finally:
                    _stop(proc)
                results[side]["p50"].append(_quantile(lat, 0.50))
                results[side]["p99"].append(_quantile(lat, 0.99))
                print(f"round {r + 1} {side:<12} p50 {results[side]['p50'][-1] * 1e3:7.2f} ms"
                      f"  p99 {results[side]['p99'][-1] * 1e3:7.2f} ms", file=sys.stderr)
    med = {s: {k: statistics.median(v) for k, v in results[s].items()} for s in sides}
    base = med["sdk"]
    print(f"\n{args.clients} concurrent clients x {args.calls} calls, streamable HTTP on "
          f"loopback, median of {args.rounds} rounds")
    print(f"| {'server':<40} | {'p50':>9} | {'p99':>9} | {'p50 vs SDK':>10} | "
          f"{'p99 vs SDK':>10} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 12}|")
    labels = {"sdk": "bare SDK low-level Server", "ours": "toolregistry_mcp.serve",
              "ours+bearer": "toolregistry_mcp.serve, bearer auth"}
    for side in sides:
        m = med[side]
        print(f"| {labels[side]:<40} | {m['p50'] * 1e3:6.2f} ms | {m['p99'] * 1e3:6.2f} ms | "
              f"{m['p50'] / base['p50']:9.2f}x | {m['p99'] / base['p99']:9.2f}x |")
    ok = med["ours"]["p99"] <= 1.2 * base["p99"]
    print(f"\ntarget p99 <= 1.2x the SDK's: {'met' if ok else 'NOT met'} "
          f"({med['ours']['p99'] / base['p99']:.2f}x)")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
