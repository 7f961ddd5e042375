"""The ``mcp`` plugin's hook implementations (entry point ``toolregistry.plugins: mcp``)."""

from __future__ import annotations

from collections.abc import Mapping

from toolregistry import hookimpl
from toolregistry.hookspecs import Loader


@hookimpl
def loaders() -> Mapping[str, Loader]:
    """``register_from_mcp`` / ``aregister_from_mcp`` and ``kind = "mcp"`` config sources;
    ``mcp:serve`` is what ``toolregistry serve`` calls."""
    # Importing these modules does not import the SDK: that happens on first use.
    from ._loader import aload, load
    from ._serve import serve

    return {"mcp": load, "mcp:async": aload, "mcp:serve": serve}
