"""The mcp plugin's side of the kernel's reviewed-changes seam: the tools whose server changed
them after they were accepted, listed as :class:`~toolregistry.types.PendingChange` objects with
the screening findings of the pending version, and a review (accept exactly the version shown,
or keep the accepted one) carried out on the source that holds the tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.errors import ToolRegistrationError
from toolregistry.types import PendingChange

from . import _decisions
from ._loader import sources
from ._source import PLUGIN

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._source import MCPSource, _Registered


def pending_changes(registry: ToolRegistry) -> list[PendingChange]:
    """Every MCP tool of ``registry`` with a pending version, in load order."""
    out = []
    for source in sources(registry):
        for entry in list(source.registered.values()):
            tool = registry.get_tool(entry.name)
            if entry.pending is None or tool is None:
                continue
            extra = tool.metadata.extra
            if extra.get("pending_hash") != entry.pending:
                continue  # the registry is being updated for a newer version
            out.append(PendingChange(
                tool=entry.name, version=entry.pending, accepted=entry.fingerprint,
                description=str(extra.get("pending_description") or ""),
                parameters=dict(extra.get("pending_parameters") or {}),
                findings=tuple(dict(f) for f in extra.get("pending_findings") or ()),
                kept=entry.kept == entry.pending, source=source.client.display,
                plugin=PLUGIN))
    return out


def _holder(registry: ToolRegistry, name: str
            ) -> tuple[MCPSource, str, _Registered] | None:
    """The source that provides the registry's tool ``name``, the server's own name of it,
    and its review state."""
    for source in sources(registry):
        for original, entry in source.registered.items():
            if entry.name == name:
                return source, original, entry
    return None


def _remember(registry: ToolRegistry, source: MCPSource, original: str,
              entry: _Registered) -> None:
    """The review just made, kept in the registry's store for the next process."""
    _decisions.save(registry, source.client.display, original, entry.accepted,
                    entry.fingerprint, entry.kept)


def review_change(registry: ToolRegistry, tool: str, version: str, action: str
                  ) -> bool | None:
    """Accept or keep ``version`` of ``tool``; ``None`` when no MCP source of ``registry``
    provides ``tool``."""
    found = _holder(registry, tool)
    if found is None:
        return None
    source, original, entry = found
    if entry.pending is None and version not in entry.versions:
        raise LookupError(f"MCP tool {tool!r} has no pending change: its server still serves "
                          f"the accepted version {entry.fingerprint}")
    if action == "accept":
        report = source.refresh(accept_changes={tool: version})
        if tool not in report["accepted"] and entry.fingerprint != version:
            raise ToolRegistrationError(
                f"MCP tool {tool!r}: version {version} was not adopted (screening refused it "
                "or the server's definition is invalid; see the mcp.tool_change_refused event)")
        _remember(registry, source, original, entry)
        return True
    if action == "keep":
        if entry.pending != version:
            raise LookupError(f"MCP tool {tool!r}: no pending version {version} to keep; "
                              f"pending is {entry.pending or 'nothing'}")
        entry.kept = version
        _remember(registry, source, original, entry)
        return True
    raise ValueError(f"no review action {action!r}: 'accept' or 'keep'")
