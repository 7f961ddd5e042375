"""``toolregistry demo``: register the configured sources, show the schemas, run a batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .formats import FormatTable


def _calls_for(config_path: Path | None) -> list[Any]:
    if config_path is None:
        return []
    file = config_path.parent / "demo_calls.json"
    if not file.is_file():
        return []
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{file} must hold a JSON array of tool calls")
    return data


def _describe(raw: Any, index: int, formats: FormatTable) -> str:
    from ._calls import CallParseError, parse_call

    try:
        call = parse_call(raw, index, formats)
    except CallParseError as exc:
        return f"#{index} {exc.call.name or '?'} ({exc.kind})"
    return f"#{index} {call.name} ({call.format})"


def run_demo(config: str | None, api_format: str) -> int:
    """Print the plugins, the tools, their schemas, and the results of a batch of calls."""
    from ._registry import ToolRegistry

    registry = ToolRegistry.from_config(config, skip_unavailable=True)
    with registry:
        print("== plugins")
        for rec in registry.plugins.report():
            print(f"  {rec['name']:<10} {rec['status']:<8} {rec['distribution']} {rec['version']}")
        if not registry.plugins.records:
            print("  (none installed: the kernel alone)")
        for kind, why in registry.skipped_sources:
            print(f"  skipped {kind}: {why}")
        print(f"\n== {len(registry)} tools registered")
        for tool in registry.get_tools(include_disabled=True):
            print(f"  {tool.name:<32} [{tool.provenance.kind}] {tool.description.splitlines()[0][:60] if tool.description else ''}")
        print("\n== schema sizes per API format (bytes of JSON sent to the model)")
        for fmt in registry.formats.names("schemas"):
            size = len(json.dumps(registry.get_schemas(fmt), ensure_ascii=False))
            print(f"  {fmt:<18} {size:>8}")
        print(f"\n== schemas ({api_format})")
        print(json.dumps(registry.get_schemas(api_format), indent=2, ensure_ascii=False))
        calls = _calls_for(registry.config.path)
        if not calls:
            print("\n(no demo_calls.json next to the configuration: no batch to run)")
            return 0
        print(f"\n== executing a batch of {len(calls)} tool calls")
        results = registry.execute_tool_calls(calls)
        for call, result in zip((_describe(c, i, registry.formats) for i, c in enumerate(calls)), results):
            status = f"ERROR ({result.error_kind})" if result.is_error else "ok"
            text = result.text.replace("\n", " ")
            print(f"  {call:<40} {status:<28} {text[:100]}")
            if result.reason:
                print(f"  {'':<40} reason: {result.reason}")
            spool = result.metadata.get("spool")
            if isinstance(spool, dict):
                print(f"  {'':<40} spooled: {spool.get('handle')} ({spool.get('size')} bytes); "
                      "the model reads the rest with the reader tool")
        ok = sum(not r.is_error for r in results)
        print(f"\n{ok} of {len(results)} calls succeeded; errors are returned to the model, "
              "never raised")
    return 0
