"""``toolregistry log``: tail and filter the execution log file from a terminal."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import TYPE_CHECKING

from toolregistry.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from toolregistry.plugin import CommandContext

    from ._log import LogEntry

LOG_HELP = "show the calls recorded in the execution log file (log-db), or follow it"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _since(text: str) -> float:
    """``--since``: a duration back from now (``90``, ``30s``, ``10m``, ``2h``, ``1d``)."""
    m = _DURATION.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(
            f"--since takes a duration such as 30s, 10m, 2h or 1d, got {text!r}")
    return time.time() - float(m[1]) * _UNITS[m[2]]


def log_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``log`` options."""
    p = parser
    p.add_argument("--db", default=None, metavar="PATH",
                   help="the log file (default: log-db of [tool.toolregistry.plugins.inspector])")
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


def _db(context: CommandContext) -> Path:
    from pathlib import Path

    if context.args.db:
        return Path(context.args.db)
    from toolregistry import ToolRegistry

    from ._settings import PLUGIN_NAME, InspectorSettings

    # A bare registry reads the configuration's table without loading its sources.
    registry = ToolRegistry(config=context.config)
    try:
        settings = registry.plugin_settings(PLUGIN_NAME, InspectorSettings)
        where = str(registry.config.path or "no configuration file found")
    finally:
        registry.close()
    if settings.log_db is None:
        raise ConfigError(
            "toolregistry log reads the execution log file, and none is configured "
            f"({where}): set log-db = \"calls.sqlite\" in [tool.toolregistry.plugins.inspector] "
            "(the registry writes its calls there) or pass --db PATH")
    path = Path(settings.log_db).expanduser()
    if not path.is_absolute() and registry.config.path is not None:
        path = registry.config.path.parent / path
    return path


def run_log(context: CommandContext) -> int:
    """Print the matching calls, oldest first; with ``--follow`` keep printing new ones until
    interrupted. Exit 1 when the file has no matching call (and not following)."""
    from ._log import format_entry, query_log

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


def _newest(path: Path) -> int:
    from ._log import query_log

    newest = query_log(path, limit=1)
    return newest[-1].seq if newest else 0
