"""``registry.register_from_mcp(server, ...)``: an MCP server's tools as registry tools.

It owns loading (the ``mcp`` and ``mcp:async`` source kinds: options checked, an
:class:`~toolregistry_mcp.MCPClient` opened, the listed tools screened, built and registered
as one :class:`~toolregistry_mcp.MCPSource`, which the registry's state keeps), the
module-level :func:`sources`, :func:`refresh` and :func:`arefresh`, and closing a source's
server with its registry. The source itself (building, calling, refreshing) is :mod:`._source`.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolregistry import Tool
from toolregistry.errors import (
    ConfigError,
    ToolNameCollisionError,
    ToolNotFoundError,
    ToolRegistrationError,
    ToolRejected,
)
from toolregistry.plugin import log, normalize_name, operation

from . import _decisions, _loop
from ._client import MCPClient
from ._filters import check_patterns, report_unmatched
from ._listcache import for_source, list_cache_mode
from ._oauth_store import shared_auth
from ._screen import ACTIONS as SCREENING_ACTIONS
from ._screen import Finding
from ._settings import MCPSettings
from ._source import PLUGIN, AcceptChanges, MCPSource, _fingerprint, _Registered
from ._spec import public_url

if TYPE_CHECKING:
    import mcp_types

    from toolregistry import ToolRegistry

__all__ = ["MCPSettings", "MCPSource", "aload", "arefresh", "load", "refresh", "sources"]

_STATE_KEY = "sources"


def _settings(registry: ToolRegistry) -> MCPSettings:
    return registry.plugin_settings(PLUGIN, MCPSettings)


_state_lock = threading.Lock()


def sources(registry: ToolRegistry) -> list[MCPSource]:
    """The MCP sources loaded into ``registry``, in load order."""
    with _state_lock:
        return list(registry.plugin_state(PLUGIN).get(_STATE_KEY, []))


def _per_source(registry: ToolRegistry, accept_changes: AcceptChanges
                ) -> list[tuple[MCPSource, AcceptChanges]]:
    """Each source with its share of ``accept_changes`` (a mapping is split by tool, and
    names no source provides are refused before any source is refreshed)."""
    every = sources(registry)
    if isinstance(accept_changes, bool):
        return [(source, accept_changes) for source in every]
    shares = [(source, {n: v for n, v in accept_changes.items() if n in source.tool_names})
              for source in every]
    unknown = sorted(set(accept_changes) - {n for _, share in shares for n in share})
    if unknown:
        raise ToolNotFoundError(f"accept_changes names {unknown}: no MCP source of this "
                                "registry provides them")
    for source, share in shares:
        source._accepting(share)  # refuse an unknown version before anything is adopted
    return list(shares)


def _merged() -> dict[str, list[str]]:
    return {"added": [], "removed": [], "changed": [], "accepted": [], "skipped": []}


def refresh(registry: ToolRegistry, *, accept_changes: AcceptChanges = False
            ) -> dict[str, list[str]]:
    """:meth:`MCPSource.refresh` for every MCP source of ``registry``; reports merged."""
    merged = _merged()
    for source, accept in _per_source(registry, accept_changes):
        for key, names in source.refresh(accept_changes=accept).items():
            merged[key].extend(names)
    return merged


async def arefresh(registry: ToolRegistry, *, accept_changes: AcceptChanges = False
                   ) -> dict[str, list[str]]:
    """Async :func:`refresh`."""
    merged = _merged()
    for source, accept in _per_source(registry, accept_changes):
        report = await source.arefresh(accept_changes=accept)
        for key, names in report.items():
            merged[key].extend(names)
    return merged


_OPTIONS = ("namespace", "include", "exclude", "timeout", "max_timeout", "persistent",
            "replace", "headers", "env", "cwd", "transport", "connect_timeout", "max_result_chars", "inherit_env",
            "session_loop", "max_message_bytes", "screening", "command_prefix",
            "protect_parent", "ordering", "auth", "protocol_version", "elicitation",
            "sampling", "list_cache")


def _auth_option(auth: Any, base_dir: Any) -> Any:
    """A relative ``token-store`` of a configured source is relative to the configuration."""
    if not isinstance(auth, Mapping) or base_dir is None:
        return auth
    out = dict(auth)
    for key in ("token_store", "token-store"):
        value = out.get(key)
        if isinstance(value, str) and not os.path.isabs(os.path.expanduser(value)):
            out[key] = os.path.join(base_dir, value)
    return out


def _check_options(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        import difflib

        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, _OPTIONS, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(f"register_from_mcp: unknown option {', '.join(hints)}; known: "
                          f"{', '.join(_OPTIONS)}")


async def _aload(registry: ToolRegistry, server: Any, options: dict[str, Any],
                 settings: MCPSettings) -> list[Tool]:
    _check_options(options)
    # Checked before a server is started: a bad value costs no process and no connection.
    screening = _choice("screening", options.get("screening", settings.screening),
                        SCREENING_ACTIONS)
    ordering = _choice("ordering", options.get("ordering", settings.ordering), ORDERINGS)
    list_cache = list_cache_mode(options.get("list_cache", settings.list_cache))
    include = check_patterns("include", options.get("include"))
    exclude = check_patterns("exclude", options.get("exclude"))
    base_dir = registry.config.path.parent if getattr(registry, "config", None) is not None \
        and registry.config.path is not None else None
    from ._spec import parse_server

    spec = parse_server(server, headers=options.get("headers"), env=options.get("env"),
                        cwd=options.get("cwd"), transport=options.get("transport"),
                        base_dir=base_dir)
    timeout = options.get("timeout", settings.timeout)
    client = MCPClient(
        spec,
        timeout=timeout,
        max_timeout=options.get("max_timeout", settings.max_timeout),
        connect_timeout=float(options.get("connect_timeout", settings.connect_timeout)),
        persistent=bool(options.get("persistent", True)),
        inherit_env=tuple(options.get("inherit_env") or settings.inherit_env),
        max_message_bytes=int(options.get("max_message_bytes", settings.max_message_bytes)),
        shutdown_grace=settings.shutdown_grace,
        session_loop=str(options.get("session_loop", settings.session_loop)),
        command_prefix=_strings("command_prefix",
                                options.get("command_prefix", settings.command_prefix)),
        protect_parent=bool(options.get("protect_parent", settings.protect_parent)),
        auth=shared_auth(registry, spec.url or "",
                         _auth_option(options.get("auth"), base_dir)),
        protocol_version=str(options.get("protocol_version", "auto")),
        elicitation=options.get("elicitation"),
        sampling=options.get("sampling"),
    )
    cache = for_source(registry, spec, list_cache, inherit_env=client.inherit_env,
                       command_prefix=client.command_prefix, auth=options.get("auth"),
                       protocol_version=client.protocol_version)
    client.list_cache = cache
    try:
        cached = await asyncio.to_thread(cache.fresh) if cache is not None else None
        if cached is not None:  # no server started, no SDK imported until it is needed
            async def verify(_client: MCPClient) -> None:
                await source._refresh_on_loop({}, unless_listed=True)

            listed = client.restore_listing(cached, verify)
            server_name = cached.server_name
        else:
            listed = await client.alist_tools()
            server_name = client.server_info.name if client.server_info is not None else None
        namespace = options.get("namespace")
        if namespace is True:
            if not server_name:
                raise ConfigError(f"namespace=True: MCP server {spec.display} did not send its "
                                  "name; pass namespace='...'")
            namespace = normalize_name(server_name)
        elif namespace is False:
            namespace = None
        source = MCPSource(
            client=client, namespace=namespace, include=include,
            exclude=exclude, replace=bool(options.get("replace", False)),
            timeout=timeout, max_result_chars=int(options.get("max_result_chars",
                                                              settings.max_result_chars)),
            _registry=weakref.ref(registry),
            screening=screening,
            concurrency_group=_group(spec.display) if ordering == "server" else None,
            server_name=server_name,
        )
        source._note_invalid()
        names = [n for t in listed for n in (t.name, f"{namespace}-{t.name}" if namespace
                                             else t.name)]
        report_unmatched(spec.display, "include", include, names)
        report_unmatched(spec.display, "exclude", exclude, names)
        screener = source.screener()
        tools: list[Tool] = []
        originals: list[mcp_types.Tool] = []
        flagged: dict[str, list[Finding]] = {}
        served = {tool.name: tool for tool in listed}
        for tool in listed:
            if not source.wanted(tool.name):
                continue
            # A version reviewed before a restart is what is registered.
            tool = _decisions.registered_version(registry, spec.display, tool)
            screened, findings = screener.check(tool)
            if findings:
                flagged[tool.name] = findings
            try:
                tools.append(source.build(screened, findings))
                originals.append(tool)
            except ToolRegistrationError as exc:
                source.skipped[tool.name] = str(exc)
                log.warning("mcp.tool_skipped", server=spec.display, tool=tool.name,
                            reason=str(exc))
        if flagged and source.screening == "refuse":
            reasons = [source._flagged(name, findings) for name, findings in flagged.items()]
            raise ToolRejected(f"MCP server {spec.display} refused (screening = 'refuse'): "
                               + " | ".join(reasons))
        try:
            added = await asyncio.to_thread(_register, registry, source, tools, flagged)
        except ToolNameCollisionError as exc:
            raise ToolNameCollisionError(
                f"MCP server {spec.display}: {exc}. Tools of different MCP servers often share "
                "names (fetch, echo, read_file): load this server with namespace='<prefix>' "
                "or namespace=True (its own name), or pass replace=True"
            ) from None
    except BaseException:
        await client.aclose()
        raise
    for tool, registered in zip(originals, added):
        entry = _Registered(registered.name, _fingerprint(tool), accepted=tool)
        source.registered[tool.name] = entry
        if tool is not served[tool.name]:  # the server's version waits for review again
            await asyncio.to_thread(_decisions.served_again, source, entry, served[tool.name],
                                    {"changed": []})
    async def on_list_changed(_client: MCPClient) -> None:
        if cache is not None:
            await asyncio.to_thread(cache.drop)
        await source._refresh_on_loop({})

    client.on_tools_changed(on_list_changed)
    with _state_lock:
        registry.plugin_state(PLUGIN).setdefault(_STATE_KEY, []).append(source)
    closer = client.close
    add_closer = getattr(registry, "add_closer", None)
    if add_closer is not None:
        add_closer(closer)
    # A registry dropped without close() still ends its servers.
    source._finalizer = weakref.finalize(registry, _close_later, client)
    log.info("mcp.loaded", server=spec.display, tools=len(added), skipped=len(source.skipped),
             namespace=namespace)
    return added


def _register(registry: ToolRegistry, source: MCPSource, tools: list[Tool],
              flagged: dict[str, list[Finding]]) -> list[Tool]:
    """Register a new source's tools, then report (and with ``disable``, disable) the ones
    screening flagged."""
    added = registry.register_tools(tools, namespace=source.namespace, replace=source.replace)
    for tool in added:
        findings = flagged.get(tool.provenance.original_name or tool.name)
        if findings:
            reason = source._flagged(tool.name, findings)
            if source.screening == "disable":
                registry.disable(tool.name, reason=reason)
    return added


def _strings(option: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"register_from_mcp: {option} must be a list of strings, e.g. "
                          f"['setpriv', '--reuid=mcp', '--regid=mcp', '--init-groups'], "
                          f"not {value!r}")
    return tuple(value)


ORDERINGS = ("server", "none")
_groups = itertools.count(1)


def _group(display: str) -> str:
    """A concurrency group of its own for one loaded server."""
    return f"mcp:{next(_groups)}:{display}"


def _choice(option: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"register_from_mcp: {option} must be one of "
                          f"{', '.join(map(repr, allowed))}, not {value!r}")
    return str(value)


def _close_later(client: MCPClient) -> None:
    if not client.closed:
        _loop.submit(client.aclose())


def load(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    """The ``mcp`` loader: ``registry.register_from_mcp(server, **options)``.

    ``server``: a stdio spec ``{"command", "args", "env", "cwd"}``, a ``.py`` / ``.js`` script
    path, or an ``http(s)`` URL (``headers=``; SSE when it ends with ``/sse`` or
    ``transport="sse"``). Options: ``namespace`` (a prefix, or ``True`` for the server's own
    name), ``include`` / ``exclude`` (tool names or glob patterns), ``timeout`` (seconds a
    call may go without an answer or a progress notification), ``max_timeout`` (seconds in
    all, however much progress; default ten times ``timeout``), ``persistent`` (one shared session, default; ``False``: a session per call),
    ``replace``, ``env``, ``cwd``, ``connect_timeout``, ``max_result_chars``, ``inherit_env``,
    ``session_loop`` (``"background"``, default, or ``"running"``: see :class:`MCPClient`),
    ``max_message_bytes``, ``screening`` (``"warn"``, ``"strip"``, ``"disable"``, ``"refuse"``,
    ``"off"``), ``command_prefix`` and ``protect_parent`` (see :class:`MCPClient`),
    ``ordering`` (``"server"``, default: a batch's calls to this server's tools not declared
    read-only run in call order relative to its other calls; ``"none"``),
    ``protocol_version`` (``"auto"``, default: 2026-07-28 through ``server/discover``, else the
    ``initialize`` handshake; ``"legacy"``; ``"2026-07-28"``), ``elicitation`` and ``sampling``
    (the application's answer to a server's input requests: see :class:`MCPClient`).
    """
    with operation(registry, "mcp.load", _load_attributes(server, options)) as attrs:
        tools = _loop.run(_aload(registry, server, options, _settings(registry)))
        attrs["toolregistry.tools"] = len(tools)
    return tools


def _load_attributes(server: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """What an ``mcp.load`` operation says about the server (never its env or headers)."""
    if isinstance(server, Mapping):
        where = str(server.get("command") or server.get("url") or "?")
    else:
        where = str(server)
    if where.startswith(("http://", "https://")):
        where = public_url(where)
        transport = options.get("transport") or ("sse" if where.endswith("/sse")
                                                 else "streamable-http")
    else:
        transport = "stdio"
    return {"mcp.server": where, "mcp.transport": transport}


async def aload(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    """The ``mcp:async`` loader (``await registry.aregister_from_mcp(...)``); with
    ``session_loop="running"`` the session opens on the caller's event loop."""
    settings = _settings(registry)
    load = _aload(registry, server, options, settings)
    with operation(registry, "mcp.load", _load_attributes(server, options)) as attrs:
        if options.get("session_loop", settings.session_loop) == "running":
            tools = await load
        else:
            tools = await _loop.arun(load)
        attrs["toolregistry.tools"] = len(tools)
    return tools
