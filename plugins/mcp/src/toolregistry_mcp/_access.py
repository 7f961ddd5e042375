"""Per-client scoping of a served registry: which tools a token (or an OAuth scope) may see.

An :class:`Access` names tools (glob patterns), namespaces and tags; a client sees a tool when
any of them matches. A client's access is the union of its grants: the entry of its bearer
token, or the entries of the OAuth scopes its token carries. Everything else is invisible to
it: not listed, and a call to it is answered exactly like a call to a tool that does not exist.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import TYPE_CHECKING

from attrs import field, frozen
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from toolregistry import Tool

__all__ = ["EVERYTHING", "NOTHING", "Access", "AccessRule"]


def _strings(values: Iterable[str]) -> frozenset[str]:
    return frozenset(str(v) for v in values)


@frozen
class Access:
    """What one client may list and call. ``everything`` overrides the rest."""

    tools: frozenset[str] = field(default=frozenset(), converter=_strings)
    namespaces: frozenset[str] = field(default=frozenset(), converter=_strings)
    tags: frozenset[str] = field(default=frozenset(), converter=_strings)
    everything: bool = False

    @property
    def restricted(self) -> bool:
        """True unless the client sees every tool."""
        return not self.everything

    def allows(self, tool: Tool) -> bool:
        """May this client list and call ``tool``?"""
        if self.everything:
            return True
        if self.namespaces and tool.namespace in self.namespaces:
            return True
        if self.tags:
            metadata = tool.metadata
            names = {t.value for t in metadata.tags} | set(metadata.custom_tags)
            if names & self.tags:
                return True
        return any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in self.tools)

    def __or__(self, other: Access) -> Access:
        if self.everything or other.everything:
            return EVERYTHING
        return Access(self.tools | other.tools, self.namespaces | other.namespaces,
                      self.tags | other.tags)

    @classmethod
    def union(cls, grants: Iterable[Access]) -> Access:
        """Everything any of ``grants`` allows (nothing when there are none)."""
        out = NOTHING
        for grant in grants:
            out = out | grant
        return out


EVERYTHING = Access(everything=True)
NOTHING = Access()


class AccessRule(BaseModel):
    """The configuration form of an :class:`Access`: ``tools`` (glob patterns), ``namespaces``
    and ``tags`` (ToolTag values such as ``read_only``, or custom tags). All three empty: every
    tool."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, description="tool names or glob patterns")
    namespaces: list[str] = Field(default_factory=list, description="namespaces")
    tags: list[str] = Field(default_factory=list, description="tags (ToolTag values or custom)")

    def access(self) -> Access:
        if not (self.tools or self.namespaces or self.tags):
            return EVERYTHING
        return Access(self.tools, self.namespaces, self.tags)
