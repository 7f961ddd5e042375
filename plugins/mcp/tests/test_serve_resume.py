"""Resumable streams: a client whose SSE stream drops mid-call reconnects with
``Last-Event-ID`` and gets what it missed (the call's progress and its result); another
session cannot replay it. Raw HTTP against a real served registry, so that the drop is real."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

PROTOCOL = "2025-06-18"


class SSE:
    """One streamed HTTP response read event by event."""

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse):
        self.conn = conn
        self.response = response

    def events(self) -> Iterator[dict[str, Any]]:
        event: dict[str, Any] = {}
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode().rstrip("\r\n")
            if not text:
                if event:
                    yield event
                event = {}
                continue
            key, _, value = text.partition(":")
            event[key] = value.lstrip(" ")

    def close(self) -> None:
        self.conn.close()  # the drop: the socket goes away mid-stream


def request(port: int, method: str, body: Any = None, headers: dict[str, str] | None = None
            ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    sent = {"Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL, **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    conn.request(method, "/mcp", body=data, headers=sent)
    return conn, conn.getresponse()


def open_session(port: int) -> str:
    conn, response = request(port, "POST", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "resumer", "version": "0"}}})
    session = response.getheader("mcp-session-id")
    response.read()
    conn.close()
    assert session
    conn, response = request(port, "POST", {"jsonrpc": "2.0",
                                            "method": "notifications/initialized"},
                             {"mcp-session-id": session})
    response.read()
    conn.close()
    return session


def call(port: int, session: str, request_id: int, name: str, arguments: dict[str, Any]
         ) -> SSE:
    conn, response = request(port, "POST", {
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments,
                   "_meta": {"progressToken": f"t{request_id}"}}},
        {"mcp-session-id": session})
    assert response.status == 200, response.read()
    return SSE(conn, response)


def resume(port: int, session: str, last_event_id: str) -> SSE:
    conn, response = request(port, "GET", headers={"mcp-session-id": session,
                                                   "Last-Event-ID": last_event_id})
    return SSE(conn, response)


def messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(e["data"]) for e in events if e.get("data")]


@pytest.fixture
def port(web: Any, procs: Any) -> Iterator[int]:
    with web.served({"tool_log_level": "off"}, procs) as (_, port):
        yield port


def test_a_dropped_stream_resumes_with_last_event_id(port: int) -> None:
    session = open_session(port)
    stream = call(port, session, 2, "work", {"steps": 20})
    seen: list[dict[str, Any]] = []
    last_id = None
    for event in stream.events():
        if "id" in event:
            last_id = event["id"]
        if event.get("data"):
            seen.append(event)
            if len(seen) == 2:
                break
    stream.close()  # dropped after two notifications; the tool goes on
    assert last_id is not None
    early = messages(seen)
    assert all(m.get("method") == "notifications/progress" for m in early), early
    resumed = resume(port, session, last_id)
    rest: list[dict[str, Any]] = []
    for event in resumed.events():
        if event.get("data"):
            rest.append(event)
            if "result" in json.loads(event["data"]):
                break
    resumed.close()
    later = messages(rest)
    assert later[-1]["id"] == 2
    assert later[-1]["result"]["content"][0]["text"] == "worked 20 steps"
    # Nothing twice, nothing lost: the progress counts on from where the drop left it.
    counts = [m["params"]["progress"] for m in early + later[:-1]]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert counts[-1] == 20.0


def test_another_session_cannot_replay_a_stream(port: int) -> None:
    alice = open_session(port)
    stream = call(port, alice, 2, "work", {"steps": 2})
    ids = [e["id"] for e in stream.events() if "id" in e]
    stream.close()
    assert ids
    mallory = open_session(port)
    replay = resume(port, mallory, ids[0])
    got = []
    if replay.response.status == 200:
        replay.conn.sock.settimeout(1.5)  # type: ignore[union-attr]
        try:
            got = [e for e in replay.events() if e.get("data")]
        except TimeoutError:
            pass
    replay.close()
    assert not any("worked" in e["data"] for e in got)


def test_the_store_keeps_a_message_as_its_json_and_replays_it_unchanged() -> None:
    """Kept as the JSON the transport sends (one string: nothing for the garbage collector to
    walk), parsed back only to be replayed -- the same message, field for field."""
    import asyncio
    import gc

    from mcp_types import jsonrpc_message_adapter

    from toolregistry_mcp._events import SessionEvents

    sent = jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": "héllo"}], "isError": False,
            "structuredContent": {"n": [1, 2]}}}, by_name=False)
    replayed: list[Any] = []

    async def main() -> None:
        store = SessionEvents()
        priming = await store.store_event("7", None)
        result = await store.store_event("7", sent)
        kept = [text for _, text in store._streams["7"]]
        assert kept[0] is None and isinstance(kept[1], str) and not gc.is_tracked(kept[1])

        async def send(event: Any) -> None:
            replayed.append(event)

        assert await store.replay_events_after(priming, send) == "7"
        assert [e.event_id for e in replayed] == [result]

    asyncio.run(main())
    dump = {"by_alias": True, "exclude_unset": True}
    assert replayed[0].message.model_dump_json(**dump) == sent.model_dump_json(**dump)
