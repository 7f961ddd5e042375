"""What an MCP server *is* to us: a stdio command, a script, or an HTTP(S) URL."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from attrs import field, frozen

from toolregistry.errors import ConfigError

__all__ = ["ServerSpec", "child_environment", "make_non_dumpable", "parse_server", "public_url"]

Transport = Literal["stdio", "streamable-http", "sse"]

# Beyond the SDK's own default list (HOME, LOGNAME, PATH, SHELL, TERM, USER on POSIX), a
# child needs the locale to decode its own arguments and a temp dir to write scratch files.
# Nothing else from the parent is passed on, so that API keys and tokens are not handed to
# servers. That is not isolation: a server running as the same user can still read
# /proc/<our pid>/environ (see make_non_dumpable and command prefixes, docs/mcp.md).
_EXTRA_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")


@frozen(kw_only=True)
class ServerSpec:
    """One MCP server, normalised. ``display`` names it in events and errors."""

    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(factory=dict)
    display: str = ""


def child_environment(extra: Mapping[str, str] | None = None,
                      inherit: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a stdio server: the SDK's minimal default set, a few locale and
    temp-dir variables, the names in ``inherit``, then ``extra`` (the user's, which win)."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    for key in (*_EXTRA_INHERITED, *inherit):
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):  # no exported shell functions
            env[key] = value
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


def make_non_dumpable() -> None:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``): processes of
    the same user -- stdio servers included -- can then no longer read its
    ``/proc/<pid>/environ`` or memory, nor attach a debugger to it; it writes no core dump.
    It lasts for the life of the process (an ``exec`` resets it, so servers it starts are
    ordinary processes). Idempotent."""
    if not sys.platform.startswith("linux"):
        raise ConfigError(f"protect-parent needs Linux (prctl PR_SET_DUMPABLE); this is "
                          f"{sys.platform}: start servers under another user or in a sandbox "
                          "with command-prefix instead")
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
        return
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(err)}")


def _script_command(path: Path) -> tuple[str, tuple[str, ...]]:
    if path.suffix == ".py":
        return sys.executable, (str(path),)
    node = shutil.which("node")
    if node is None:
        raise ConfigError(f"MCP server script {path} needs Node.js: 'node' is not on PATH")
    return node, (str(path),)


def parse_server(
    server: Any,
    *,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    transport: str | None = None,
    base_dir: Path | None = None,
) -> ServerSpec:
    """Normalise what a user passed as ``server`` (see :func:`toolregistry_mcp.load`).

    ``base_dir`` resolves a relative script path (a configuration file's folder).
    """
    if isinstance(server, ServerSpec):
        return server
    if isinstance(server, os.PathLike):
        server = os.fspath(server)
    if isinstance(server, str):
        text = server.strip()
        if text.startswith(("http://", "https://")):
            kind: Transport = "streamable-http"
            if transport in ("sse", "streamable-http"):
                kind = transport  # type: ignore[assignment]
            elif text.rstrip("/").endswith("/sse"):
                kind = "sse"
            return ServerSpec(transport=kind, url=text, headers=dict(headers or {}),
                              display=text)
        path = Path(text).expanduser()
        if not path.is_absolute() and not path.exists() and base_dir is not None:
            path = base_dir / path
        if path.suffix in (".py", ".js", ".mjs", ".cjs"):
            if not path.is_file():
                raise ConfigError(f"MCP server script {text!r} does not exist (looked at {path})")
            exe, script = _script_command(path.resolve())
            return ServerSpec(transport="stdio", command=exe, args=script,
                              env=dict(env or {}), cwd=os.fspath(cwd) if cwd else None,
                              display=path.name)
        raise ConfigError(
            f"cannot tell how to reach the MCP server {text!r}: pass an http(s) URL, a path to a "
            "'.py' or '.js' server script, or a stdio spec {'command': ..., 'args': [...]}"
        )
    if isinstance(server, Mapping):
        known = {"command", "args", "env", "cwd", "url", "headers", "transport", "name"}
        unknown = sorted(set(server) - known)
        if unknown:
            raise ConfigError(f"MCP server spec has unknown key(s) {unknown}; known: "
                              f"{sorted(known)}")
        if "url" in server:
            spec = parse_server(str(server["url"]),
                                headers={**(server.get("headers") or {}), **(headers or {})},
                                transport=server.get("transport") or transport)
            return spec if not server.get("name") else _renamed(spec, str(server["name"]))
        command = server.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError("a stdio MCP server spec needs 'command' (a string), e.g. "
                              "{'command': 'uvx', 'args': ['mcp-server-time']}")
        raw_args = server.get("args") or []
        if isinstance(raw_args, str) or not all(isinstance(a, (str, os.PathLike)) for a in raw_args):
            raise ConfigError(f"MCP server 'args' must be a list of strings, got {raw_args!r}")
        merged_env = {**(server.get("env") or {}), **(env or {})}
        where = server.get("cwd") or cwd
        args = tuple(os.fspath(a) for a in raw_args)
        shown = [Path(a).name if os.sep in a else a for a in args[:2]]
        display = str(server.get("name") or " ".join((Path(command).name, *shown)))
        return ServerSpec(transport="stdio", command=command, args=args, env=merged_env,
                          cwd=os.fspath(where) if where else None, display=display)
    raise ConfigError(
        f"cannot use {type(server).__name__} as an MCP server: pass an http(s) URL, a path to a "
        "'.py' or '.js' script, or a stdio spec {'command': ..., 'args': [...], 'env': {...}}"
    )


def _renamed(spec: ServerSpec, name: str) -> ServerSpec:
    import attrs

    return attrs.evolve(spec, display=name)


def public_url(url: str) -> str:
    """``url`` without what may be secret: no credentials, no query, no fragment."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"
