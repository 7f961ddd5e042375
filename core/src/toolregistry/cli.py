"""The ``toolregistry`` command: plugins, schemas, call, serve, demo.

Exit codes: 0 ok, 1 the tool reported an error, 2 usage or configuration error. Errors go to
stderr in one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .errors import ConfigError, MissingPluginError, PluginError, ToolRegistryError

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line on stderr, exit 2
        self.exit(EXIT_USAGE, f"toolregistry: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="toolregistry", description="A registry of tools for function-calling LLMs.")
    p.add_argument("--config", help="pyproject.toml with [tool.toolregistry] (default: nearest)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("plugins", help="installed plugins as JSON (name, version, hooks, status)")
    s = sub.add_parser("schemas", help="the configured registry's tool schemas as JSON")
    s.add_argument("--format", default="openai-chat",
                   help="openai-chat, openai-responses, anthropic, gemini or mcp")
    s.add_argument("--strict", action="store_true", help="OpenAI strict mode")
    s.add_argument("--no-deferred", action="store_true", help="leave deferred tools out")
    c = sub.add_parser("call", help="call one tool of the configured registry")
    c.add_argument("name")
    c.add_argument("--args", default="{}", help="arguments as a JSON object")
    c.add_argument("--timeout", type=float, default=None)
    v = sub.add_parser("serve", help="serve the configured registry as an MCP server")
    v.add_argument("--transport", default="stdio", choices=["stdio", "streamable-http"])
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8765)
    v.add_argument("--path", default="/mcp", help="URL path of the streamable HTTP endpoint")
    v.add_argument("--name", default=None, help="server name (default: the registry's)")
    v.add_argument("--include-deferred", action="store_true", help="list deferred tools too")
    v.add_argument("--json-response", action="store_true", help="JSON instead of SSE replies")
    v.add_argument("--stateless", action="store_true", help="no session state (HTTP)")
    d = sub.add_parser("demo", help="the end-to-end demo on the example configuration")
    d.add_argument("--format", default="openai-chat")
    return p


def _fail(message: str) -> int:
    print(f"toolregistry: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolregistry`` console script."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except (ConfigError, MissingPluginError, PluginError, ValueError) as exc:
        return _fail(str(exc).replace("\n", " "))
    except ToolRegistryError as exc:
        return _fail(str(exc).replace("\n", " "))
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace) -> int:
    if args.command == "plugins":
        from ._config import load_config
        from ._plugins import PluginSettings, get_host

        config = load_config(args.config) if args.config else None
        host = get_host(PluginSettings.resolve(config=config))
        print(json.dumps(host.report(), indent=2))
        return EXIT_OK
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(args.config, args.format)

    from ._registry import ToolRegistry

    registry = ToolRegistry.from_config(args.config)
    try:
        if args.command == "schemas":
            schemas = registry.get_schemas(args.format, include_deferred=not args.no_deferred,
                                           strict=args.strict)
            print(json.dumps(schemas, indent=2, ensure_ascii=False))
            return EXIT_OK
        if args.command == "call":
            try:
                arguments = json.loads(args.args)
            except json.JSONDecodeError as exc:
                return _fail(f"--args is not valid JSON: {exc}")
            result = registry.invoke(args.name, arguments, timeout=args.timeout)
            print(result.text)
            return EXIT_TOOL_ERROR if result.is_error else EXIT_OK
        if args.command == "serve":
            serve = registry.plugins.loader("mcp:serve")
            serve(registry, transport=args.transport, host=args.host, port=args.port,
                  path=args.path, name=args.name, include_deferred=args.include_deferred,
                  json_response=args.json_response, stateless=args.stateless)
            return EXIT_OK
    finally:
        registry.close()
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
