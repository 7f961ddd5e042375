"""A real MCP server (stdio) whose tools return long outputs, for the spool tests."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("long-output")


@server.tool()
def dump(n: int) -> str:
    """Return n numbered log lines."""
    return "".join(f"line {i:07d} {'y' * 40}\n" for i in range(n))


if __name__ == "__main__":
    server.run()
