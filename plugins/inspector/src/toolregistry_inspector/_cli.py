"""``toolregistry log``: tail and filter the execution log file from a terminal;
``toolregistry inspect``: serve the web UI over the configured registry."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import TYPE_CHECKING

from toolregistry.errors import ConfigError
from toolregistry.plugin import port_number

if TYPE_CHECKING:
    from pathlib import Path

    from toolregistry.plugin import CommandContext, StoreURL

    from ._log import LogEntry

INSPECT_HELP = "open a local web UI over the configured registry (tools, schemas, calls, log)"
LOG_HELP = "show the calls recorded in the execution log file (log-db), or follow it"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def ago(text: str, what: str = "--since") -> float:
    """The time a duration back from now (``90``, ``30s``, ``10m``, ``2h``, ``1d``);
    ``ValueError`` naming ``what`` otherwise."""
    m = _DURATION.match(text.strip())
    if not m:
        raise ValueError(f"{what} takes a duration such as 30s, 10m, 2h or 1d, got {text!r}")
    return time.time() - float(m[1]) * _UNITS[m[2]]


def _since(text: str) -> float:
    """``--since``: a duration back from now."""
    try:
        return ago(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def log_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``log`` options."""
    p = parser
    p.add_argument("--db", default=None, metavar="PATH",
                   help="the log file or store URL (default: log-db of "
                        "[tool.toolregistry.plugins.inspector], else the store)")
    p.add_argument("--tool", default=None, metavar="GLOB", help="only these tools ('srv-*')")
    p.add_argument("--outcome", default=None,
                   help="ok, error (every failed call), or an error kind: execution, timeout, "
                        "denied, approval_required, ...")
    p.add_argument("--since", type=_since, default=None, metavar="DURATION",
                   help="only calls that started within this time (30s, 10m, 2h, 1d)")
    p.add_argument("--call-id", default=None, help="only the call with this id")
    p.add_argument("--registry", default=None, help="only calls of the registry of this name")
    p.add_argument("-n", "--limit", type=int, default=20, help="the last N calls (default 20)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new calls")
    p.add_argument("--interval", type=float, default=0.5, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def _db(context: CommandContext) -> Path | StoreURL:
    from pathlib import Path

    if context.args.db:
        return Path(context.args.db) if "://" not in context.args.db else _url(context.args.db)
    from toolregistry import ToolRegistry

    from ._log import log_store
    from ._settings import PLUGIN_NAME, InspectorSettings

    # A bare registry reads the configuration's table without loading its sources.
    registry = ToolRegistry(config=context.config)
    try:
        settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
        where = str(registry.config.path or "no configuration file found")
        url = log_store(registry, settings)
    finally:
        registry.close()
    if url is None:
        raise ConfigError(
            "toolregistry log reads the execution log file, and none is configured "
            f"({where}): set log-db = \"calls.sqlite\" in [tool.toolregistry.plugins.inspector] "
            "or store = \"postgresql://...\" in [tool.toolregistry] (the registry writes its "
            "calls there) or pass --db PATH")
    return url.path if url.kind == "sqlite" else url


def _url(text: str) -> StoreURL:
    from toolregistry.plugin import parse_store_url

    try:
        return parse_store_url(text)
    except ValueError as exc:
        raise ConfigError(f"--db: {exc}") from None


def run_log(context: CommandContext) -> int:
    """Print the matching calls, oldest first; with ``--follow`` keep printing new ones until
    interrupted. Exit 1 when the file has no matching call (and not following)."""
    from ._log import format_entry
    from ._reads import query_log

    args = context.args
    if args.limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {args.limit}")
    path = _db(context)
    filters = {"tool": args.tool, "outcome": args.outcome, "since": args.since,
               "call_id": args.call_id, "registry": args.registry}
    try:
        entries = query_log(path, limit=args.limit, **filters)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(str(exc)) from None

    def show(batch: list[LogEntry]) -> None:
        for entry in batch:
            print(json.dumps(entry.to_dict(), ensure_ascii=False) if args.json
                  else format_entry(entry))
        sys.stdout.flush()

    show(entries)
    if not args.follow:
        return 0 if entries else 1
    last = entries[-1].seq if entries else _newest(path)
    try:
        while True:
            time.sleep(args.interval)
            batch = query_log(path, after=last, **filters)
            if batch:
                show(batch)
                last = batch[-1].seq
    except KeyboardInterrupt:
        return 0


def _newest(path: Path | StoreURL) -> int:
    from ._reads import query_log

    newest = query_log(path, limit=1)
    return newest[-1].seq if newest else 0


def inspect_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``inspect`` options (unset ones come from [tool.toolregistry.plugins.inspector])."""
    p = parser
    p.add_argument("--host", default=None, help="default: 127.0.0.1")
    p.add_argument("--port", type=port_number, default=None,
                   help="default: 8765 (0: any free port)")
    p.add_argument("--read-only", action="store_true", default=None,
                   help="no calls, approvals or reviews from the UI")
    p.add_argument("--token-env", default=None, metavar="VAR",
                   help="the token from environment variable VAR (default: a random one)")
    p.add_argument("--token-file", default=None, metavar="PATH",
                   help="the token from the first line of PATH")
    p.add_argument("--allowed-host", action="append", dest="allowed_hosts", default=[],
                   metavar="HOST", help="a Host header accepted besides loopback (repeatable)")
    p.add_argument("--allowed-origin", action="append", dest="allowed_origins", default=[],
                   metavar="ORIGIN", help="an Origin accepted besides the app's (repeatable)")
    p.add_argument("--open", action="store_true", help="open the URL in a browser")


def _token(args: argparse.Namespace) -> str | None:
    import os
    from pathlib import Path

    if args.token_env:
        value = os.environ.get(args.token_env, "").strip()
        if not value:
            raise ConfigError(f"--token-env {args.token_env}: the variable is not set or empty")
        return value
    if args.token_file:
        try:
            lines = Path(args.token_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"--token-file {args.token_file}: {exc.strerror}") from None
        if not lines or not lines[0].strip():
            raise ConfigError(f"--token-file {args.token_file}: the first line is empty")
        return lines[0].strip()
    return None


def run_inspect(context: CommandContext) -> int:
    """Serve the UI until interrupted."""
    from ._server import serve
    from ._settings import PLUGIN_NAME, InspectorSettings

    args = context.args
    registry = context.registry()
    settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
    try:
        serve(registry, host=args.host or settings.host,
              port=settings.port if args.port is None else args.port,
              token=_token(args), read_only=bool(args.read_only or settings.read_only),
              allowed_hosts=args.allowed_hosts, allowed_origins=args.allowed_origins,
              open_browser=args.open)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    return 0
