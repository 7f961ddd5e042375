"""Schema emission for one registry: which tools go out, ``schema_transform``, the format's
dialect and envelope, and the two caches that make a repeated ``get_schemas`` nearly free.

* the list cache: one finished list per (format, filters), valid while the registry's version
  is unchanged;
* the per-tool cache: one definition per (format, strict, tool), valid while the tool object
  and the registry's settings are unchanged, so a change to one tool re-emits only that tool.

When no plugin's ``schema_transform`` concerns a tool (none installed, or every one declared
through ``schema_hooks`` that it leaves the tool alone) and the format's dialect leaves schemas
alone, the tool's own parameters schema goes out without a copy (emitted schemas are
read-only).

A cold emission of many tools runs with the cyclic garbage collector paused: it allocates a few
acyclic dicts and lists per tool, which would otherwise trigger collections that traverse the
whole heap (every registered tool) -- most of a cold emission's cost at 10,000 tools, growing
with the registry's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from toolregistry._log import log
from toolregistry.tool import SEARCH_TOOL_TAG, ToolTag

from ._base import ProviderFormat, copy_json

if TYPE_CHECKING:
    from toolregistry._hooks import Hooks
    from toolregistry._registry import ToolRegistry
    from toolregistry.tool import Tool

__all__ = ["Deferral", "Emitter", "tag_set"]

Deferral = Literal["none", "native", "registry"]
"""How one emission treats deferred tools: ``none`` sends them as any other tool; ``native``
marks them the provider's way and adds its search tool (dropping tools tagged
:data:`~toolregistry.tool.SEARCH_TOOL_TAG`); ``registry`` leaves them out unless revealed,
then appends them in the order they were revealed."""

_MAX_LISTS = 64


def tag_set(tags: Iterable[ToolTag | str] | ToolTag | str | None) -> frozenset[str] | None:
    """Tags as a set of their string values (``None`` stays ``None``: no filter)."""
    if tags is None:
        return None
    if isinstance(tags, (str, ToolTag)):
        tags = [tags]
    return frozenset(t.value if isinstance(t, ToolTag) else str(t) for t in tags)


def _tool_tags(tool: Tool) -> set[str]:
    return {t.value for t in tool.metadata.tags} | set(tool.metadata.custom_tags)


class Emitter:
    """Tool definitions of one registry in any format, cached (see the module docstring)."""

    def __init__(self, registry: ToolRegistry, hooks: Hooks) -> None:
        self._registry = registry
        self._hooks = hooks
        self._lists: dict[tuple[Any, ...], tuple[int, list[dict[str, Any]]]] = {}
        self._tools: dict[tuple[str, bool], dict[str, tuple[Tool, int, dict[str, Any]]]] = {}

    def schemas(self, fmt: ProviderFormat, *, deferral: Deferral,
                tags: Iterable[ToolTag | str] | ToolTag | str | None,
                exclude_tags: Iterable[ToolTag | str] | ToolTag | str | None,
                strict: bool, names: Sequence[str] | None) -> list[dict[str, Any]]:
        """The definitions of the selected tools, in registration order, revealed deferred
        tools appended (``registry``) or the deferred part after the rest (``native``); a
        new list."""
        strict = bool(strict) and fmt.supports_strict
        want, drop = tag_set(tags), tag_set(exclude_tags)
        registry = self._registry
        key = (fmt.name, deferral, want, drop, strict, tuple(names) if names else None,
               registry._reveal_version if deferral == "registry" else 0)
        cached = self._lists.get(key)
        if cached is not None and cached[0] == registry.version:
            return list(cached[1])
        version, settings_version, tools = registry._emission_snapshot(names)
        selected: list[Tool] = []
        deferred: list[Tool] = []
        for tool in tools:
            if want is not None or drop is not None:
                tagged = _tool_tags(tool)
                if want is not None and not (tagged & want):
                    continue
                if drop is not None and tagged & drop:
                    continue
            if deferral != "none" and tool.metadata.defer:
                deferred.append(tool)
            elif deferral != "native" or SEARCH_TOOL_TAG not in tool.metadata.custom_tags:
                selected.append(tool)
        if deferral == "registry" and deferred:
            # Appended in the order they were revealed: what the model saw stays in place.
            order = {n: i for i, n in enumerate(registry.revealed_tools)}
            selected += sorted((t for t in deferred if t.name in order),
                               key=lambda t: order[t.name])
        degraded: dict[str, list[str]] = {}
        out = [self.tool(tool, fmt, strict, settings_version, degraded) for tool in selected]
        if deferral == "native" and deferred:
            out += fmt.search_tools()
            out += fmt.deferred_definitions(
                [(t, self.tool(t, fmt, strict, settings_version, degraded)) for t in deferred])
        if degraded:  # one event per emission, not one per tool (large specs lose a lot)
            log.warning("schema.degraded", api_format=fmt.name, tools=len(degraded),
                        tool=next(iter(degraded)), lost=degraded)
        if registry.version == version and (
                deferral != "registry" or registry._reveal_version == key[-1]):
            if len(self._lists) > _MAX_LISTS:
                self._lists.clear()
            self._lists[key] = (version, out)
        return list(out)

    def tool(self, tool: Tool, fmt: ProviderFormat, strict: bool, settings_version: int,
             degraded: dict[str, list[str]] | None = None) -> dict[str, Any]:
        """One tool's definition in ``fmt`` (``strict`` already checked against the format).

        What the dialect lost goes into ``degraded`` when given, else into its own event.
        """
        cache = self._tools.get((fmt.name, strict))
        if cache is None:
            cache = self._tools.setdefault((fmt.name, strict), {})
        hit = cache.get(tool.name)
        if hit is not None and hit[0] is tool and hit[1] == settings_version:
            return hit[2]
        hooks = self._hooks
        caller = hooks.schema_hooks(self._registry, tool) if hooks.has_schema_transform else None
        if caller is None and not fmt.rewrites_schema(strict):
            # Nothing will edit it: the stored schema itself goes out (emitted schemas are
            # read-only), which is most of the cost of a cold emission.
            params = tool.parameters
        else:
            params = copy_json(tool.parameters)
            if caller is not None:
                hooks.schema_transform(caller, self._registry, tool, params, fmt.name)
        lost: list[str] = []
        params = fmt.dialect(params, strict=strict, lost=lost)
        if lost:
            if degraded is not None:
                degraded[tool.name] = lost
            else:
                log.warning("schema.degraded", api_format=fmt.name, tools=1, tool=tool.name,
                            lost={tool.name: lost})
        result = fmt.tool_definition(tool, params, strict=strict)
        cache[tool.name] = (tool, settings_version, result)
        return result

    def parameters(self, tool: Tool, fmt: ProviderFormat) -> dict[str, Any]:
        """The parameters schema the model sees for ``tool`` (after ``schema_transform``,
        before the format's dialect)."""
        params: dict[str, Any] = copy_json(tool.parameters)
        hooks = self._hooks
        caller = hooks.schema_hooks(self._registry, tool) if hooks.has_schema_transform else None
        if caller is not None:
            hooks.schema_transform(caller, self._registry, tool, params, fmt.name)
        return params
