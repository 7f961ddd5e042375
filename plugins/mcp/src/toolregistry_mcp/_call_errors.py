"""What a failed MCP request tells the model: the error result of each way a call can fail."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolregistry.errors import ToolCallError
from toolregistry.plugin import log

from ._deadline import CallExpired
from ._session import _first_error

if TYPE_CHECKING:
    from ._client import MCPClient

__all__ = ["call_error"]


def call_error(client: MCPClient, what: str, exc: BaseException, limit: float | None = None
               ) -> ToolCallError:
    """The error result of a failed request ``what`` (a tool's name, or ``tools/list``):
    a timeout, the server's own refusal, an unusable result, or a lost connection (the session
    marked dead, the next call starts a new one; the call itself is never sent again here)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT

    exc = _first_error(exc)
    label = f"tool {what!r}" if what != "tools/list" else "tools/list"
    conn = client._conn
    if isinstance(exc, CallExpired):
        log.warning("mcp.call_timeout", server=client.display, tool=what, timeout=limit,
                    reason=exc.reason)
        return ToolCallError(
            f"MCP server {client.display}: {label} {exc.reason}; the request was cancelled "
            "(notifications/cancelled sent)", kind="timeout")
    if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
        log.warning("mcp.call_timeout", server=client.display, tool=what, timeout=limit)
        # kind="timeout", not a TimeoutError: a retry policy must never re-send it.
        return ToolCallError(
            f"MCP server {client.display}: {label} did not answer within {limit:g}s; the "
            "request was cancelled (notifications/cancelled sent)", kind="timeout"
        )
    if isinstance(exc, TimeoutError):
        return ToolCallError(
            f"MCP server {client.display}: {label} did not answer in time", kind="timeout"
        )
    if (client.spec.transport != "stdio" and isinstance(exc, MCPError)
            and "byte limit" in exc.error.message and client.max_message_bytes):
        # The SDK abandoned this request's response; the HTTP session goes on.
        from ._stdio import too_large

        log.warning("mcp.message_too_large", server=client.display, tool=what,
                    limit=client.max_message_bytes)
        return ToolCallError(f"MCP server {client.display}: {label} failed: "
                             f"{too_large(client.max_message_bytes)}", kind="remote")
    if isinstance(exc, MCPError) and exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        return ToolCallError(
            f"MCP server {client.display}: {label} asks for input this client cannot give "
            f"({exc.error.message}); answer such requests with an input handler: "
            "register_from_mcp(..., elicitation=handler) or sampling=handler",
            kind="remote")
    if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
        return ToolCallError(
            f"MCP server {client.display} rejected {label}: {exc.error.message} "
            f"(JSON-RPC error {exc.code})", kind="remote"
        )
    invalid = _invalid_result(exc)
    if invalid is not None:
        # The answer arrived and was read whole: the session is fine, only this result
        # is unusable. An error result for this call; no restart.
        log.warning("mcp.invalid_result", server=client.display, tool=what, error=invalid)
        return ToolCallError(f"MCP server {client.display}: {label} {invalid}", kind="remote")
    if client._closed:
        return ToolCallError(f"MCP client for {client.display} was closed during {label}",
                             kind="cancelled")
    # Connection lost (the process exited, the HTTP session dropped) or a broken message:
    # the session is unusable; the next call starts a new one. This call is not retried:
    # the server may have acted on it.
    if conn is not None:
        conn.dead = True
    tail = conn.stderr.text() if conn is not None and conn.stderr is not None else ""
    detail = exc.error.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"
    if conn is not None and conn.error is not None:
        detail = str(conn.error)
    if conn is not None and type(conn.error).__name__ == "MessageTooLarge":
        msg = (f"MCP server {client.display}: {label} failed: {detail}. The session was "
               "ended (a stdio stream cannot skip part of a message); the next call starts "
               "a new one, and this call was not retried")
    else:
        msg = (f"MCP server {client.display} lost the connection during {label} ({detail}); "
               "the call may or may not have run on the server; it will be restarted on "
               "the next call, and this call was not retried")
    if tail:
        msg += f"; its stderr ends with:\n{tail[-1000:]}"
    log.error("mcp.call_failed", server=client.display, tool=what, error=detail)
    return ToolCallError(msg, kind="remote")


def _invalid_result(exc: BaseException) -> str | None:
    """How a result the server did send breaks the MCP schema (or its tool's outputSchema),
    or ``None`` when ``exc`` is not about the result."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0] if errors else None
        where = ".".join(str(p) for p in first["loc"]) if first else "?"
        more = f" and {len(errors) - 1} more problem(s)" if len(errors) > 1 else ""
        return (f"returned a result that does not follow the MCP schema "
                f"({where or 'result'}: {first['msg'] if first else exc}{more})")
    if isinstance(exc, RuntimeError) and any(
            word in str(exc) for word in ("structured content", "Invalid schema for tool")):
        return f"returned an invalid result: {exc}"
    return None
