"""One loaded MCP server as a source of registry tools (:class:`MCPSource`).

It owns turning the server's tool definitions into registry tools (schema checks, metadata,
the sync and async callables that call the server, result conversion and truncation),
screening them (:mod:`._screen`) and keeping them in step with the server: ``refresh`` after
``tools/list_changed``, changed definitions held back as pending versions until accepted by
their hash. Loading a server and the module-level ``refresh`` / ``sources`` are :mod:`._loader`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import re
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from toolregistry import Tool, ToolMetadata, ToolResult
from toolregistry.errors import ToolCallError, ToolNotFoundError, ToolRegistrationError
from toolregistry.plugin import (
    log,
    normalize_name,
    outgoing_context,
    output_limits,
    source_options,
)
from toolregistry.tool import Provenance

from . import _decisions, _loop
from ._client import MCPClient
from ._convert import from_call_result, truncate
from ._deadline import total_limit
from ._runner import MARK
from ._screen import Finding, Screener

if TYPE_CHECKING:
    import mcp_types

    from toolregistry import ToolRegistry
    from toolregistry.types import ProgressReporter

__all__ = ["PLUGIN", "AcceptChanges", "MCPSource"]

PLUGIN = "mcp"
# The keyword the kernel passes each call's ToolContext under (not an MCP argument name).
_CONTEXT = "__toolregistry_context__"

AcceptChanges = bool | Mapping[str, str]
"""``True``: every pending version; ``{registry tool name: pending_hash}``: exactly those."""


def _fingerprint(tool: mcp_types.Tool) -> str:
    """One version of a tool's definition: everything a change could use to mislead (the
    texts, the schemas, and the annotations that decide how calls are scheduled)."""
    ann = tool.annotations.model_dump(mode="json", exclude_none=True) if tool.annotations \
        else None
    canon = json.dumps([tool.description or "", tool.input_schema, tool.title, ann,
                        tool.output_schema], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


# What metadata.extra says about a change waiting for review.
_NOT_FOUND = re.compile(r"\bno such tool\b|\btool\b.{0,80}\bnot found\b")

_PENDING_KEYS = ("pending_description", "pending_parameters", "pending_hash",
                 "pending_findings")
_KEEP_VERSIONS = 16  # unaccepted versions remembered per tool (so any shown one can be accepted)


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


def _kernel_timeout(timeout: float | None, max_timeout: float | None) -> float | None:
    cap = total_limit(timeout, max_timeout)
    return cap + 5 if cap else None


def _matches(name: str, patterns: Iterable[str] | str | None) -> bool:
    if patterns is None:
        return False
    if isinstance(patterns, str):
        patterns = [patterns]
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


@attrs.define(eq=False)
class _Registered:
    name: str  # the registry's name
    fingerprint: str  # the accepted version (what the registry tool is)
    pending: str | None = None  # the version the server lists, when it differs
    # Versions seen and not accepted, oldest first: any version that was shown as pending
    # can be accepted by its hash, even after the server moved on.
    versions: dict[str, mcp_types.Tool] = attrs.field(factory=dict)
    kept: str | None = None  # a pending version someone chose not to adopt (keep_change)
    accepted: mcp_types.Tool | None = None  # the accepted version as the server sent it

    def remember(self, fingerprint: str, tool: mcp_types.Tool) -> None:
        self.versions.pop(fingerprint, None)
        self.versions[fingerprint] = tool
        while len(self.versions) > _KEEP_VERSIONS:
            del self.versions[next(iter(self.versions))]


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
    screening: str = "warn"
    concurrency_group: str | None = None
    """The kernel's concurrency group of this server's tools (``ordering = "server"``)."""
    registered: dict[str, _Registered] = attrs.field(factory=dict)
    skipped: dict[str, str] = attrs.field(factory=dict)
    refused: str | None = None
    """Why screening refused this source after it was loaded (its tools are disabled)."""
    common: Any = attrs.field(factory=source_options)
    server_name: str | None = None
    """The server's name when the tools were listed (before a session: from the list cache)."""
    """The common source options the kernel applied when the source was loaded."""
    _refresh_lock: asyncio.Lock | None = None
    _finalizer: Any = None
    _closing: Any = None

    @property
    def registry(self) -> ToolRegistry | None:
        return self._registry()

    @property
    def tool_names(self) -> list[str]:
        """The registry names of this server's tools."""
        return [r.name for r in self.registered.values()]

    def wanted(self, name: str) -> bool:
        """Whether the server's tool ``name`` is one the source takes: ``include`` /
        ``exclude`` match the server's name or the registered one (namespaced)."""
        names = (name, f"{self.namespace}-{name}") if self.namespace else (name,)
        if self.include is not None and not any(_matches(n, self.include) for n in names):
            return False
        return not any(_matches(n, self.exclude) for n in names)

    # -- screening ----------------------------------------------------------------------
    def screener(self) -> Screener:
        """A screener for this source's definitions that knows the tools other sources of
        the registry provide (for shadowing and cross-tool findings)."""
        others: dict[str, str] = {}
        registry = self.registry
        if registry is not None and self.screening != "off":
            mine = {e.name for e in self.registered.values()}
            for tool in registry.get_tools(include_disabled=True):
                if tool.name in mine:
                    continue
                label = f"{tool.name!r} of {tool.provenance.detail or tool.provenance.kind}"
                others[tool.name] = label
                if tool.provenance.original_name:
                    others.setdefault(tool.provenance.original_name, label)
        return Screener(self.screening, others)

    def _flagged(self, name: str, findings: list[Finding], *, pending: bool = False) -> str:
        """Report ``findings`` on the registry tool ``name`` (the ``mcp.tool_suspicious``
        event); the reason a disabled tool or a refused source gives."""
        log.warning("mcp.tool_suspicious", server=self.client.display, tool=name,
                    pending=pending, action=self.screening,
                    kinds=sorted({f.kind for f in findings}),
                    findings=[f.to_dict() for f in findings])
        return _reason(self.client.display, name, findings, pending=pending)

    def _refuse(self, registry: ToolRegistry, reason: str) -> None:
        """Screening refused this source after it was loaded: every tool of it is disabled
        with ``reason`` and its session ends."""
        self.refused = reason
        for entry in self.registered.values():
            if entry.name in registry:
                registry.disable(entry.name, reason=reason)
        log.error("mcp.source_refused", server=self.client.display, reason=reason)
        self._closing = _loop.submit(self.client.aclose())

    # -- building tools -----------------------------------------------------------------
    def build(self, tool: mcp_types.Tool, findings: list[Finding] | None = None) -> Tool:
        problem = _schema_problem(tool.input_schema)
        if problem is not None:
            raise ToolRegistrationError(
                f"MCP server {self.client.display}: tool {tool.name!r} was skipped: {problem}"
            )
        ann = tool.annotations
        info = self.client.server_info
        server_name = info.name if info is not None else self.server_name
        metadata = ToolMetadata(
            # Long results may be kept whole by a plugin that takes long output (spooling is
            # opt-in per tool); else _convert() cuts them (see output_limits).
            too_long_to_file=True,
            # A little above our own cap on a call, so that the registry's default
            # timeout never cuts a call the user allowed to run longer (one that keeps
            # reporting progress), and ours (which cancels the request on the server and
            # says so) fires first.
            timeout=_kernel_timeout(self.timeout, self.client.max_timeout),
            title=tool.title or (ann.title if ann else None),
            # Writes of one server must not race its reads in a batch: the kernel orders the
            # non-read-only calls of a group (readOnlyHint false or absent) with the others.
            concurrency_group=self.concurrency_group,
            read_only_hint=ann.read_only_hint if ann else None,
            destructive_hint=ann.destructive_hint if ann else None,
            idempotent_hint=ann.idempotent_hint if ann else None,
            open_world_hint=ann.open_world_hint if ann else None,
            extra={
                "mcp_server": self.client.display,
                "mcp_server_name": server_name,
                "changed_since_registration": False,
                "accepted_hash": _fingerprint(tool),
                **({"mcp_findings": [f.to_dict() for f in findings]} if findings else {}),
            },
        )
        built = Tool(
            name=tool.name,
            description=tool.description or "",
            parameters=tool.input_schema,
            # Both twins: the sync API blocks on the session's loop directly (one hop), the
            # async API awaits it (no worker thread in between).
            callable=self._callable(tool.name),
            acallable=self._acallable(tool.name),
            # Cancelling it cancels the request (a notification to the server) and returns
            # at once: the async API awaits it in the caller's task, with no task of its own.
            ends_on_cancel=True,
            context_param=_CONTEXT,
            metadata=metadata,
            provenance=Provenance(kind="mcp", detail=self.client.display,
                                  original_name=tool.name, plugin=PLUGIN),
            output_schema=tool.output_schema,
            is_async=False,
        )
        # The common options the kernel applies at loading (defer, tags) hold for the tools
        # a refresh adds or adopts later too.
        return self.common.apply([built])[0] if self.common is not None else built

    def _callable(self, original: str) -> Any:
        source = self

        def call_mcp_tool(**arguments: Any) -> Any:
            context = arguments.pop(_CONTEXT, None)
            return source.call(original, arguments, progress=getattr(context, "progress", None))

        call_mcp_tool.__name__ = normalize_name(original)
        call_mcp_tool.__qualname__ = f"MCP {self.client.display}: {original}"
        # The dispatch hook knows an MCP tool by this: its source, and the coroutine function
        # its runner awaits for either API.
        setattr(call_mcp_tool, MARK, (self, self._acallable(original)))
        return call_mcp_tool

    def _acallable(self, original: str) -> Any:
        source = self

        async def acall_mcp_tool(**arguments: Any) -> Any:
            context = arguments.pop(_CONTEXT, None)
            return await source.acall(original, arguments,
                                      progress=getattr(context, "progress", None))

        acall_mcp_tool.__name__ = normalize_name(original)
        acall_mcp_tool.__qualname__ = f"MCP {self.client.display}: {original}"
        setattr(acall_mcp_tool, MARK, (self, acall_mcp_tool))
        return acall_mcp_tool

    def call(self, original: str, arguments: dict[str, Any], *,
             progress: ProgressReporter | None = None) -> Any:
        """Call a tool of this server by its MCP name, blocking; returns the converted result.
        The server's progress notifications go to ``progress``."""
        # in the call's own context: what the tracing plugins add (W3C traceparent) goes
        # along in the request's _meta
        try:
            result = self.client.call_tool(original, arguments, timeout=self.timeout,
                                           progress=progress, meta=outgoing_context() or None)
            return self._convert(original, result)
        except ToolCallError as exc:
            if self._gone(original, exc):
                self.client.run_on_session_loop(self._list_again())
            raise

    async def acall(self, original: str, arguments: dict[str, Any], *,
                    progress: ProgressReporter | None = None) -> Any:
        """Call a tool of this server by its MCP name; returns the converted result."""
        try:
            result = await self.client.acall_tool(original, arguments, timeout=self.timeout,
                                                  progress=progress,
                                                  meta=outgoing_context() or None)
            return self._convert(original, result)
        except ToolCallError as exc:
            if self._gone(original, exc):
                await self.client.arun_on_session_loop(self._list_again())
            raise

    def _gone(self, original: str, exc: ToolCallError) -> bool:
        """The server says it has no tool ``original``: the list the tools came from (the
        list cache's, perhaps) is out of date."""
        text = str(exc).lower()
        return "unknown tool" in text or bool(_NOT_FOUND.search(text)) or (
            original.lower() in text and "not found" in text)

    async def _list_again(self) -> None:
        """Forget the cached list and list the server's tools again (the registry's change
        events report the difference); a failure to is only reported."""
        cache = self.client.list_cache
        log.info("mcp.tool_missing", server=self.client.display)
        try:
            if cache is not None:
                await asyncio.to_thread(cache.drop)
            await self._refresh_on_loop({})
        except Exception as exc:
            log.warning("mcp.refresh_failed", server=self.client.display,
                        error=f"{type(exc).__name__}: {exc}")

    def _convert(self, original: str, result: Any) -> Any:
        value = from_call_result(result, server=self.client.display, tool=original)
        limit = self.max_result_chars
        # The plugins' limits are asked only of a result long enough to matter.
        if limit and _text_length(value) > limit:
            cut = self._limit(original, limit)
            if cut is not None:
                value = truncate(value, cut)
        return value

    def _limit(self, original: str, own: int) -> int | None:
        """Where to cut this tool's long results: ``own`` limit, a smaller one a plugin asks
        for, or ``None`` when a plugin takes long output whole (through the kernel's
        ``output_limits`` seam)."""
        registry = self.registry
        entry = self.registered.get(original)
        tool = registry.get_tool(entry.name) if registry is not None and entry is not None \
            else None
        limits = output_limits(registry, tool) if registry is not None and tool is not None \
            else None
        if limits is None:
            return own
        return None if limits.max_chars is None else min(own, limits.max_chars)

    # -- refresh ------------------------------------------------------------------------
    async def _refresh_on_loop(self, accept: Mapping[str, str], *, unless_listed: bool = False
                               ) -> dict[str, list[str]]:
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        async with self._refresh_lock:
            if unless_listed and self.client.listed_live:  # a refresh came first
                return {}
            listed = await self.client._list_tools()
            # Registry changes fire on_change hooks (discovery reindexes): off the MCP loop.
            return await asyncio.to_thread(self._apply, listed, accept)

    def _apply(self, listed: list[mcp_types.Tool], accept: Mapping[str, str]
               ) -> dict[str, list[str]]:
        registry = self.registry
        report: dict[str, list[str]] = {"added": [], "removed": [], "changed": [],
                                        "accepted": [], "skipped": []}
        if registry is None or registry.closed or self.refused is not None:
            return report
        screener = self.screener()
        current = {t.name: t for t in listed if self.wanted(t.name)}
        self._note_invalid(report["skipped"])
        for original in [o for o in self.registered if o not in current]:
            gone = self.registered.pop(original)
            if gone.name in registry:
                registry.unregister(gone.name)
            report["removed"].append(gone.name)
        for original, tool in current.items():
            entry = self.registered.get(original)
            if entry is None:
                self._add(registry, screener, tool, report)
            elif entry.name in registry:
                self._review(registry, screener, entry, tool, accept.get(entry.name), report)
            if self.refused is not None:
                break
        if any(report.values()):
            log.info("mcp.refreshed", server=self.client.display,
                     **{k: v for k, v in report.items() if v})
        return report

    def _add(self, registry: ToolRegistry, screener: Screener, tool: mcp_types.Tool,
             report: dict[str, list[str]]) -> None:
        original, served = tool.name, tool
        tool = _decisions.registered_version(registry, self.client.display, tool)
        screened, findings = screener.check(tool)
        if findings and self.screening == "refuse":
            self._refuse(registry, self._flagged(original, findings))
            return
        try:
            built = self.build(screened, findings)
            added = registry.register_tools([built], namespace=self.namespace,
                                            replace=self.replace)
        except (ToolRegistrationError, ValueError) as exc:
            if self.skipped.get(original) == str(exc):
                return  # reported when it was first seen
            self.skipped[original] = str(exc)
            report["skipped"].append(original)
            log.warning("mcp.tool_skipped", server=self.client.display, tool=original,
                        reason=str(exc))
            return
        self.skipped.pop(original, None)
        entry = self.registered[original] = _Registered(added[0].name, _fingerprint(tool),
                                                        accepted=tool)
        report["added"].append(added[0].name)
        if tool is not served:
            _decisions.served_again(self, entry, served, report)
        if findings:
            reason = self._flagged(added[0].name, findings)
            if self.screening == "disable":
                registry.disable(added[0].name, reason=reason)

    def _review(self, registry: ToolRegistry, screener: Screener, entry: _Registered,
                tool: mcp_types.Tool, accept: str | None, report: dict[str, list[str]]
                ) -> None:
        """One registered tool against the server's current version ``tool``: adopt the
        version ``accept`` names (exactly that one), and show whatever still differs from
        what is registered as pending."""
        fingerprint = _fingerprint(tool)
        if fingerprint != entry.fingerprint:
            entry.remember(fingerprint, tool)
        old = registry[entry.name]
        new: Tool | None = None
        adopted: list[Finding] = []
        if accept is not None and accept != entry.fingerprint:
            version = entry.versions.get(accept)
            try:
                if version is None:
                    raise ToolRegistrationError(f"version {accept} is no longer known")
                screened, adopted = screener.check(version)
                if adopted and self.screening == "refuse":
                    self._refuse(registry, self._flagged(entry.name, adopted))
                    return
                new = self.build(screened, adopted).evolve(name=old.name,
                                                           namespace=old.namespace)
            except ToolRegistrationError as exc:
                log.warning("mcp.tool_change_refused", server=self.client.display,
                            tool=entry.name, version=accept, reason=str(exc))
            else:
                entry.fingerprint, entry.accepted = accept, version
                entry.versions.pop(accept, None)
                report["accepted"].append(entry.name)
                log.info("mcp.tool_change_accepted", server=self.client.display,
                         tool=entry.name, version=accept)
        pending = fingerprint if fingerprint != entry.fingerprint else None
        if new is None and pending == entry.pending:
            if pending is not None:
                report["changed"].append(entry.name)
            return  # shown already (or nothing to show)
        base = new if new is not None else old
        # The registered description and schema stay what the application accepted; a
        # newer version waits in metadata until it is accepted by its hash.
        extra = {k: v for k, v in base.metadata.extra.items() if k not in _PENDING_KEYS}
        extra.update(changed_since_registration=pending is not None,
                     accepted_hash=entry.fingerprint)
        suspicious: list[Finding] = []
        if pending is not None:
            _, suspicious = screener.check(tool)
            extra.update(pending_description=tool.description or "",
                         pending_parameters=tool.input_schema, pending_hash=pending)
            if suspicious:
                extra["pending_findings"] = [f.to_dict() for f in suspicious]
            report["changed"].append(entry.name)
            log.warning("mcp.tool_changed", server=self.client.display, tool=entry.name,
                        original_name=tool.name, version=pending,
                        description_changed=(tool.description or "") != base.description,
                        schema_changed=tool.input_schema != base.parameters)
        elif new is None:  # the server went back to what was accepted
            log.info("mcp.tool_change_reverted", server=self.client.display, tool=entry.name)
        entry.pending = pending
        if new is not None:
            registry.update_tool(new.evolve(metadata=attrs.evolve(new.metadata, extra=extra)))
        else:
            registry.update_tool_metadata(entry.name, extra=extra)
        # A poisoned definition, adopted or now served by the server (which may act on it):
        # the source's screening action.
        for findings, is_pending in ((adopted, False), (suspicious, True)):
            if not findings:
                continue
            reason = self._flagged(entry.name, findings, pending=is_pending)
            if self.screening == "refuse":
                self._refuse(registry, reason)
                return
            if self.screening == "disable":
                registry.disable(entry.name, reason=reason)

    def _note_invalid(self, skipped: list[str] | None = None) -> None:
        for name, why in self.client.invalid_tools.items():
            if not self.wanted(name) or self.skipped.get(name) == why:
                continue
            self.skipped[name] = why
            if skipped is not None:
                skipped.append(name)
            log.warning("mcp.tool_skipped", server=self.client.display, tool=name, reason=why)

    def refresh(self, *, accept_changes: AcceptChanges = False) -> dict[str, list[str]]:
        """List the server's tools again and update the registry: new tools are registered,
        vanished ones unregistered, changed ones flagged with their pending version.

        ``accept_changes`` adopts reviewed versions: ``{registry name: pending_hash}`` adopts
        exactly those versions; ``True`` adopts every version pending when this is called
        (never one this refresh is the first to see: that one becomes pending). Returns
        ``{added, removed, changed, accepted, skipped}``; ``changed`` lists the tools still
        waiting for review."""
        return self.client.run_on_session_loop(  # type: ignore[no-any-return]
            self._refresh_on_loop(self._accepting(accept_changes)))

    async def arefresh(self, *, accept_changes: AcceptChanges = False) -> dict[str, list[str]]:
        """Async :meth:`refresh`."""
        return await self.client.arun_on_session_loop(  # type: ignore[no-any-return]
            self._refresh_on_loop(self._accepting(accept_changes)))

    def _accepting(self, accept_changes: AcceptChanges) -> dict[str, str]:
        """``accept_changes`` as ``{registry name: version}``, checked before anything runs."""
        entries = {e.name: e for e in self.registered.values()}
        if accept_changes is True:
            return {name: e.pending for name, e in entries.items() if e.pending is not None}
        if not accept_changes:
            return {}
        unknown = sorted(set(accept_changes) - set(entries))
        if unknown:
            raise ToolNotFoundError(f"accept_changes names {unknown}, which MCP server "
                                    f"{self.client.display} does not provide")
        for name, version in accept_changes.items():
            entry = entries[name]
            if version != entry.fingerprint and version not in entry.versions:
                raise ToolRegistrationError(
                    f"MCP tool {name!r}: no version {version} to accept; pending is "
                    f"{entry.pending or 'nothing'} (metadata.extra['pending_hash']), accepted "
                    f"is {entry.fingerprint}")
        return dict(accept_changes)

    def close(self) -> None:
        """End the server session (the tools stay registered and reconnect on their next call
        unless the registry is closed)."""
        self.client.close()


def _reason(server: str, name: str, findings: list[Finding], *, pending: bool = False) -> str:
    """One line saying what screening found in a tool's definition."""
    parts = [f"{f.kind} in {f.where} ({f.excerpt})" for f in findings[:4]]
    if len(findings) > 4:
        parts.append(f"and {len(findings) - 4} more")
    what = "the pending change of tool" if pending else "tool"
    return (f"MCP server {server}: screening flagged {what} {name!r}: " + "; ".join(parts)
            + ". Review metadata.extra['mcp_findings'] / ['pending_findings']")


def _text_length(value: Any) -> int:
    if isinstance(value, ToolResult):  # structured content beside the text
        value = value.value
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(len(part) for part in value if isinstance(part, str))
    return 0
