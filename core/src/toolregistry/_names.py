"""Provider-safe tool names: ``^[A-Za-z0-9_-]{1,64}$`` for every provider."""

from __future__ import annotations

import re
import unicodedata

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MAX_LEN = 64
NAMESPACE_SEP = "-"


def _digest(text: str) -> str:
    import hashlib

    return hashlib.blake2s(text.encode("utf-8"), digest_size=4).hexdigest()


def normalize_name(name: str) -> str:
    """Map any name to a provider-safe one, deterministically.

    Safe names come back unchanged. Others are transliterated to ASCII where Unicode allows
    and runs of other characters become ``_`` (``files.read`` -> ``files_read``); two originals
    that map to one name are a collision the registry reports. Names too long, or with nothing
    left, get a short hash of the original.
    """
    if NAME_RE.match(name):
        return name
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    safe = _UNSAFE.sub("_", ascii_name).strip("_")
    if not safe:
        return "tool_" + _digest(name)
    if len(safe) > MAX_LEN:
        suffix = "_" + _digest(name)
        safe = safe[: MAX_LEN - len(suffix)].rstrip("_") + suffix
    return safe


def qualify(name: str, namespace: str | None) -> str:
    """The registered name of ``name`` in ``namespace`` (``ns-name``)."""
    return f"{namespace}{NAMESPACE_SEP}{name}" if namespace else name
