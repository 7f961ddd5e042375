"""Pending approvals through LangChain and LangGraph: the approval comes back from a
``ToolMessage`` (also after a checkpointer), and an exported tool can turn a held call into a
LangGraph ``interrupt()`` that a resumed graph answers. The held calls come from a real
``authorize`` plugin of the kernel's (a person's decisions in a dict), not from any other
toolregistry plugin."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from toolregistry import ToolRegistry
from toolregistry.plugin import hookimpl
from toolregistry.types import ApprovalRequest, Decision, ToolCall, ToolResult
from toolregistry_langchain import (
    APPROVAL_INTERRUPT,
    from_tool_message,
    interrupt_for_approval,
    to_tool_messages,
)


class Desk:
    """A real authorize plugin: mail waits for a person; decided calls run (or are denied)."""

    def __init__(self) -> None:
        self.decisions: dict[str, bool] = {}

    @hookimpl
    def authorize(self, tool: Any, call: ToolCall) -> Decision | None:
        if tool.name != "send_mail":
            return None
        assert call.arguments is not None
        approval_id = ApprovalRequest.stable_id(tool.name, call.id, call.arguments)
        decided = self.decisions.get(approval_id)
        if decided is None:
            return Decision.pending("mail leaves the company", rule="ask-mail")
        return Decision.allow() if decided else Decision.deny("not today")


def make_registry(desk: Desk) -> ToolRegistry:
    registry = ToolRegistry(plugins=[desk])

    @registry.register
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


CALL = {"name": "send_mail", "args": {"to": "ceo@example.com", "body": "hi"}, "id": "call_1",
        "type": "tool_call"}


def test_the_pending_approval_comes_back_from_a_tool_message() -> None:
    registry = make_registry(Desk())
    (result,) = registry.execute_tool_calls([CALL])
    assert result.pending and result.approval is not None
    (message,) = to_tool_messages([result])
    stored = messages_from_dict(json.loads(json.dumps(messages_to_dict([message]))))[0]
    assert isinstance(stored, ToolMessage)
    for back in (from_tool_message(message), from_tool_message(stored)):
        assert back.pending and back.error_kind == "approval_required"
        assert back.approval == result.approval
    (exported,) = registry.to_langchain(["send_mail"])
    held = exported.invoke(CALL)
    assert from_tool_message(held).approval == result.approval


def graph_of(registry: ToolRegistry, tools: list[Any]) -> Any:
    """A model node that asks for one mail, then the prebuilt ToolNode, with memory."""

    def agent(state: MessagesState) -> dict[str, list[Any]]:
        return {"messages": [AIMessage(content="", tool_calls=[CALL])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("decision", [True, False])
def test_an_exported_tool_interrupts_the_graph_until_a_person_decides(decision: bool) -> None:
    desk = Desk()
    registry = make_registry(desk)
    graph = graph_of(registry, registry.to_langchain(["send_mail"], approvals="interrupt"))
    config = {"configurable": {"thread_id": "t1"}}
    state = graph.invoke({"messages": [HumanMessage(content="mail the ceo")]}, config)
    (paused,) = state["__interrupt__"]
    assert paused.value["type"] == APPROVAL_INTERRUPT
    request = ApprovalRequest.from_dict(paused.value["approval"])
    assert request.tool == "send_mail" and request.call_id == "call_1"
    assert not any(isinstance(m, ToolMessage) for m in state["messages"])
    # Resumed before anybody decided: it pauses again, nothing ran.
    state = graph.invoke(Command(resume="any news?"), config)
    assert state["__interrupt__"][0].value["approval"]["id"] == request.id
    desk.decisions[request.id] = decision
    state = graph.invoke(Command(resume="decided"), config)
    assert "__interrupt__" not in state
    (answer,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    if decision:
        assert answer.status == "success" and answer.content == "sent to ceo@example.com"
    else:
        assert answer.status == "error" and "not today" in str(answer.content)
        assert from_tool_message(answer).error_kind == "denied"


def test_decide_applies_the_resume_value_inside_the_resumed_graph() -> None:
    desk = Desk()
    registry = make_registry(desk)
    answers: list[Any] = []

    def decide(approval: ApprovalRequest, answer: Any) -> ToolResult | None:
        answers.append(answer)
        if answer.get("edit"):  # what a holding plugin's own resume would give
            return ToolResult(call_id=approval.call_id, name=approval.tool,
                              content=f"sent to {answer['edit']}")
        desk.decisions[approval.id] = answer["approve"]
        return None  # decided: send the call again

    tools = registry.to_langchain(["send_mail"], approvals="interrupt", decide=decide)
    for thread, answer, expected in [("a", {"approve": True}, "sent to ceo@example.com"),
                                     ("b", {"edit": "cfo@example.com"}, "sent to cfo@example.com")]:
        desk.decisions.clear()
        graph = graph_of(registry, tools)
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [HumanMessage(content="mail the ceo")]}, config)
        state = graph.invoke(Command(resume=answer), config)
        (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        assert message.status == "success" and message.content == expected
    assert answers == [{"approve": True}, {"edit": "cfo@example.com"}]


def test_interrupt_for_approval_in_a_node_of_ones_own() -> None:
    desk = Desk()
    registry = make_registry(desk)

    def tools(state: MessagesState) -> dict[str, list[Any]]:
        asked = state["messages"][-1]
        assert isinstance(asked, AIMessage)
        results = registry.execute_tool_calls(asked.tool_calls)
        final = [interrupt_for_approval(registry, r) for r in results]
        return {"messages": to_tool_messages(final)}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [AIMessage(content="",
                                                                  tool_calls=[CALL])]})
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    app: Any = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t3"}}
    state = app.invoke({"messages": [HumanMessage(content="mail")]}, config)
    request = ApprovalRequest.from_dict(state["__interrupt__"][0].value["approval"])
    desk.decisions[request.id] = True
    state = app.invoke(Command(resume=True), config)
    assert state["messages"][-1].content == "sent to ceo@example.com"
    # not pending: returned as it is, without LangGraph
    done = registry.invoke("add", {"a": 1, "b": 2})
    assert interrupt_for_approval(registry, done) is done


def test_the_async_path_interrupts_and_resumes_too() -> None:
    import asyncio

    desk = Desk()
    registry = make_registry(desk)
    graph = graph_of(registry, registry.to_langchain(["send_mail"], approvals="interrupt"))
    config = {"configurable": {"thread_id": "t4"}}

    async def main() -> Any:
        state = await graph.ainvoke({"messages": [HumanMessage(content="mail")]}, config)
        request = ApprovalRequest.from_dict(state["__interrupt__"][0].value["approval"])
        desk.decisions[request.id] = True
        return await graph.ainvoke(Command(resume=True), config)

    state = asyncio.run(main())
    assert state["messages"][-1].content == "sent to ceo@example.com"


def test_approvals_option_is_checked() -> None:
    registry = make_registry(Desk())
    with pytest.raises(ValueError, match="approvals"):
        registry.to_langchain(approvals="wait")
    with pytest.raises(ValueError, match="decide"):
        registry.to_langchain(decide=lambda approval, answer: None)
