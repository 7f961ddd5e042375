"""``registry.register_from_mcp(server, ...)``: an MCP server's tools as registry tools."""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field

from toolregistry import Tool, ToolMetadata
from toolregistry.errors import ConfigError, ToolNameCollisionError, ToolRegistrationError
from toolregistry.plugin import log, normalize_name
from toolregistry.tool import Provenance

from . import _loop
from ._client import MCPClient
from ._convert import from_call_result, truncate

if TYPE_CHECKING:
    import mcp_types

    from toolregistry import ToolRegistry

__all__ = ["MCPSettings", "MCPSource", "aload", "arefresh", "load", "refresh", "sources"]

PLUGIN = "mcp"
_STATE_KEY = "sources"


class MCPSettings(BaseModel):
    """``[tool.toolregistry.plugins.mcp]``: defaults for every MCP source of a registry."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    timeout: float = Field(60.0, gt=0, description="seconds per tool call")
    connect_timeout: float = Field(30.0, gt=0, alias="connect-timeout",
                                   description="seconds to start a server and finish the handshake")
    max_result_chars: int = Field(100_000, ge=0, alias="max-result-chars",
                                  description="longer text results are truncated (0: never); "
                                              "ignored when the spool plugin is loaded")
    max_message_bytes: int = Field(64 * 1024 * 1024, gt=0, alias="max-message-bytes",
                                   description="largest streamed HTTP message accepted")
    shutdown_grace: float = Field(2.0, ge=0, alias="shutdown-grace",
                                  description="seconds a stdio server may take to exit after "
                                              "its stdin closes, before SIGTERM / SIGKILL")
    inherit_env: list[str] = Field(default_factory=list, alias="inherit-env",
                                   description="extra environment variable names passed to "
                                               "stdio servers")
    session_loop: Literal["background", "running"] = Field(
        "background", alias="session-loop",
        description="where sessions live: the plugin's background loop thread, or the event "
                    "loop that opens them (async applications: no thread hand-over per call)")


def _settings(registry: ToolRegistry) -> MCPSettings:
    return registry.plugin_settings(PLUGIN, MCPSettings)


def _fingerprint(tool: mcp_types.Tool) -> str:
    canon = json.dumps([tool.description or "", tool.input_schema], sort_keys=True,
                       ensure_ascii=False, default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def _schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a tool's parameters, or ``None`` when it can."""
    if not isinstance(schema, dict):
        return f"inputSchema is a {type(schema).__name__}, not a JSON Schema object"
    kind = schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        return f"inputSchema has type {kind!r}; MCP tool arguments must be an object"
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return f"inputSchema 'properties' is a {type(props).__name__}, not an object"
    try:
        import jsonschema_rs

        def refuse(uri: str) -> Any:
            raise ValueError(f"remote $ref {uri} is not allowed")

        jsonschema_rs.validator_for(schema, retriever=refuse)
    except Exception as exc:
        return f"inputSchema is not a valid JSON Schema: {str(exc).splitlines()[0][:300]}"
    return None


def _matches(name: str, patterns: Iterable[str] | str | None) -> bool:
    if patterns is None:
        return False
    if isinstance(patterns, str):
        patterns = [patterns]
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


@attrs.define(eq=False)
class _Registered:
    name: str  # the registry's name
    fingerprint: str  # description + inputSchema when registered


@attrs.define(eq=False)
class MCPSource:
    """One loaded MCP server: its client, the registry tools it provides, and refresh.

    Obtain them with :func:`toolregistry_mcp.sources`.
    """

    client: MCPClient
    namespace: str | None
    include: Any
    exclude: Any
    replace: bool
    timeout: float | None
    max_result_chars: int
    _registry: weakref.ref[ToolRegistry] = attrs.field(alias="_registry")
    registered: dict[str, _Registered] = attrs.field(factory=dict)
    skipped: dict[str, str] = attrs.field(factory=dict)
    _refresh_lock: asyncio.Lock | None = None
    _finalizer: Any = None

    @property
    def registry(self) -> ToolRegistry | None:
        return self._registry()

    @property
    def tool_names(self) -> list[str]:
        """The registry names of this server's tools."""
        return [r.name for r in self.registered.values()]

    def wanted(self, name: str) -> bool:
        if self.include is not None and not _matches(name, self.include):
            return False
        return not _matches(name, self.exclude)

    # -- building tools -----------------------------------------------------------------
    def build(self, tool: mcp_types.Tool) -> Tool:
        problem = _schema_problem(tool.input_schema)
        if problem is not None:
            raise ToolRegistrationError(
                f"MCP server {self.client.display}: tool {tool.name!r} was skipped: {problem}"
            )
        ann = tool.annotations
        info = self.client.server_info
        registry = self.registry
        metadata = ToolMetadata(
            # Long results go to the spool plugin when it is there (it is opt-in per tool);
            # else acall() truncates them.
            too_long_to_file=True if registry is not None and _spool_loaded(registry) else None,
            # A little above our own per-call timeout, so that the registry's default
            # timeout never cuts a call the user allowed to run longer, and ours (which
            # cancels the request on the server and says so) fires first.
            timeout=self.timeout + 5 if self.timeout else None,
            title=tool.title or (ann.title if ann else None),
            read_only_hint=ann.read_only_hint if ann else None,
            destructive_hint=ann.destructive_hint if ann else None,
            idempotent_hint=ann.idempotent_hint if ann else None,
            open_world_hint=ann.open_world_hint if ann else None,
            extra={
                "mcp_server": self.client.display,
                "mcp_server_name": info.name if info else None,
                "changed_since_registration": False,
            },
        )
        return Tool(
            name=tool.name,
            description=tool.description or "",
            parameters=tool.input_schema,
            # Both twins: the sync API blocks on the session's loop directly (one hop), the
            # async API awaits it (no worker thread in between).
            callable=self._callable(tool.name),
            acallable=self._acallable(tool.name),
            metadata=metadata,
            provenance=Provenance(kind="mcp", detail=self.client.display,
                                  original_name=tool.name, plugin=PLUGIN),
            output_schema=tool.output_schema,
            is_async=False,
        )

    def _callable(self, original: str) -> Any:
        source = self

        def call_mcp_tool(**arguments: Any) -> Any:
            return source.call(original, arguments)

        call_mcp_tool.__name__ = normalize_name(original)
        call_mcp_tool.__qualname__ = f"MCP {self.client.display}: {original}"
        return call_mcp_tool

    def _acallable(self, original: str) -> Any:
        source = self

        async def acall_mcp_tool(**arguments: Any) -> Any:
            return await source.acall(original, arguments)

        acall_mcp_tool.__name__ = normalize_name(original)
        acall_mcp_tool.__qualname__ = f"MCP {self.client.display}: {original}"
        return acall_mcp_tool

    def call(self, original: str, arguments: dict[str, Any]) -> Any:
        """Call a tool of this server by its MCP name, blocking; returns the converted result."""
        result = self.client.call_tool(original, arguments, timeout=self.timeout)
        return self._convert(original, result)

    async def acall(self, original: str, arguments: dict[str, Any]) -> Any:
        """Call a tool of this server by its MCP name; returns the converted result."""
        result = await self.client.acall_tool(original, arguments, timeout=self.timeout)
        return self._convert(original, result)

    def _convert(self, original: str, result: Any) -> Any:
        value = from_call_result(result, server=self.client.display, tool=original)
        if self.max_result_chars and not self._spooled(original):
            value = truncate(value, self.max_result_chars)
        return value

    def _spooled(self, original: str) -> bool:
        """Will the spool plugin take this tool's long results (so we must not cut them)?"""
        registry = self.registry
        if registry is None or not _spool_loaded(registry):
            return False
        entry = self.registered.get(original)
        tool = registry.get_tool(entry.name) if entry is not None else None
        flag = tool.metadata.too_long_to_file if tool is not None else True
        if flag is None:  # follows the spool plugin's own all-tools setting
            try:
                return bool(registry.config.plugin_table("spool").get("all_tools"))
            except Exception:
                return False
        return bool(flag)

    # -- refresh ------------------------------------------------------------------------
    async def _refresh_on_loop(self, accept_changes: bool) -> dict[str, list[str]]:
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        async with self._refresh_lock:
            listed = await self.client._list_tools()
            # Registry changes fire on_change hooks (discovery reindexes): off the MCP loop.
            return await asyncio.to_thread(self._apply, listed, accept_changes)

    def _apply(self, listed: list[mcp_types.Tool], accept_changes: bool
               ) -> dict[str, list[str]]:
        registry = self.registry
        report: dict[str, list[str]] = {"added": [], "removed": [], "changed": [],
                                        "skipped": []}
        if registry is None or registry.closed:
            return report
        current = {t.name: t for t in listed if self.wanted(t.name)}
        self._note_invalid(report["skipped"])
        for original in [o for o in self.registered if o not in current]:
            entry = self.registered.pop(original)
            if entry.name in registry:
                registry.unregister(entry.name)
            report["removed"].append(entry.name)
        for original, tool in current.items():
            known = self.registered.get(original)
            if known is None:
                try:
                    built = self.build(tool)
                    added = registry.register_tools([built], namespace=self.namespace,
                                                    replace=self.replace)
                except (ToolRegistrationError, ValueError) as exc:
                    if self.skipped.get(original) == str(exc):
                        continue  # reported when it was first seen
                    self.skipped[original] = str(exc)
                    report["skipped"].append(original)
                    log.warning("mcp.tool_skipped", server=self.client.display, tool=original,
                                reason=str(exc))
                    continue
                self.skipped.pop(original, None)
                self.registered[original] = _Registered(added[0].name, _fingerprint(tool))
                report["added"].append(added[0].name)
                continue
            entry = known
            fingerprint = _fingerprint(tool)
            if entry.name not in registry:
                continue
            if fingerprint == entry.fingerprint:
                old = registry[entry.name]
                if old.metadata.extra.get("changed_since_registration"):
                    # The server went back to what was accepted: nothing to review any more.
                    extra = {k: v for k, v in old.metadata.extra.items()
                             if k not in ("pending_description", "pending_parameters")}
                    extra["changed_since_registration"] = False
                    registry.update_tool_metadata(entry.name, extra=extra)
                    log.info("mcp.tool_change_reverted", server=self.client.display,
                             tool=entry.name)
                continue
            report["changed"].append(entry.name)
            old = registry[entry.name]
            if accept_changes:
                try:
                    new = self.build(tool)
                except ToolRegistrationError as exc:
                    log.warning("mcp.tool_skipped", server=self.client.display, tool=original,
                                reason=str(exc))
                    continue
                new = new.evolve(name=old.name, namespace=old.namespace)
                registry.update_tool(new)
                entry.fingerprint = fingerprint
                log.info("mcp.tool_change_accepted", server=self.client.display,
                         tool=entry.name)
                continue
            if old.metadata.extra.get("changed_since_registration"):
                continue  # flagged already; say it once
            # The registered description and schema stay what the application saw and
            # accepted; the new ones wait in metadata until refresh(accept_changes=True).
            log.warning("mcp.tool_changed", server=self.client.display, tool=entry.name,
                        original_name=original,
                        description_changed=(tool.description or "") != old.description,
                        schema_changed=tool.input_schema != old.parameters)
            extra = dict(old.metadata.extra)
            extra.update(changed_since_registration=True,
                         pending_description=tool.description or "",
                         pending_parameters=tool.input_schema)
            registry.update_tool_metadata(entry.name, extra=extra)
        if any(report.values()):
            log.info("mcp.refreshed", server=self.client.display,
                     **{k: v for k, v in report.items() if v})
        return report

    def _note_invalid(self, skipped: list[str] | None = None) -> None:
        for name, why in self.client.invalid_tools.items():
            if not self.wanted(name) or self.skipped.get(name) == why:
                continue
            self.skipped[name] = why
            if skipped is not None:
                skipped.append(name)
            log.warning("mcp.tool_skipped", server=self.client.display, tool=name, reason=why)

    def refresh(self, *, accept_changes: bool = False) -> dict[str, list[str]]:
        """List the server's tools again and update the registry: new tools are registered,
        vanished ones unregistered, changed ones flagged (``accept_changes=True`` adopts the
        new description and schema instead). Returns ``{added, removed, changed, skipped}``."""
        return self.client.run_on_session_loop(  # type: ignore[no-any-return]
            self._refresh_on_loop(accept_changes))

    async def arefresh(self, *, accept_changes: bool = False) -> dict[str, list[str]]:
        """Async :meth:`refresh`."""
        return await self.client.arun_on_session_loop(  # type: ignore[no-any-return]
            self._refresh_on_loop(accept_changes))

    def close(self) -> None:
        """End the server session (the tools stay registered and reconnect on their next call
        unless the registry is closed)."""
        self.client.close()


def _spool_loaded(registry: ToolRegistry) -> bool:
    plugins = getattr(registry, "plugins", None)
    is_loaded = getattr(plugins, "is_loaded", None)
    return bool(is_loaded("spool")) if is_loaded is not None else False


_state_lock = threading.Lock()


def sources(registry: ToolRegistry) -> list[MCPSource]:
    """The MCP sources loaded into ``registry``, in load order."""
    with _state_lock:
        return list(registry.plugin_state(PLUGIN).get(_STATE_KEY, []))


def refresh(registry: ToolRegistry, *, accept_changes: bool = False) -> dict[str, list[str]]:
    """:meth:`MCPSource.refresh` for every MCP source of ``registry``; reports merged."""
    merged: dict[str, list[str]] = {"added": [], "removed": [], "changed": [], "skipped": []}
    for source in sources(registry):
        for key, names in source.refresh(accept_changes=accept_changes).items():
            merged[key].extend(names)
    return merged


async def arefresh(registry: ToolRegistry, *, accept_changes: bool = False
                   ) -> dict[str, list[str]]:
    """Async :func:`refresh`."""
    merged: dict[str, list[str]] = {"added": [], "removed": [], "changed": [], "skipped": []}
    for source in sources(registry):
        report = await source.arefresh(accept_changes=accept_changes)
        for key, names in report.items():
            merged[key].extend(names)
    return merged


_OPTIONS = ("namespace", "include", "exclude", "timeout", "persistent", "replace", "headers",
            "env", "cwd", "transport", "connect_timeout", "max_result_chars", "inherit_env",
            "session_loop")


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
        connect_timeout=float(options.get("connect_timeout", settings.connect_timeout)),
        persistent=bool(options.get("persistent", True)),
        inherit_env=tuple(options.get("inherit_env") or settings.inherit_env),
        max_message_bytes=settings.max_message_bytes,
        shutdown_grace=settings.shutdown_grace,
        session_loop=str(options.get("session_loop", settings.session_loop)),
    )
    try:
        listed = await client.alist_tools()
        namespace = options.get("namespace")
        if namespace is True:
            info = client.server_info
            if info is None or not info.name:
                raise ConfigError(f"namespace=True: MCP server {spec.display} did not send its "
                                  "name; pass namespace='...'")
            namespace = normalize_name(info.name)
        elif namespace is False:
            namespace = None
        source = MCPSource(
            client=client, namespace=namespace, include=options.get("include"),
            exclude=options.get("exclude"), replace=bool(options.get("replace", False)),
            timeout=timeout, max_result_chars=int(options.get("max_result_chars",
                                                              settings.max_result_chars)),
            _registry=weakref.ref(registry),
        )
        source._note_invalid()
        tools: list[Tool] = []
        originals: list[mcp_types.Tool] = []
        for tool in listed:
            if not source.wanted(tool.name):
                continue
            try:
                tools.append(source.build(tool))
                originals.append(tool)
            except ToolRegistrationError as exc:
                source.skipped[tool.name] = str(exc)
                log.warning("mcp.tool_skipped", server=spec.display, tool=tool.name,
                            reason=str(exc))
        try:
            added = await asyncio.to_thread(registry.register_tools, tools,
                                            namespace=namespace, replace=source.replace)
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
        source.registered[tool.name] = _Registered(registered.name, _fingerprint(tool))
    async def on_list_changed(_client: MCPClient) -> None:
        await source._refresh_on_loop(False)

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


def _close_later(client: MCPClient) -> None:
    if not client.closed:
        _loop.submit(client.aclose())


def load(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    """The ``mcp`` loader: ``registry.register_from_mcp(server, **options)``.

    ``server``: a stdio spec ``{"command", "args", "env", "cwd"}``, a ``.py`` / ``.js`` script
    path, or an ``http(s)`` URL (``headers=``; SSE when it ends with ``/sse`` or
    ``transport="sse"``). Options: ``namespace`` (a prefix, or ``True`` for the server's own
    name), ``include`` / ``exclude`` (tool names or glob patterns), ``timeout`` (seconds per
    call), ``persistent`` (one shared session, default; ``False``: a session per call),
    ``replace``, ``env``, ``cwd``, ``connect_timeout``, ``max_result_chars``, ``inherit_env``,
    ``session_loop`` (``"background"``, default, or ``"running"``: see :class:`MCPClient`).
    """
    return _loop.run(_aload(registry, server, options, _settings(registry)))


async def aload(registry: ToolRegistry, server: Any, **options: Any) -> list[Tool]:
    """The ``mcp:async`` loader (``await registry.aregister_from_mcp(...)``); with
    ``session_loop="running"`` the session opens on the caller's event loop."""
    settings = _settings(registry)
    load = _aload(registry, server, options, settings)
    if options.get("session_loop", settings.session_loop) == "running":
        return await load
    return await _loop.arun(load)
