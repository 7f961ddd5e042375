"""Resumable streams: the events of a served registry's SSE streams, kept so that a client
that reconnects with ``Last-Event-ID`` gets what it missed.

The SDK's streamable HTTP transport names a stream after the JSON-RPC request id it answers
(``"1"``, ``"2"``, ...), so streams of different sessions share names: a store shared by every
session would replay one client's results to another. Each session therefore gets a store of
its own (:class:`SessionEvents`), made by the factory the server was given — by default
:func:`memory_events`, bounded in memory. A custom factory must keep that property.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

if TYPE_CHECKING:
    from mcp_types import JSONRPCMessage

__all__ = ["EventStoreFactory", "SessionEvents", "memory_events"]

EventStoreFactory = Callable[[], EventStore]
"""Returns a new, empty event store for one session."""

MAX_EVENTS_PER_STREAM = 1000
MAX_STREAMS = 256


class SessionEvents(EventStore):
    """One session's events in memory: the last ``max_events`` of each of its last
    ``max_streams`` streams (older ones are forgotten; a client resuming from a forgotten event
    gets a fresh stream, as after a server restart).

    A message is kept as the JSON the transport sends for it (``model_dump_json(by_alias=True,
    exclude_unset=True)``), one string, and parsed back only when replayed: kept as models,
    the messages of many sessions were a fifth of the objects the garbage collector walked on
    every full collection of a loaded server, for events hardly ever replayed."""

    def __init__(self, max_events: int = MAX_EVENTS_PER_STREAM,
                 max_streams: int = MAX_STREAMS) -> None:
        self.max_events = max_events
        self.max_streams = max_streams
        # Unguessable per session, ordered within it.
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)
        self._streams: OrderedDict[StreamId, deque[tuple[EventId, str | None]]] = OrderedDict()
        self._index: dict[EventId, StreamId] = {}

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{self._prefix}-{next(self._counter)}"
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque()
            while len(self._streams) > self.max_streams:
                _, dropped = self._streams.popitem(last=False)
                for old_id, _message in dropped:
                    self._index.pop(old_id, None)
        else:
            self._streams.move_to_end(stream_id)
        if len(events) >= self.max_events:
            old_id, _message = events.popleft()
            self._index.pop(old_id, None)
        text = None if message is None else message.model_dump_json(by_alias=True,
                                                                    exclude_unset=True)
        events.append((event_id, text))
        self._index[event_id] = stream_id
        return event_id

    async def replay_events_after(self, last_event_id: EventId,
                                  send_callback: EventCallback) -> StreamId | None:
        stream_id = self._index.get(last_event_id)
        if stream_id is None:
            return None
        from mcp_types import jsonrpc_message_adapter

        after = False
        for event_id, text in list(self._streams.get(stream_id, ())):
            if after:
                if text is not None:  # priming events carry no message
                    message = jsonrpc_message_adapter.validate_json(text, by_name=False)
                    await send_callback(EventMessage(message, event_id))
            elif event_id == last_event_id:
                after = True
        return stream_id


def memory_events() -> EventStore:
    """The default factory: a bounded in-memory :class:`SessionEvents` per session."""
    return SessionEvents()
