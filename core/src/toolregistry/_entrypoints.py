"""The entry points of one group, read once from the installed distributions' metadata.

What ``importlib.metadata.entry_points(group=...)`` returns, read from the ``*.dist-info`` and
``*.egg-info`` folders of the ``sys.path`` directories without importing
``importlib.metadata``, whose import (``email``, ``zipfile``, ``csv``) cost more than reading
the files: every ``ToolRegistry()`` and every CLI command pays for it. The same distribution
found twice on ``sys.path`` counts once (the first, as ``importlib.metadata`` does). Where
``sys.path`` holds something other than directories (a zip file, an egg), or a distribution
folder cannot be read, ``importlib.metadata`` answers instead.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

from attrs import frozen

__all__ = ["EntryPoint", "entry_points"]

_SECTION = re.compile(r"^\s*\[(?P<group>[^\]]+)\]\s*$")
_VALUE = re.compile(r"^(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+))?\s*(?:\[.*\])?\s*$")


@frozen
class EntryPoint:
    """One entry point: ``name = value`` (``module`` or ``module:attr.sub``) of distribution
    ``dist`` (its ``Name``, ``None`` when unknown) at ``version``."""

    name: str
    value: str
    dist: str | None
    version: str | None

    def load(self) -> Any:
        """Import the module and resolve the attribute, as ``EntryPoint.load`` does."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r}: cannot read {self.value!r}")
        obj: Any = importlib.import_module(match.group("module"))
        for part in filter(None, (match.group("attr") or "").split(".")):
            obj = getattr(obj, part)
        return obj


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` of every installed distribution (``sys.path`` order)."""
    try:
        return _scan(group)
    except (OSError, UnicodeDecodeError, _Unreadable):
        return _from_importlib(group)


class _Unreadable(Exception):
    """Something only ``importlib.metadata`` reads (a zip on ``sys.path``, odd metadata)."""


def _scan(group: str) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    seen: set[str] = set()
    section = f"[{group}]"
    for entry in dict.fromkeys(sys.path):
        where = entry or "."
        if not os.path.isdir(where):
            if os.path.exists(where):
                raise _Unreadable(where)
            continue
        # one directory listing that also says which entries are folders (no stat each)
        with os.scandir(where) as listing:
            folders = sorted((e.name, e.path, e.is_dir()) for e in listing
                             if e.name.endswith((".dist-info", ".egg-info")))
        for folder, path, is_dir in folders:
            key = _normalized(folder.rsplit(".", 1)[0].split("-", 1)[0])
            if key in seen:
                continue
            seen.add(key)
            if not is_dir:
                raise _Unreadable(path)
            points = os.path.join(path, "entry_points.txt")
            if not os.access(points, os.F_OK):  # most distributions have none
                continue
            text = _read(points)
            if text is None or section not in text.replace(" ", ""):
                continue
            name, version = _name_version(path)
            found.extend(EntryPoint(n, v, name, version) for n, v in _group(text, group))
    return found


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _group(text: str, group: str) -> list[tuple[str, str]]:
    """``(name, value)`` of the ``[group]`` section of an ``entry_points.txt``."""
    out: list[tuple[str, str]] = []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        section = _SECTION.match(line)
        if section is not None:
            current = section.group("group").strip()
            continue
        if current == group:
            name, sep, value = line.partition("=")
            if not sep:
                raise _Unreadable(line)
            out.append((name.strip(), value.strip()))
    return out


def _name_version(path: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the head of the distribution's ``METADATA`` (or
    ``PKG-INFO``)."""
    for file in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(path, file))
        if text is None:
            continue
        name = version = None
        for line in text.splitlines():
            if not line:
                break  # the headers end at the first empty line
            if line.startswith("Name:"):
                name = line[5:].strip()
            elif line.startswith("Version:"):
                version = line[8:].strip()
            if name is not None and version is not None:
                break
        return name, version
    return None, None


def _from_importlib(group: str) -> list[EntryPoint]:
    import importlib.metadata as md

    return [EntryPoint(ep.name, ep.value, ep.dist.name if ep.dist else None,
                       ep.dist.version if ep.dist else None)
            for ep in md.entry_points(group=group)]
