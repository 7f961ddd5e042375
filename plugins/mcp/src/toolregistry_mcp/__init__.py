"""toolregistry-mcp: MCP servers as toolregistry tools, and a registry served over MCP.

``registry.register_from_mcp(server, namespace=..., ...)`` loads a server's tools (this
plugin provides the ``mcp`` source kind); :func:`serve` exposes a registry as an MCP server;
:class:`MCPClient` is the client underneath, usable on its own.
"""

from __future__ import annotations

from ._client import MCPClient, MCPConnectError
from ._loader import MCPSettings, MCPSource, aload, arefresh, load, refresh, sources
from ._serve import ServeOptions, aserve, build_server, serve

__all__ = [
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
    "sources",
]
