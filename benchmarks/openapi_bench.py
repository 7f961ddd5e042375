"""OpenAPI plugin benchmark (issue 7): parsing vs our conversion, time and peak memory.

    python benchmarks/openapi_bench.py                 # the largest shared document, 5 rounds
    python benchmarks/openapi_bench.py --all           # every shared document, one row each
    python benchmarks/openapi_bench.py --file X.yaml --rounds 9

Phases, each timed separately (medians over the rounds) and, in separate runs, measured with
tracemalloc (peak bytes allocated during the phase):

- parse:    read the file, decode, parse JSON / YAML (PyYAML's C loader when present)
- convert:  our work: $ref resolution, schema conversion, operations to ``Tool`` objects
- register: the kernel's ``register_tools`` of those tools (for information)

Target: convert <= parse on the largest document.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "openapi"


def _documents() -> list[Path]:
    import json

    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    return [DATA / entry["file"] for entry in manifest]


def _phases(path: Path) -> tuple[Any, Any, Any]:
    from toolregistry import ToolRegistry
    from toolregistry_openapi._loader import build_tools, read_document

    def parse() -> Any:
        return read_document(path)[0]

    def convert(doc: Any) -> Any:
        tools, session, _ = build_tools(doc)
        session.close()
        return tools

    def register(tools: Any) -> Any:
        registry = ToolRegistry()
        registry.register_tools(tools)
        registry.close()

    return parse, convert, register


def measure(path: Path, rounds: int) -> dict[str, Any]:
    parse, convert, register = _phases(path)
    times: dict[str, list[float]] = {"parse": [], "convert": [], "register": []}
    peaks: dict[str, list[int]] = {"parse": [], "convert": [], "register": []}
    count = 0
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        doc = parse()
        t1 = time.perf_counter()
        tools = convert(doc)
        t2 = time.perf_counter()
        register(tools)
        t3 = time.perf_counter()
        times["parse"].append(t1 - t0)
        times["convert"].append(t2 - t1)
        times["register"].append(t3 - t2)
        count = len(tools)
        del doc, tools
    for _ in range(max(1, rounds // 2)):
        gc.collect()
        tracemalloc.start()
        doc = parse()
        peaks["parse"].append(tracemalloc.get_traced_memory()[1])
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        tools = convert(doc)
        peaks["convert"].append(tracemalloc.get_traced_memory()[1] - base)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        register(tools)
        peaks["register"].append(tracemalloc.get_traced_memory()[1] - base)
        tracemalloc.stop()
        del doc, tools
    return {
        "file": path.relative_to(DATA).as_posix() if path.is_relative_to(DATA) else str(path),
        "bytes": path.stat().st_size,
        "tools": count,
        **{f"{k}_s": statistics.median(v) for k, v in times.items()},
        **{f"{k}_mib": statistics.median(v) / 2**20 for k, v in peaks.items()},
    }


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("document", "MB", "tools", "parse s", "convert s", "conv/parse", "register s",
            "parse MiB", "convert MiB", "register MiB")
    lines = [head]
    for r in rows:
        lines.append((
            r["file"], f"{r['bytes'] / 1e6:.2f}", str(r["tools"]), f"{r['parse_s']:.3f}",
            f"{r['convert_s']:.3f}", f"{r['convert_s'] / r['parse_s']:.2f}",
            f"{r['register_s']:.3f}", f"{r['parse_mib']:.1f}", f"{r['convert_mib']:.1f}",
            f"{r['register_mib']:.1f}",
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--file", type=Path, help="a document (default: the largest shared one)")
    parser.add_argument("--all", action="store_true", help="every shared document")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    import yaml

    if args.all:
        paths = _documents()
    elif args.file:
        paths = [args.file]
    else:
        paths = [max(_documents(), key=lambda p: p.stat().st_size)]
    rows = [measure(p, args.rounds if not args.all else max(1, args.rounds // 2 or 1))
            for p in paths]
    print(f"python {sys.version.split()[0]}, PyYAML {yaml.__version__} "
          f"(C loader: {getattr(yaml, '__with_libyaml__', False)}), medians of "
          f"{args.rounds if not args.all else max(1, args.rounds // 2)} rounds "
          "(memory: tracemalloc peak per phase)")
    print(_table(rows))
    if not args.all:
        r = rows[0]
        ok = r["convert_s"] <= r["parse_s"]
        print(f"\ntarget convert <= parse: {'met' if ok else 'NOT met'} "
              f"({r['convert_s']:.3f} s vs {r['parse_s']:.3f} s)")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
