"""The table of provider formats keyed by name: lookup by name or alias, what each format
offers, and the order in which formats are asked to recognise a call.

One table is built per plugin host: the built-in formats first, then those plugins return
from ``provider_formats()``. A name (or alias) is claimed once; a later claim is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolregistry.errors import ToolRegistryError

from ._base import Feature, ProviderFormat

__all__ = ["FormatConflict", "FormatTable"]

# How the error for a format without a feature reads ("the 'mcp' format has no <what>").
_WHAT: dict[Feature, str] = {
    "schemas": "tool schemas",
    "calls": "tool calls",
    "messages": "chat messages",
    "tool_choice": "tool choice",
}


class FormatConflict(ToolRegistryError, ValueError):
    """A format whose name or alias another format already claimed."""


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class FormatTable:
    """Provider formats by canonical name and alias, in registration order."""

    def __init__(self, formats: Iterable[ProviderFormat] = ()) -> None:
        self._formats: dict[str, ProviderFormat] = {}
        self._lookup: dict[str, ProviderFormat] = {}
        self._by_type: dict[str, ProviderFormat] = {}
        self._passthrough: dict[str, ProviderFormat] = {}
        self._readers: tuple[ProviderFormat, ...] = ()
        for fmt in formats:
            self.add(fmt)

    @staticmethod
    def check(fmt: Any, where: str) -> ProviderFormat:
        """``fmt`` when it is a usable format object; a ``TypeError`` naming ``where``."""
        if isinstance(fmt, type) and issubclass(fmt, ProviderFormat):
            raise TypeError(f"{where}: returned the class {fmt.__name__}; return an instance "
                            f"({fmt.__name__}())")
        if not isinstance(fmt, ProviderFormat):
            raise TypeError(f"{where}: {fmt!r} is not a toolregistry ProviderFormat")
        if not isinstance(fmt.name, str) or not fmt.name.strip() or _key(fmt.name) != fmt.name:
            raise TypeError(f"{where}: {type(fmt).__name__}.name must be a lower-case name "
                            f"such as 'acme-chat', got {fmt.name!r}")
        if not fmt.features:
            raise TypeError(f"{where}: format {fmt.name!r} overrides none of tool_definition, "
                            "read_call, answer_messages, tool_choice")
        if "schemas" in fmt.features and (
                type(fmt).read_definition is ProviderFormat.read_definition):
            raise TypeError(f"{where}: format {fmt.name!r} emits tool definitions but has no "
                            "read_definition (their inverse, which tests and tools rely on)")
        return fmt

    def add(self, fmt: ProviderFormat) -> None:
        """Add ``fmt``; a :class:`FormatConflict` when a name, alias or call type is taken."""
        self.check(fmt, "provider format")
        keys = [fmt.name, *(_key(a) for a in fmt.aliases)]
        for key in keys:
            other = self._lookup.get(key)
            if other is not None:
                raise FormatConflict(f"the name {key!r} of format {fmt.name!r} is taken by "
                                     f"format {other.name!r}")
        for kind in (*fmt.call_types, *fmt.passthrough_types):
            other = self._by_type.get(kind) or self._passthrough.get(kind)
            if other is not None:
                raise FormatConflict(f"format {fmt.name!r} claims calls of type {kind!r}, "
                                     f"which format {other.name!r} reads")
        self._formats[fmt.name] = fmt
        for key in keys:
            self._lookup[key] = fmt
        for kind in fmt.call_types:
            self._by_type[kind] = fmt
        for kind in fmt.passthrough_types:
            self._passthrough[kind] = fmt
        self._readers = tuple(f for f in self._formats.values() if "calls" in f.features)

    # -- lookup ------------------------------------------------------------------------------
    def names(self, feature: Feature | None = None) -> tuple[str, ...]:
        """Canonical names, in order; only those offering ``feature`` when given."""
        return tuple(n for n, f in self._formats.items()
                     if feature is None or feature in f.features)

    def __contains__(self, api_format: object) -> bool:
        return isinstance(api_format, str) and _key(api_format) in self._lookup

    def __iter__(self) -> Any:
        return iter(self._formats.values())

    def __len__(self) -> int:
        return len(self._formats)

    def get(self, api_format: str, feature: Feature | None = None, *,
            context: str = "") -> ProviderFormat:
        """The format named ``api_format`` (any alias, any case); a ``ValueError`` naming
        the formats that do offer ``feature`` when it is unknown or lacks it."""
        fmt = self._formats.get(api_format) if type(api_format) is str else None
        if fmt is None:
            if not isinstance(api_format, str):
                raise TypeError(f"{context}api_format must be a str, got "
                                f"{type(api_format).__name__}")
            fmt = self._lookup.get(_key(api_format))
        if fmt is None:
            raise ValueError(f"{context}unknown api_format {api_format!r}: use one of "
                             f"{', '.join(self.names(feature))}")
        if feature is not None and feature not in fmt.features:
            raise ValueError(f"{context}the {fmt.name!r} format has no {_WHAT[feature]}; use "
                             f"an api_format that has: {', '.join(self.names(feature))}")
        return fmt

    # -- call recognition (see toolregistry._calls) -----------------------------------------
    def passthrough_for_type(self, kind: Any) -> ProviderFormat | None:
        """The format whose server-side items (not calls) have ``type`` ``kind``, if any."""
        return self._passthrough.get(kind) if type(kind) is str else None

    def reader_for_type(self, kind: Any) -> ProviderFormat | None:
        """The format that claimed calls whose ``type`` is ``kind``."""
        return self._by_type.get(kind) if type(kind) is str else None

    @property
    def readers(self) -> tuple[ProviderFormat, ...]:
        """Formats that read calls, in the order they are asked."""
        return self._readers

    def __repr__(self) -> str:
        return f"FormatTable({', '.join(self._formats)})"
