"""The stdio transport: spawn an MCP server and frame its newline-delimited JSON-RPC.

Why not the SDK's ``stdio_client``: it re-joins and re-splits its whole line buffer on every
64 KiB read, which is quadratic in the message size (a 50 MB result took ~20 s of CPU here),
it has no bound on one message, and it kills the process group only when the leader itself
hangs, so helpers a launcher started (``npx`` -> ``node``) can outlive it. This transport
reads linearly, bounds a message at ``max_message_bytes``, and always ends the whole process
group. It keeps the SDK's shutdown order (close stdin, wait, SIGTERM, wait, SIGKILL) and its
message types; on Windows the SDK's own transport is used.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import anyio.abc

__all__ = ["MessageTooLarge", "stdio_transport"]

_EXIT_GRACE = 2.0  # seconds for the server to exit after its stdin closes
_TERM_GRACE = 2.0  # seconds after SIGTERM before SIGKILL


class MessageTooLarge(Exception):
    """The server sent one message larger than the configured bound."""


@contextlib.asynccontextmanager
async def stdio_transport(command: str, args: list[str], *, env: dict[str, str],
                          cwd: str | None, errlog: IO[str],
                          max_message_bytes: int | None,
                          on_fatal: Callable[[BaseException], None] | None = None,
                          exit_grace: float = _EXIT_GRACE) -> AsyncIterator[Any]:
    """Yield ``(read_stream, write_stream)`` for a server started as ``command args``."""
    if sys.platform == "win32":  # pragma: no cover - the SDK handles Windows job objects
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process([command, *args], env=env, cwd=cwd, stderr=errlog,
                                       start_new_session=True)
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    limit = max_message_bytes or 0

    async def reader() -> None:
        assert process.stdout is not None
        pending: list[bytes] = []
        size = 0
        try:
            async with read_send:
                async for chunk in process.stdout:
                    start = 0
                    while True:
                        end = chunk.find(b"\n", start)
                        if end < 0:
                            pending.append(chunk[start:])
                            size += len(chunk) - start
                            if limit and size > limit:
                                error = MessageTooLarge(
                                    f"the server sent a message larger than {limit:,} bytes "
                                    "(max-message-bytes)")
                                if on_fatal is not None:
                                    on_fatal(error)
                                raise error
                            break
                        pending.append(chunk[start:end])
                        line = b"".join(pending)
                        pending.clear()
                        size = 0
                        start = end + 1
                        if line.strip():
                            try:
                                item: Any = SessionMessage(
                                    types.jsonrpc_message_adapter.validate_json(
                                        line, by_name=False))
                            except ValueError as exc:
                                item = exc  # surfaces in the session's message handler
                            await read_send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                ConnectionError):
            pass

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await write_send.aclose()
                    await _stop(process, exit_grace)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, exit_grace)  # also when the task group failed (MessageTooLarge)
            for stream in (read_recv, write_recv, read_send, write_send):
                await stream.aclose()


async def _stop(process: anyio.abc.Process, exit_grace: float) -> None:
    """Close stdin, give the server a moment, then end its whole process group."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(exit_grace):
        while process.returncode is None:
            await anyio.sleep(0.01)
    # The leader's pid is the group id (start_new_session); helpers it started are in it.
    pgid = process.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        with anyio.move_on_after(_TERM_GRACE if sig == signal.SIGTERM else 2.0):
            while _group_alive(pgid) or process.returncode is None:
                await anyio.sleep(0.01)
        if not _group_alive(pgid) and process.returncode is not None:
            break
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):  # else asyncio warns about an unclosed transport at GC
        with contextlib.suppress(Exception):
            close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
