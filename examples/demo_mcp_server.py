"""The demo's MCP server (stdio): a tiny note store."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
_NOTES: dict[str, str] = {"welcome": "Hello from the MCP server."}


@server.tool()
def read_note(title: str) -> str:
    """Read a note by its title."""
    if title not in _NOTES:
        raise ValueError(f"no note titled {title!r}; known: {', '.join(sorted(_NOTES))}")
    return _NOTES[title]


@server.tool()
def write_note(title: str, text: str) -> str:
    """Write (or overwrite) a note."""
    _NOTES[title] = text
    return f"saved {title!r}"


if __name__ == "__main__":
    server.run("stdio")
