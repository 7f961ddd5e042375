"""The read side of :class:`~toolregistry.ToolRegistry`.

It owns looking tools up (``list_tools``, ``get_tool``, ``in``/``len``/iteration, name
suggestions and the not-found message), the provider schemas (``get_schemas`` and friends,
through the registry's schema emitter) and the prompt helpers (``render_tool_prompt``,
``tool_choice``, deferred-tool summaries).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._registry_base import RegistryBase
from ._settings import DEFERRAL_MODES
from .errors import ToolNotFoundError

if TYPE_CHECKING:
    from .formats import FormatTable, ProviderFormat
    from .formats._emit import Deferral
    from .tool import Tool, ToolTag


class RegistryQueries(RegistryBase):
    """Lookups, schemas and prompts."""

    def list_tools(self, include_disabled: bool = False) -> list[str]:
        """Tool names in registration order."""
        with self._lock:
            if include_disabled:
                return list(self._tools)
            return [n for n in self._tools if self.is_enabled(n)]

    def get_tools(self, include_disabled: bool = False) -> list[Tool]:
        """Tools in registration order."""
        with self._lock:
            return [t for n, t in self._tools.items() if include_disabled or self.is_enabled(n)]

    def get_tool(self, name: str) -> Tool | None:
        """The tool registered as ``name``, or ``None``."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolNotFoundError(self._not_found(name))
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    def __repr__(self) -> str:
        return f"<ToolRegistry {self.name!r}: {len(self._tools)} tools>"

    @property
    def version(self) -> int:
        """A counter that changes with every change (for caches kept outside)."""
        return self._version

    def suggest_names(self, name: str, limit: int = 3) -> list[str]:
        """At most ``limit`` registered names close to ``name`` (discovery when installed)."""
        suggested = self._hooks.suggest_tools(self._whole, name, limit)
        if suggested is not None:
            return [s for s in suggested if s in self._tools][:limit]
        import difflib

        names = self.list_tools()
        close = difflib.get_close_matches(name, names, n=limit, cutoff=0.6)
        if len(close) < limit:
            lowered = name.lower()
            for n in names:
                if n not in close and (lowered in n.lower() or n.lower() in lowered):
                    close.append(n)
                    if len(close) == limit:
                        break
        return close

    def _not_found(self, name: str, what: str = "tool") -> str:
        close = self.suggest_names(name) if self._tools else []
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return f"no {what} named {name!r} in registry {self.name!r}{hint}"

    # ------------------------------------------------------------------ schemas
    def get_schemas(
        self,
        api_format: str = "openai-chat",
        include_deferred: bool | None = None,
        tags: Iterable[ToolTag | str] | ToolTag | str | None = None,
        exclude_tags: Iterable[ToolTag | str] | ToolTag | str | None = None,
        strict: bool = False,
        names: Sequence[str] | None = None,
        deferral: str | None = None,
    ) -> list[dict[str, Any]]:
        """Tool definitions in ``api_format``'s dialect, enabled tools only, in registration
        order. ``tags``: keep tools having any of them; ``exclude_tags``: drop tools having any.
        ``strict`` applies OpenAI strict mode (openai-chat / openai-responses).

        Deferred tools (``ToolMetadata(defer=True)``) go out as any other tool unless
        ``include_deferred=False`` or a ``deferral`` is given; then ``deferral`` (default: the
        registry's ``deferral`` setting) says how they are deferred: ``native`` marks them
        the provider's way and adds its tool search (an error for a format without one),
        ``registry`` leaves them out except those revealed (:meth:`reveal_tools`), appended
        last in the order they were revealed, and ``auto`` is ``native`` where the format has
        it. The order is stable across calls, so provider prompt caches survive.

        Results are cached until the registry changes; treat them as read-only.
        """
        fmt = self._host.formats.get(api_format, "schemas")
        if include_deferred is None:
            include_deferred = deferral is None
        elif include_deferred and deferral is not None:
            raise ValueError(f"get_schemas: deferral={deferral!r} defers tools but "
                             "include_deferred=True sends every tool in full; pass one or "
                             "the other")
        mode: Deferral = "none" if include_deferred else self._deferral(fmt, deferral)
        return self._emitter.schemas(fmt, deferral=mode, tags=tags, exclude_tags=exclude_tags,
                                     strict=strict, names=names)

    def _deferral(self, fmt: ProviderFormat, asked: str | None) -> Deferral:
        """``native`` or ``registry``: what ``asked`` (default: the setting) means for
        ``fmt``."""
        where = "get_schemas(deferral=...)"
        if asked is None:
            asked = self._config_settings.deferral
            where = f"the deferral setting (from {self._config_settings.origin('deferral')})"
        if asked not in DEFERRAL_MODES:
            raise ValueError(f"{where}: unknown deferral {asked!r}; use one of "
                             f"{', '.join(repr(m) for m in DEFERRAL_MODES)}")
        if asked == "registry":
            return "registry"
        if fmt.native_search:
            return "native"
        if asked == "native":
            have = [f.name for f in self._host.formats if f.native_search]
            raise ValueError(f"{where}: deferral='native', but the {fmt.name!r} format has no "
                             f"native tool search (formats that have one: "
                             f"{', '.join(have) or 'none'}); use deferral='auto' to fall back "
                             "to the registry's discover_tools, or 'registry'")
        return "registry"

    def _emission_snapshot(self, names: Sequence[str] | None) -> tuple[int, int, list[Tool]]:
        """(version, settings version, the named tools or else every enabled one), read
        together under the lock, for the schema emitter."""
        with self._lock:
            if names is not None:
                tools = [self[n] for n in names]
            else:
                tools = [t for n, t in self._tools.items() if self.is_enabled(n)]
            return self._version, self._settings_version, tools

    def get_tool_schema(self, name: str, api_format: str = "openai-chat",
                        strict: bool = False) -> dict[str, Any]:
        """One tool's definition in ``api_format`` (disabled and deferred tools too)."""
        fmt = self._host.formats.get(api_format, "schemas")
        tool = self[name]
        return self._emitter.tool(tool, fmt, bool(strict) and fmt.supports_strict,
                                  self._settings_version)

    def get_parameters(self, name: str, api_format: str = "openai-chat") -> dict[str, Any]:
        """The parameters schema the model sees for a tool (after ``schema_transform``)."""
        tool = self[name]
        return self._emitter.parameters(tool, self._host.formats.get(api_format, "schemas"))

    @property
    def formats(self) -> FormatTable:
        """The provider formats this registry knows: the built-in ones and those its plugins
        add (``provider_formats`` hook), by name."""
        return self._host.formats

    def get_deferred_summaries(self) -> list[dict[str, Any]]:
        """Enabled deferred tools as ``{name, description (first sentence), namespace}``,
        for the system prompt."""
        return [
            {"name": t.name, "description": first_sentence(t.description), "namespace": t.namespace}
            for t in self.get_tools()
            if t.metadata.defer
        ]

    # ------------------------------------------------------------------ prompts
    def render_tool_prompt(self, context: Mapping[str, Any] | None = None, *,
                           include_deferred_summaries: bool = True,
                           names: Iterable[str] | None = None) -> str:
        """The tool part of a system prompt: a ``<tool_best_practices>`` block (practices and
        prompt injections of enabled, visible tools) and the deferred-tool summaries."""
        from .prompt import render_tool_prompt

        return render_tool_prompt(self._whole, context,
                                  include_deferred_summaries=include_deferred_summaries,
                                  names=names)

    def tool_choice(self, value: str, api_format: str = "openai-chat") -> Any:
        """``auto`` / ``none`` / ``required`` / a tool name as ``api_format`` expects it
        (``langchain`` too); unknown names are an error suggesting close ones."""
        from .tool_choice import tool_choice

        return tool_choice(value, api_format, registry=self._whole)


def first_sentence(text: str) -> str:
    """The text of the first line up to its first ``.`` (the spec's summary rule)."""
    line = text.strip().split("\n", 1)[0].strip()
    head, dot, _ = line.partition(". ")
    if dot:
        return head + "."
    return line

