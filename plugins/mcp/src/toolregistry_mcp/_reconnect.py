"""Which calls lost with their connection may be sent again, and reopening a session for them.

A call in flight when the server died may or may not have run there: it is sent again only
when the server declared the tool safe to repeat (``readOnlyHint`` or ``idempotentHint``), and
then once, on a new session. Everything else answers an error result. (The SDK reports a
refused connection of one request as the end of the whole connection, for every request in
flight on it, so "this request never left" cannot be told apart safely: it is not resent.)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mcp_types

    from ._session import SessionBase, _Connection

__all__ = ["connection_lost", "never_sent", "reopen", "resend_after_loss", "resend_safe"]


def resend_safe(tool: mcp_types.Tool) -> bool:
    """The server says repeating a call of ``tool`` does no harm."""
    ann = tool.annotations
    return bool(ann is not None and (ann.read_only_hint or ann.idempotent_hint))


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(out) < 10:
        out.append(seen)
        if isinstance(seen, BaseExceptionGroup) and seen.exceptions:
            seen = seen.exceptions[0]
        else:
            seen = seen.__cause__ or seen.__context__
    return out


def never_sent(exc: BaseException) -> bool:
    """The request could not be delivered at all (the HTTP connection was refused)."""
    import httpx2

    return any(isinstance(e, (httpx2.ConnectError, ConnectionRefusedError)) for e in _chain(exc))


def connection_lost(exc: BaseException, conn: _Connection) -> bool:
    """``exc`` says the connection ended under the call (the process exited, the HTTP
    stream broke), not that the server answered or the call timed out."""
    import anyio
    import httpx2
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    from ._session import _first_error

    if type(conn.error).__name__ == "MessageTooLarge":  # sent again, it would be again
        return False
    first = _first_error(exc)
    if isinstance(first, MCPError):
        return first.code == CONNECTION_CLOSED and "byte limit" not in first.error.message
    return isinstance(first, (httpx2.TransportError, anyio.ClosedResourceError,
                              anyio.BrokenResourceError, anyio.EndOfStream, OSError))


async def reopen(client: SessionBase) -> bool:
    """A new session for a call to be sent again, waiting up to ``connect_timeout`` for a
    server that is restarting (its port refuses connections meanwhile). False: none came."""
    from ._session import MCPConnectError

    if not client.persistent:
        return True  # every call opens a session of its own anyway
    loop = asyncio.get_running_loop()
    deadline = loop.time() + client.connect_timeout
    delay = 0.1
    while True:
        try:
            await client._ensure()
            return True
        except MCPConnectError as exc:
            if not exc.unreachable or loop.time() + delay > deadline:
                return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)



async def resend_after_loss(client: SessionBase, conn: _Connection, name: str,
                            exc: BaseException) -> bool:
    """Whether the call of ``name`` that failed with ``exc`` is to be sent once more, on a new
    session (opened here): its connection was lost and the server declared the tool safe to
    repeat."""
    from toolregistry.plugin import log

    from ._session import _first_error

    if client._closed or name not in client._resend_safe or not connection_lost(exc, conn):
        return False
    conn.dead = True
    first = _first_error(exc)
    log.warning("mcp.call_resent", server=client.display, tool=name,
                error=f"{type(first).__name__}: {first}")
    return await reopen(client)
