"""The change operations of :class:`~toolregistry.ToolRegistry`.

It owns removing, disabling/enabling, updating, renaming and re-namespacing registered tools,
merging another registry in, the ``on_change`` subscriptions and the change events every
change (registration included) fires, and the name-collision message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._log import log
from ._names import normalize_name
from ._registry_base import ChangeCallback, RegistryBase, subscribe
from .errors import ToolNameCollisionError, ToolNotFoundError, ToolRegistrationError

if TYPE_CHECKING:
    from ._registry import ToolRegistry
    from .events import ChangeKind
    from .tool import Tool, ToolMetadata


class RegistryChanges(RegistryBase):
    """Changes to the registered tools, and the events they fire."""

    def unregister(self, name: str) -> Tool:
        """Remove a tool; returns it. :class:`ToolNotFoundError` for an unknown name."""
        with self._lock:
            tool = self._tools.pop(name, None)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            self._disabled.pop(name, None)
            self._version += 1
        self._emit("unregister", (name,), {})
        return tool

    def unregister_namespace(self, namespace: str) -> list[str]:
        """Remove every tool of a namespace; returns their names."""
        with self._lock:
            names = [n for n, t in self._tools.items() if t.namespace == namespace]
            for n in names:
                del self._tools[n]
                self._disabled.pop(n, None)
            self._disabled_namespaces.pop(namespace, None)
            if names:
                self._version += 1
        if names:
            self._emit("unregister", tuple(names), {"namespace": namespace})
        return names

    def _namespaces(self) -> set[str]:
        return {t.namespace for t in self._tools.values() if t.namespace}

    def disable(self, name: str, reason: str = "") -> None:
        """Disable a tool or a whole namespace; calls get an error result quoting ``reason``."""
        with self._lock:
            if name in self._tools:
                self._disabled[name] = reason
                names: tuple[str, ...] = (name,)
                details: dict[str, Any] = {"reason": reason}
            elif name in self._namespaces():
                self._disabled_namespaces[name] = reason
                names = tuple(n for n, t in self._tools.items() if t.namespace == name)
                details = {"reason": reason, "namespace": name}
            else:
                raise ToolNotFoundError(self._not_found(name, what="tool or namespace"))
            self._version += 1
        self._emit("disable", names, details)

    def enable(self, name: str) -> None:
        """Enable a tool or namespace disabled before."""
        with self._lock:
            if name in self._tools:
                self._disabled.pop(name, None)
                names: tuple[str, ...] = (name,)
                details: dict[str, Any] = {}
            elif name in self._namespaces() or name in self._disabled_namespaces:
                self._disabled_namespaces.pop(name, None)
                names = tuple(n for n, t in self._tools.items() if t.namespace == name)
                details = {"namespace": name}
            else:
                raise ToolNotFoundError(self._not_found(name, what="tool or namespace"))
            self._version += 1
        self._emit("enable", names, details)

    def is_enabled(self, name: str) -> bool:
        """True when the tool exists and neither it nor its namespace is disabled."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        return name not in self._disabled and not (
            tool.namespace and tool.namespace in self._disabled_namespaces
        )

    def disabled_reason(self, name: str) -> str | None:
        """Why a tool is disabled (``None`` when enabled)."""
        tool = self._tools.get(name)
        if tool is None or self.is_enabled(name):
            return None
        if name in self._disabled:
            return self._disabled[name]
        return self._disabled_namespaces.get(tool.namespace or "", "")

    def update_tool_metadata(self, name: str, metadata: ToolMetadata | None = None,
                             **changes: Any) -> Tool:
        """Replace a tool's metadata, or change some of its fields (``defer=True``, ...)."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            new_meta = metadata if metadata is not None else tool.metadata
            if changes:
                try:
                    new_meta = attrs.evolve(new_meta, **changes)
                except TypeError as exc:
                    from .tool import ToolMetadata

                    fields = ", ".join(a.name for a in attrs.fields(ToolMetadata))
                    raise ToolRegistrationError(
                        f"update_tool_metadata({name!r}): {exc}; ToolMetadata fields: {fields}"
                    ) from None
            new_tool = tool.evolve(metadata=new_meta)
            self._tools[name] = new_tool
            self._version += 1
        self._emit("metadata", (name,), {"changes": sorted(changes)})
        return new_tool

    def update_tool(self, tool: Tool) -> Tool:
        """Replace a registered tool by a new version of the same name (description or schema
        changed at the source); fires a ``metadata`` event with ``schema_changed``."""
        with self._lock:
            old = self._tools.get(tool.name)
            if old is None:
                raise ToolNotFoundError(self._not_found(tool.name))
            self._tools[tool.name] = tool
            self._version += 1
        self._emit("metadata", (tool.name,),
                   {"schema_changed": old.schema_hash != tool.schema_hash})
        return tool

    def rename(self, old: str, new: str, *, replace: bool = False) -> Tool:
        """Give a tool a new (normalised) name."""
        new = normalize_name(new)
        with self._lock:
            tool = self._tools.get(old)
            if tool is None:
                raise ToolNotFoundError(self._not_found(old))
            if new in self._tools and not replace and new != old:
                raise ToolNameCollisionError(collision_message(tool.evolve(name=new),
                                                                self._tools[new]))
            renamed = tool.evolve(name=new)
            del self._tools[old]
            self._tools[new] = renamed
            if old in self._disabled:
                self._disabled[new] = self._disabled.pop(old)
            self._version += 1
        self._emit("rename", (new,), {"renamed": {old: new}})
        return renamed

    def set_namespace(self, name: str, namespace: str | None) -> Tool:
        """Move a tool into ``namespace`` (``None``: out of any); its name changes with it."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is None:
                raise ToolNotFoundError(self._not_found(name))
            base = tool.name
            if tool.namespace and base.startswith(f"{tool.namespace}-"):
                base = base[len(tool.namespace) + 1 :]
            moved = self._prepare(tool.evolve(name=base, namespace=None), namespace)
            if moved.name in self._tools and moved.name != name:
                raise ToolNameCollisionError(collision_message(moved, self._tools[moved.name]))
            del self._tools[name]
            self._tools[moved.name] = moved
            self._version += 1
        self._emit("namespace", (moved.name,), {"renamed": {name: moved.name},
                                                "namespace": namespace})
        return moved

    def merge(self, other: ToolRegistry, *, namespace: str | None = None,
              replace: bool = False) -> list[Tool]:
        """Register every tool of ``other`` here (optionally under ``namespace``)."""
        return self._add(list(other._tools.values()), namespace=namespace, replace=replace)

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback(event)`` after every change; returns a function that unsubscribes."""
        return subscribe(self._lock, self._callbacks, callback)

    def _emit(self, kind: ChangeKind, names: tuple[str, ...], details: dict[str, Any]) -> None:
        self._forget_plans(names, details)
        if not self._callbacks and not self._hooks.has_on_change:
            return
        from .events import ChangeEvent

        event = ChangeEvent(kind, names, details)
        self._hooks.on_change(self._whole, event)
        for callback in list(self._callbacks):
            try:
                callback(event)
            except Exception as exc:  # one bad subscriber must not break registration
                log.warning("callback.failed", kind=kind, error=f"{type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ revealed deferred tools
    def reveal_tools(self, names: Iterable[str]) -> list[str]:
        """Mark deferred tools as revealed to the model (a search found them); returns the
        names newly revealed, in order. ``get_schemas(include_deferred=False)`` appends
        revealed tools after the others, in the order they were revealed, so the earlier
        part of the list (and the provider's prompt cache) stays the same. Names that are
        not registered are ignored. Tool searches (``discover_tools``, the provider's own
        search results passed to ``execute_tool_calls``) call this."""
        with self._lock:
            new = [n for n in dict.fromkeys(names) if n in self._tools and n not in self._revealed]
            if new:
                self._revealed.update(dict.fromkeys(new))
                self._reveal_version += 1
        if new:
            log.debug("tools.revealed", registry=self.name, tools=new)
        return new

    @property
    def revealed_tools(self) -> list[str]:
        """Names revealed by :meth:`reveal_tools`, in the order they were revealed."""
        with self._lock:
            return list(self._revealed)

    def forget_revealed(self) -> None:
        """Forget every revealed tool (a new conversation starts with deferred tools hidden)."""
        with self._lock:
            if self._revealed:
                self._revealed.clear()
                self._reveal_version += 1

    def _forget_plans(self, names: tuple[str, ...], details: Mapping[str, Any]) -> None:
        """The executor's per-tool call plans of ``names`` (and of renamed tools' old names)
        are stale; with no names (a setting), every plan is."""
        executor = self._executor
        if executor is None:
            return
        if not names:
            executor.invalidate()
            return
        renamed = details.get("renamed")
        executor.invalidate((*names, *renamed) if isinstance(renamed, Mapping) else names)


def collision_message(new: Tool, old: Tool) -> str:
    def origin(t: Tool) -> str:
        p = t.provenance
        src = f"{p.kind} {p.detail}" if p.detail else p.kind
        if p.original_name and p.original_name != t.name:
            src += f", originally {p.original_name!r}"
        return src

    return (
        f"tool name {new.name!r} is already registered (from {origin(old)}); the new tool "
        f"comes from {origin(new)}: pass replace=True to replace it, or register under a "
        "namespace"
    )
