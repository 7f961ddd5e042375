"""What plugin authors import: the hook marker, structured events, the kernel helpers.

``from toolregistry.plugin import hookimpl, log, normalize_name, import_target, Loader``.
Plugins use this module (and the public Tool model) rather than the kernel's private modules.
"""

from __future__ import annotations

from ._log import log
from ._names import normalize_name
from ._sources import import_target
from .hookspecs import Loader, hookimpl

__all__ = ["Loader", "hookimpl", "import_target", "log", "normalize_name"]
