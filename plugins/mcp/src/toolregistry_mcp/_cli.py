"""``toolregistry serve`` (contributed through the ``cli_commands`` hook) and
``python -m toolregistry_mcp serve``: one set of options for both. Light to import: the SDK
loads when the server starts."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from toolregistry.plugin import port_number

if TYPE_CHECKING:
    from toolregistry.plugin import CommandContext

HELP = "serve the configured registry as an MCP server (stdio or streamable HTTP)"


def arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` options (unset ones leave ``[tool.toolregistry.plugins.mcp.serve]`` and
    the defaults of :class:`~toolregistry_mcp.ServeOptions` alone)."""
    p = parser
    p.add_argument("--transport", choices=["stdio", "streamable-http"], default=None,
                   help="default: stdio")
    p.add_argument("--host", default=None, help="default: 127.0.0.1")
    p.add_argument("--port", type=port_number, default=None, help="default: 8000")
    p.add_argument("--path", default=None, help="URL path of the streamable HTTP endpoint "
                                                "(default: /mcp)")
    p.add_argument("--name", default=None, help="server name (default: the registry's)")
    p.add_argument("--include-deferred", action="store_true", default=None,
                   help="list deferred tools too")
    p.add_argument("--json-response", action="store_true", default=None,
                   help="JSON instead of SSE replies")
    p.add_argument("--stateless", action="store_true", default=None,
                   help="no session state (HTTP)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="serve from N processes, each building the registry from the "
                        "configuration (needs --stateless and streamable HTTP; default: 1)")
    p.add_argument("--auth", choices=["none", "bearer", "oauth"], default=None,
                   help="bearer: the tokens of --token-env / --token-file or the table; "
                        "oauth: JWTs from the table's [oauth] issuer")
    p.add_argument("--token-env", action="append", metavar="VAR",
                   help="a bearer token from environment variable VAR (repeatable)")
    p.add_argument("--token-file", action="append", metavar="PATH",
                   help="a bearer token from the first line of PATH (repeatable)")
    p.add_argument("--insecure-no-auth", action="store_true", default=None,
                   help="allow a non-loopback address without authentication")
    p.add_argument("--allowed-host", action="append", dest="allowed_hosts", metavar="HOST",
                   help="a Host header value accepted besides the bound address (repeatable; "
                        "'name:*' for any port)")
    p.add_argument("--allowed-origin", action="append", dest="allowed_origins",
                   metavar="ORIGIN", help="an Origin accepted (repeatable)")
    p.add_argument("--tls-cert", default=None, metavar="PEM", help="serve HTTPS with this "
                                                                    "certificate (and --tls-key)")
    p.add_argument("--tls-key", default=None, metavar="PEM")


def options(args: argparse.Namespace) -> dict[str, Any]:
    """Parsed ``serve`` options as :func:`~toolregistry_mcp.serve` keyword arguments (unset
    ones left out, so that the configuration table applies)."""
    names = ("transport", "host", "port", "path", "name", "include_deferred", "json_response",
             "stateless", "workers", "auth", "insecure_no_auth", "allowed_hosts", "allowed_origins",
             "tls_cert", "tls_key")
    out = {n: getattr(args, n, None) for n in names}
    tokens = [{"name": f"env:{v}", "env": v} for v in args.token_env or ()]
    tokens += [{"name": f"file:{v}", "file": v} for v in args.token_file or ()]
    if tokens:
        out["tokens"] = tokens
        out["auth"] = out["auth"] or "bearer"
    return {k: v for k, v in out.items() if v is not None}


def run(context: CommandContext) -> int:
    """Serve the registry of ``[tool.toolregistry]`` until the server stops: in this process,
    or with ``workers`` > 1 in worker processes that each build it from the configuration."""
    from ._heap import own_process
    from ._serve import serve
    from ._workers import serve_workers, workers_wanted

    own_process()  # the CLI's process: serving may freeze its heap (see _heap)
    given = options(context.args)
    if workers_wanted(context.config, given) > 1:
        serve_workers(context.config, **given)
    else:
        serve(context.registry(), **given)
    return 0
