"""The ``toolregistry`` command: the kernel's commands (plugins, schemas, call, demo) and the
commands plugins contribute through the ``cli_commands`` hook (``serve`` comes from the mcp
plugin).

Exit codes: 0 ok, 1 the tool (or a plugin's command) reported an error, 2 usage or
configuration error, 141 stdout's reader went away (``| head``), as for a command killed by
SIGPIPE. Errors and warnings go to stderr in one line each, a warning once. A plugin whose
commands cannot be added is reported and left out; the command line keeps working without them.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, MissingPluginError, PluginError, ToolRegistryError

if TYPE_CHECKING:
    from ._extensions import Command
    from ._plugins import PluginHost
    from ._registry import ToolRegistry

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_PIPE = 0, 1, 2, 141
KERNEL_COMMANDS = ("plugins", "schemas", "call", "demo", "new-plugin")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line on stderr, exit 2
        self.exit(EXIT_USAGE, f"toolregistry: {message} (see --help)\n")


def _timeout(text: str) -> float:
    from ._settings import check_timeout

    try:
        value = check_timeout(float(text), "--timeout")
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError(str(exc) if isinstance(exc, ConfigError)
                                         else f"--timeout must be a number, got {text!r}"
                                         ) from None
    assert value is not None
    return value


def _format_help(host: PluginHost | None) -> str:
    """The API formats ``--format`` takes: the built-in ones and those plugins add."""
    from .formats import BUILTIN

    names = (host.formats if host is not None else BUILTIN).names("schemas")
    return "one of " + ", ".join(names)


def _parser(plugin_commands: Sequence[tuple[str, Command]] = (),
            host: PluginHost | None = None) -> argparse.ArgumentParser:
    p = _Parser(prog="toolregistry", description="A registry of tools for function-calling LLMs.")
    p.add_argument("--config", help="pyproject.toml with [tool.toolregistry] (default: nearest)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser,
                           metavar="COMMAND")
    sub.add_parser("plugins", help="installed plugins as JSON (name, version, hooks, status)")
    s = sub.add_parser("schemas", help="the configured registry's tool schemas as JSON")
    s.add_argument("--format", default="openai-chat", help=_format_help(host))
    s.add_argument("--strict", action="store_true", help="OpenAI strict mode")
    s.add_argument("--no-deferred", action="store_true", help="leave deferred tools out")
    c = sub.add_parser("call", help="call one tool of the configured registry")
    c.add_argument("name")
    c.add_argument("--args", default="{}", help="arguments as a JSON object")
    c.add_argument("--timeout", type=_timeout, default=None,
                   help="seconds (finite, > 0); default: the tool's or the registry's")
    d = sub.add_parser("demo", help="the end-to-end demo on the example configuration")
    d.add_argument("--format", default="openai-chat", help=_format_help(host))
    n = sub.add_parser("new-plugin", help="write a new plugin's project from the template")
    n.add_argument("name", help="the plugin's entry-point name (a lowercase identifier)")
    n.add_argument("--dir", help="the project's folder (default: ./toolregistry-NAME)")
    for plugin, command in plugin_commands:
        if command.arguments is not None:
            try:  # on a scratch parser first: a failing plugin leaves no half-added command
                command.arguments(_Parser(prog=f"toolregistry {command.name}"))
            except Exception as exc:
                if host is not None:
                    host.command_failed(plugin, f"{command.name}: {type(exc).__name__}: {exc}",
                                        exc)
                continue
        sp = sub.add_parser(command.name, help=f"{command.help} [plugin: {plugin}]")
        if command.arguments is not None:
            command.arguments(sp)
        sp.set_defaults(_plugin=plugin, _command=command)
    return p


def _fail(message: str) -> int:
    print(f"toolregistry: {message}", file=sys.stderr)
    return EXIT_USAGE


def _host(config: str | None) -> tuple[PluginHost | None, str | None]:
    """The plugin host the command line's commands come from, or why there is none (the
    configuration, or a plugin in strict mode, cannot be loaded): ``--help`` and the kernel's
    commands still work, and report that error themselves when they need the configuration."""
    from ._config import load_config
    from ._plugins import PluginSettings, get_host

    try:
        return get_host(PluginSettings.resolve(config=load_config(config, strict=False))), None
    except (ConfigError, PluginError) as exc:
        return None, str(exc).replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolregistry`` console script."""
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warnings()
        try:
            code = _main(list(sys.argv[1:] if argv is None else argv))
            sys.stdout.flush()  # here, not at exit: a reader gone is the error below
            return code
        except BrokenPipeError:
            return _reader_gone()


def _one_line_warnings() -> Callable[..., None]:
    """``warnings.showwarning`` for the command line: ``toolregistry: warning: <message>``,
    each message once (the configuration is read more than once), without the source line
    that raised it."""
    shown: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = f"toolregistry: warning: {message}".replace("\n", " ")
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr)

    return show


def _reader_gone() -> int:
    """stdout's reader went away (``toolregistry plugins | head -2``): end quietly, as a
    command killed by SIGPIPE does, with stdout pointed at /dev/null so that the interpreter's
    last flush at exit does not complain about the closed pipe either."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stdout without a file descriptor (captured, replaced)
        pass
    return EXIT_PIPE


def _main(argv: list[str]) -> int:
    pre = _Parser(prog="toolregistry", add_help=False)
    pre.add_argument("--config")
    pre.add_argument("command", nargs="?")
    known, _ = pre.parse_known_args(argv)
    host, host_error = _host(known.config)
    if host_error is not None and known.command not in (None, *KERNEL_COMMANDS):
        return _fail(host_error)  # a plugin's command, which cannot be found without it
    commands: list[tuple[str, Command]] = []
    try:
        if host is not None:
            commands = host.commands(taken=KERNEL_COMMANDS)
        parser = _parser(commands, host)
    except PluginError as exc:  # strict mode: a plugin's command is broken
        return _fail(str(exc).replace("\n", " "))
    if host is not None:
        _report_broken(host)
    missing = _missing_command(known.command, host, commands)
    if missing is not None:
        return _fail(missing)
    args = parser.parse_args(argv)
    try:
        if getattr(args, "_command", None) is not None:
            return _run_plugin_command(args)
        return _run(args)
    except (ConfigError, MissingPluginError, PluginError, ValueError) as exc:
        return _fail(str(exc).replace("\n", " "))
    except ToolRegistryError as exc:
        return _fail(str(exc).replace("\n", " "))
    except KeyboardInterrupt:
        return 130


def _report_broken(host: PluginHost) -> None:
    """One line on stderr for each plugin left out, or whose commands are, whatever the
    command: a broken plugin is never silent."""
    for _, record in sorted(host.records.items()):
        if record.error is None:
            continue
        status = " is left out" if record.status == "broken" else ""
        print(f"toolregistry: plugin {record.name!r} ({record.distribution}){status}: "
              f"{record.error} (see toolregistry plugins)".replace("\n", " "), file=sys.stderr)


def _missing_command(name: str | None, host: PluginHost | None,
                     commands: Sequence[tuple[str, Command]]) -> str | None:
    """The error for a first-party plugin's command whose plugin is missing or blocked."""
    from ._plugins import COMMAND_HINTS

    plugin = COMMAND_HINTS.get(name or "")
    if plugin is None or host is None or any(c.name == name for _, c in commands):
        return None
    try:
        host.require(plugin, f"toolregistry {name}")
    except MissingPluginError as exc:
        return str(exc)
    return None


def _run_plugin_command(args: argparse.Namespace) -> int:
    from ._extensions import CommandContext

    command: Command = args._command
    context = CommandContext(args, args.config)
    try:
        code = command.run(context)
    except ToolRegistryError:
        raise
    except Exception as exc:  # a plugin's bug: one line naming it, never a traceback
        print(f"toolregistry: {command.name} (plugin {args._plugin!r}) failed: "
              f"{type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return EXIT_TOOL_ERROR
    finally:
        context.close()
    return EXIT_OK if code is None else int(code)


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
    if args.command == "new-plugin":
        from ._template import write_plugin

        print(write_plugin(args.name, args.dir))
        return EXIT_OK

    from ._registry import ToolRegistry

    registry = ToolRegistry.from_config(args.config)
    try:
        read = _configuration_read(registry)
        if args.command == "schemas":
            if read is not None:
                print(f"toolregistry: {read}: the registry has no configured tools",
                      file=sys.stderr)
            schemas = registry.get_schemas(args.format, include_deferred=not args.no_deferred,
                                           strict=args.strict)
            print(json.dumps(schemas, indent=2, ensure_ascii=False))
            return EXIT_OK
        if args.command == "call":
            try:
                arguments = json.loads(args.args)
            except json.JSONDecodeError as exc:
                return _fail(f"--args is not valid JSON: {exc}")
            if args.name not in registry:
                return _fail(_unknown_tool(registry, args.name, read))
            result = registry.invoke(args.name, arguments, timeout=args.timeout)
            print(result.text)
            return EXIT_TOOL_ERROR if result.is_error else EXIT_OK
    finally:
        registry.close()
    return EXIT_USAGE


def _configuration_read(registry: ToolRegistry) -> str | None:
    """Why the registry has no configured tools, when it has no configuration to take them
    from (none found, or a file without the table); ``None`` when it has one."""
    path = registry.config.path
    if path is None:
        return (f"no configuration found (no pyproject.toml in {Path.cwd()} or above it; "
                "give one with --config FILE or TOOLREGISTRY_CONFIG)")
    if not registry.config.table:
        return f"the configuration {path} has no [tool.toolregistry] table"
    return None


def _unknown_tool(registry: ToolRegistry, name: str, read: str | None) -> str:
    """The one-line error of ``call`` for a name the registry does not have: which
    configuration was read, and close names."""
    if read is not None:
        return f"no tool named {name!r}: {read}"
    close = registry.suggest_names(name)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"no tool named {name!r} in the registry of {registry.config.where}{hint}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
