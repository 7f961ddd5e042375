"""toolregistry-mcp against the raw MCP SDK client: per-call overhead and registration time.

    python benchmarks/mcp_bench.py [--calls 100] [--rounds 15] [--tools 50] [--check]
    python benchmarks/mcp_bench.py --quick     # 3 short rounds: a smoke run

Targets (issue 6): a call through the registry costs at most 10% more than the same call
through the SDK's own ``ClientSession``; registering a 50-tool server costs at most 1.5x the
SDK's connect + initialize + tools/list. Both sides talk to the same server script over
stdio; every figure is the median of ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "tests" / "servers" / \
    "demo_server.py"


def _params(tools: int) -> object:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable,
                                 args=[str(SERVER), "--tools", str(tools)])


async def per_call(calls: int, rounds: int) -> dict[str, list[float]]:
    """Seconds per call_tool('echo'), every side connected at once and measured in
    interleaved batches (machine load drifts then hit every side alike)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from toolregistry_mcp import sources

    registry = _registry()
    registry.register_from_mcp(  # type: ignore[attr-defined]
        {"command": sys.executable, "args": [str(SERVER)]}, include=["echo"])
    client = sources(registry)[0].client  # type: ignore[arg-type]
    out: dict[str, list[float]] = {"sdk call": [], "client call": [], "registry invoke": [],
                                   "registry ainvoke": []}
    try:
        async with stdio_client(_params(0)) as (read, write), \
                ClientSession(read, write) as session:  # type: ignore[arg-type]
            await session.initialize()
            await session.list_tools()

            async def sdk(i: int) -> None:
                await session.call_tool("echo", {"text": f"hello {i}"})

            async def via_client(i: int) -> None:
                client.call_tool("echo", {"text": f"hello {i}"})

            async def invoke(i: int) -> None:
                registry.invoke("echo", {"text": f"hello {i}"})  # type: ignore[attr-defined]

            async def ainvoke(i: int) -> None:
                await registry.ainvoke("echo", {"text": f"hello {i}"})  # type: ignore[attr-defined]

            sides = {"sdk call": sdk, "client call": via_client, "registry invoke": invoke,
                     "registry ainvoke": ainvoke}
            for fn in sides.values():  # warm-up: first-call costs are not per-call overhead
                for i in range(20):
                    await fn(i)
            for _ in range(rounds):
                for key, fn in sides.items():
                    started = time.perf_counter()
                    for i in range(calls):
                        await fn(i)
                    out[key].append((time.perf_counter() - started) / calls)
    finally:
        registry.close()  # type: ignore[attr-defined]
    return out


async def sdk_register(tools: int) -> float:
    """Seconds for the SDK to start the server, initialize and list its tools."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    started = time.perf_counter()
    async with stdio_client(_params(tools)) as (read, write), ClientSession(read, write) as s:  # type: ignore[arg-type]
        await s.initialize()
        listed = await s.list_tools()
        elapsed = time.perf_counter() - started
    assert len(listed.tools) >= tools
    return elapsed


def _registry() -> object:
    from toolregistry import ToolRegistry

    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    (folder / "pyproject.toml").write_text("[tool.toolregistry]\n", encoding="utf-8")
    return ToolRegistry(config=folder / "pyproject.toml", default_timeout=0)


def registry_register(tools: int) -> float:
    registry = _registry()
    try:
        started = time.perf_counter()
        added = registry.register_from_mcp(  # type: ignore[attr-defined]
            {"command": sys.executable, "args": [str(SERVER), "--tools", str(tools)]})
        elapsed = time.perf_counter() - started
        assert len(added) >= tools
        return elapsed
    finally:
        registry.close()  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per batch")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="3 rounds of 30 calls")
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 when a target is missed")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.calls = 3, 30

    rows = asyncio.run(per_call(args.calls, args.rounds))
    rows["sdk register"], rows["registry register"] = [], []
    for _ in range(args.rounds):
        rows["sdk register"].append(asyncio.run(sdk_register(args.tools)))
        rows["registry register"].append(registry_register(args.tools))
    med = {k: statistics.median(v) for k, v in rows.items()}

    print(f"\ntoolregistry-mcp vs MCP SDK (stdio, median of {args.rounds} rounds, "
          f"{args.calls} calls per round, {args.tools}-tool server)\n")
    print(f"| {'measure':<34} | {'median':>10} | {'vs SDK':>7} | {'target':>7} |")
    print(f"|{'-' * 36}|{'-' * 12}|{'-' * 9}|{'-' * 9}|")
    base = med["sdk call"]
    for key, label, target in (
        ("sdk call", "SDK ClientSession.call_tool", ""),
        ("client call", "MCPClient.call_tool (sync)", ""),
        ("registry invoke", "registry.invoke (sync)", "1.10x"),
        ("registry ainvoke", "registry.ainvoke (async)", "1.10x"),
    ):
        print(f"| {label:<34} | {med[key] * 1e3:>7.3f} ms | {med[key] / base:>6.2f}x | "
              f"{target:>7} |")
    reg = med["sdk register"]
    for key, label, target in (
        ("sdk register", f"SDK connect+list ({args.tools} tools)", ""),
        ("registry register", f"register_from_mcp ({args.tools} tools)", "1.50x"),
    ):
        print(f"| {label:<34} | {med[key] * 1e3:>7.1f} ms | {med[key] / reg:>6.2f}x | "
              f"{target:>7} |")
    ok = (med["registry invoke"] <= 1.10 * base and med["registry ainvoke"] <= 1.10 * base
          and med["registry register"] <= 1.5 * reg)
    print(f"\ntargets {'met' if ok else 'NOT met'} (one thread hop to the MCP loop per call; "
          "see docs/mcp.md)")
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
