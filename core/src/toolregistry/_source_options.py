"""The options every source kind takes -- ``namespace``, ``replace``, ``defer``, ``tags``,
``include`` / ``exclude`` -- checked once by the kernel for every kind, and applied to the
tools a loader registers (those the kind does not implement itself)."""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from .errors import ConfigError

if TYPE_CHECKING:
    from ._extensions import SourceKind
    from .tool import Tool

__all__ = ["COMMON", "SourceOptions", "applying", "split"]

COMMON = ("namespace", "replace", "defer", "tags", "include", "exclude")
"""The options every source kind takes."""

_PASSED = frozenset({"namespace", "replace"})  # every loader registers under them itself

_CURRENT: contextvars.ContextVar[SourceOptions | None] = contextvars.ContextVar(
    "toolregistry_source_options", default=None)


def _globs(value: Any, option: str, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: {option} must be a tool name or glob, or a list of them, "
                      f"got {value!r}")


@frozen
class SourceOptions:
    """What the kernel applies to a source's tools as they are registered: only tools whose
    name (as the source names it, or as registered) matches an ``include`` glob and no
    ``exclude`` glob; ``tags`` added (well-known :class:`~toolregistry.ToolTag` values to
    ``tags``, others to ``custom_tags``); ``defer`` set."""

    defer: bool | None = None
    tags: tuple[str, ...] = ()
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    def wants(self, tool: Tool, namespace: str | None = None) -> bool:
        """Whether ``tool`` (about to be registered under ``namespace``) is one to keep."""
        names = {tool.name, tool.provenance.original_name or tool.name}
        ns = namespace or tool.namespace
        if ns:
            names |= {f"{ns}-{n}" for n in names if not n.startswith(f"{ns}-")}

        def matches(globs: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(n, g) for n in names for g in globs)

        if self.include is not None and not matches(self.include):
            return False
        return not matches(self.exclude)

    def apply(self, tools: list[Tool], namespace: str | None = None) -> list[Tool]:
        """``tools`` (to be registered under ``namespace``) filtered, tagged and deferred as
        the options say."""
        from .tool import ToolTag

        known = {t.value for t in ToolTag}
        out = []
        for tool in tools:
            if not self.wants(tool, namespace):
                continue
            meta = tool.metadata
            changes: dict[str, Any] = {}
            if self.defer is not None and meta.defer != self.defer:
                changes["defer"] = self.defer
            if self.tags:
                changes["tags"] = meta.tags | {ToolTag(t) for t in self.tags if t in known}
                changes["custom_tags"] = meta.custom_tags | {t for t in self.tags
                                                             if t not in known}
            out.append(tool.evolve(metadata=attrs.evolve(meta, **changes)) if changes else tool)
        return out


def split(kind: SourceKind, options: dict[str, Any], where: str
          ) -> tuple[dict[str, Any], SourceOptions | None]:
    """``options`` checked: what goes to the kind's loader (its own options, ``namespace``,
    ``replace`` and the common options it implements, ``kind.handles``), and what the kernel
    applies itself (``None``: nothing)."""
    namespace = options.get("namespace")
    if not isinstance(namespace, (str, bool, type(None))):
        raise ConfigError(f"{where}: namespace must be a string, got {namespace!r} (true: "
                          "the source's own name, where it has one)")
    for flag in ("replace", "defer"):
        if flag in options and not isinstance(options[flag], bool):  # "false" would be true
            raise ConfigError(f"{where}: {flag} must be true or false, got {options[flag]!r}")
    tags = _globs(options.get("tags"), "tags", where) or ()
    include = _globs(options.get("include"), "include", where)
    exclude = _globs(options.get("exclude"), "exclude", where) or ()
    passed = {k: v for k, v in options.items()
              if k not in COMMON or k in _PASSED or k in kind.handles}
    ours = {k for k in COMMON if k in options and k not in _PASSED and k not in kind.handles}
    if not ours:
        return passed, None
    return passed, SourceOptions(
        defer=options["defer"] if "defer" in ours else None,
        tags=tags if "tags" in ours else (),
        include=include if "include" in ours else None,
        exclude=exclude if "exclude" in ours else ())


@contextlib.contextmanager
def _current_as(options: SourceOptions | None) -> Iterator[None]:
    token = _CURRENT.set(options)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def applying(options: SourceOptions | None) -> contextlib.AbstractContextManager[None]:
    """While the block runs, tools registered (directly, not by a hook of a plugin they set
    off) on this context get ``options`` applied."""
    return contextlib.nullcontext() if options is None else _current_as(options)


def current() -> SourceOptions | None:
    """The options of the source being loaded on this context, if any."""
    return _CURRENT.get()


def consumed() -> contextlib.AbstractContextManager[None]:
    """Registrations inside the block (a plugin's own tools, set off by the source's) are
    not the source's."""
    return _current_as(None)
