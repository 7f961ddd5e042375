"""Approvals asked of the client's user over MCP: a real ``toolregistry serve`` (streamable
HTTP) whose policy holds ``send_*`` calls, the ``mcp`` SDK's client at 2026-07-28 as the user
answering the elicitation yes, no, or not at all, and the policy's SQLite approvals store read
from this process through ``registry.approvals``. A client that cannot answer (handshake
protocol, or no elicitation) gets the held call's pending result, as before."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolregistry import ToolRegistry

from .conftest import free_port
from .test_served_approvals import _served, write_served


def _user(answer: str | None, asked: list[Any]) -> Any:
    """An elicitation callback: the user says yes, no, or dismisses the question."""
    import mcp_types as types

    async def respond(context: Any, params: Any) -> Any:
        asked.append(params)
        if answer is None:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content={"approve": answer == "yes"})

    return respond


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("asked")
    port = free_port()
    config, sent = write_served(folder, port, ', reason = "mail leaves"')
    person = ToolRegistry(config=config)  # where the approvals are read: another process
    try:
        with _served(config, port, sent) as url:
            yield url, person, sent
    finally:
        person.close()


def _call(url: str, to: str, *, mode: str = "auto", answer: str | None = "yes",
          ask: bool = True) -> tuple[Any, list[Any]]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    asked: list[Any] = []

    async def main() -> Any:
        async with Client(streamable_http_client(url), mode=mode,
                          elicitation_callback=_user(answer, asked) if ask else None) as c:
            return await c.call_tool("send_mail", {"to": to, "body": "hi"})

    return anyio.run(main), asked


def _record(person: ToolRegistry, to: str) -> Any:
    [record] = [r for r in person.approvals.list(None) if r.request.arguments["to"] == to]
    return record


def test_the_user_approves_and_the_call_runs_once(served: Any) -> None:
    url, person, sent = served
    result, asked = _call(url, "yes@example.com", answer="yes")
    assert not result.is_error and result.content[0].text == "sent to yes@example.com"
    [question] = asked
    assert "send_mail" in question.message and "mail leaves" in question.message
    assert "yes@example.com" in question.message
    record = _record(person, "yes@example.com")
    assert record.status == "done" and record.approver is not None
    assert record.approver.startswith("mcp-session:")
    assert sent.read_text().split().count("yes@example.com") == 1


def test_the_user_declines_and_the_call_is_denied(served: Any) -> None:
    url, person, sent = served
    result, asked = _call(url, "no@example.com", answer="no")
    assert len(asked) == 1
    assert result.is_error and "denied" in result.content[0].text
    assert "the user declined it" in result.content[0].text
    assert _record(person, "no@example.com").status in ("denied", "done")
    assert "no@example.com" not in sent.read_text()


def test_an_unanswered_question_leaves_the_call_held_for_a_person(served: Any) -> None:
    url, person, sent = served
    result, asked = _call(url, "later@example.com", answer=None)
    assert len(asked) == 1
    assert result.is_error and "waits for a person's approval" in result.content[0].text
    record = _record(person, "later@example.com")
    assert record.status == "pending"
    assert record.id in result.content[0].text and "later@example.com" not in sent.read_text()


@pytest.mark.parametrize(("mode", "ask"), [("legacy", True), ("auto", False)])
def test_a_client_that_cannot_answer_gets_the_pending_result(served: Any, mode: str,
                                                             ask: bool) -> None:
    url, person, sent = served
    to = f"{mode}-{ask}@example.com"
    result, asked = _call(url, to, mode=mode, ask=ask)
    assert asked == []
    assert result.is_error and "waits for a person's approval" in result.content[0].text
    assert _record(person, to).status == "pending"
    assert to not in sent.read_text()


def test_an_answer_runs_the_call_once_and_is_bound_to_it(served: Any) -> None:
    """The same answer sent twice runs the call once; the state of one call does not answer
    another (other arguments), nor does a changed state."""
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    url, person, sent = served
    mail = {"to": "twice@example.com", "body": "hi"}
    yes: types.InputResponses = {"toolregistry_approval": types.ElicitResult(
        action="accept", content={"approve": True})}

    async def main() -> list[Any]:
        async with Client(streamable_http_client(url), elicitation_callback=_user("yes", [])
                          ) as client:
            session = client.session
            asked = await session.call_tool("send_mail", mail, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult), asked
            state = str(asked.request_state)
            answers: list[Any] = []
            for arguments, sent_state in [(mail, state), (mail, state),
                                          ({**mail, "to": "other@example.com"}, state),
                                          (mail, state[:-4] + "AAAA")]:
                try:
                    answers.append(await session.call_tool(
                        "send_mail", arguments, input_responses=yes,
                        request_state=sent_state, allow_input_required=True))
                except MCPError as exc:
                    answers.append(exc)
            return answers

    first, again, other, changed = anyio.run(main)
    assert not first.is_error and first.content[0].text == "sent to twice@example.com"
    assert again.is_error and "did not run again" in again.content[0].text
    for refused in (other, changed):
        assert isinstance(refused, MCPError) and refused.error.code == -32602, refused
    assert sent.read_text().split().count("twice@example.com") == 1
    assert "other@example.com" not in sent.read_text()
    assert _record(person, "twice@example.com").status == "done"
