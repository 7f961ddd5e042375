"""``toolregistry serve`` (contributed through the ``cli_commands`` hook) and
``python -m toolregistry_mcp serve``: one set of options for both. Light to import: the SDK
loads when the server starts."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolregistry.plugin import CommandContext

HELP = "serve the configured registry as an MCP server (stdio or streamable HTTP)"


def arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` options."""
    parser.add_argument("--transport", default="stdio", choices=["stdio", "streamable-http"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/mcp", help="URL path of the streamable HTTP endpoint")
    parser.add_argument("--name", default=None, help="server name (default: the registry's)")
    parser.add_argument("--include-deferred", action="store_true", help="list deferred tools too")
    parser.add_argument("--json-response", action="store_true", help="JSON instead of SSE replies")
    parser.add_argument("--stateless", action="store_true", help="no session state (HTTP)")


def run(context: CommandContext) -> int:
    """Serve the registry of ``[tool.toolregistry]`` until the server stops."""
    from ._serve import serve

    args = context.args
    serve(context.registry(), args.transport, host=args.host, port=args.port, path=args.path,
          name=args.name, include_deferred=args.include_deferred,
          json_response=args.json_response, stateless=args.stateless)
    return 0
