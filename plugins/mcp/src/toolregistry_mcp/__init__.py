"""toolregistry-mcp: MCP servers as toolregistry tools, and a registry served over MCP.

``registry.register_from_mcp(server, namespace=..., ...)`` loads a server's tools (this
plugin provides the ``mcp`` source kind); :func:`serve` exposes a registry as an MCP server;
:class:`MCPClient` is the client underneath, usable on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.plugin import lazy_exports

if TYPE_CHECKING:
    from ._client import MCPClient, MCPConnectError
    from ._loader import aload, arefresh, load, refresh, sources
    from ._oauth import ClientAuth, FileTokenStorage
    from ._serve import REQUEST_KEY, ServeOptions, aserve, build_server, serve
    from ._settings import MCPSettings
    from ._source import MCPSource
    from ._workers import serve_workers

# Loaded on first use, so that loading the plugin stays cheap.
_LAZY = {
    **dict.fromkeys(("MCPClient", "MCPConnectError"), "._client"),
    **dict.fromkeys(("aload", "arefresh", "load", "refresh", "sources"), "._loader"),
    "MCPSource": "._source",
    "MCPSettings": "._settings",
    **dict.fromkeys(("REQUEST_KEY", "ServeOptions", "aserve", "build_server", "serve"),
                    "._serve"),
    **dict.fromkeys(("ClientAuth", "FileTokenStorage"), "._oauth"),
    "serve_workers": "._workers",
}


__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "REQUEST_KEY",
    "ClientAuth",
    "FileTokenStorage",
    "MCPClient",
    "MCPConnectError",
    "MCPSettings",
    "MCPSource",
    "ServeOptions",
    "aload",
    "arefresh",
    "aserve",
    "build_server",
    "load",
    "refresh",
    "serve",
    "serve_workers",
    "sources",
]
