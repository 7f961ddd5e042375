"""Cost of a call through the langchain plugin, both directions, against the baselines.

Run: ``python benchmarks/langchain_bench.py [--quick] [--calls N] [--rounds R]`` (needs
toolregistry-langchain). Prints the median over rounds of microseconds per call for LangChain
alone, a LangChain tool in the registry, a plain function in the registry, and a registry tool
exported back to LangChain; medians because a small shared machine is noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from langchain_core.tools import tool

from toolregistry import ToolRegistry


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def per_call_us(fn: Callable[[], Any], n: int, rounds: int) -> float:
    fn()  # warm up: schema and validator caches, worker threads
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def main(n: int = 2000, rounds: int = 5) -> None:
    registry = ToolRegistry(default_timeout="none")
    registry.register_from_langchain(multiply)

    @registry.register
    def native(a: float, b: float) -> float:
        """Multiply two numbers natively."""
        return a * b

    exported = {t.name: t for t in registry.to_langchain()}
    call = {"type": "tool_call", "id": "c1", "name": "multiply", "args": {"a": 2, "b": 3}}
    rows = [
        ("LangChain multiply.invoke(tool_call) alone", lambda: multiply.invoke(call)),
        ("registry.invoke: the LangChain tool", lambda: registry.invoke(
            "multiply", {"a": 2, "b": 3}, call_id="c1")),
        ("registry.invoke: a plain function", lambda: registry.invoke(
            "native", {"a": 2, "b": 3}, call_id="c1")),
        ("exported RegistryTool.invoke(tool_call)", lambda: exported["native"].invoke(
            {**call, "name": "native"})),
    ]
    for label, fn in rows:
        print(f"{label:45s} {per_call_us(fn, n, rounds):8.1f} us/call")
    batch = [{"type": "tool_call", "id": f"c{i}", "name": "multiply", "args": {"a": i, "b": 3}}
             for i in range(10)]
    rounds = max(1, n // 10)
    start = time.perf_counter()
    for _ in range(rounds):
        registry.execute_tool_calls(batch)
    print(f"{'execute_tool_calls, 10 LangChain calls':45s} "
          f"{(time.perf_counter() - start) / rounds * 1e3:8.2f} ms/batch")
    registry.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls per round, 3 rounds")
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the median is shown)")
    args = parser.parse_args()
    main(200 if args.quick else args.calls, 3 if args.quick else args.rounds)
