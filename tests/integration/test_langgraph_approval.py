"""The policy plugin's held calls in a LangGraph graph: an exported tool with
``approvals="interrupt"`` pauses the graph, a person decides through the policy, and the
resumed graph answers the call (the langchain plugin knows only the kernel's pending result
kind; the graph is LangGraph's own, with its in-memory checkpointer)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

import toolregistry_policy as tp
from toolregistry import ToolRegistry
from toolregistry.types import ApprovalRequest, ToolResult
from toolregistry_langchain import from_tool_message

CALL = {"name": "send_mail", "args": {"to": "ceo@example.com", "body": "hi"}, "id": "call_1",
        "type": "tool_call"}


def graph_of(tools: list[Any]) -> Any:
    """A model node asking for one mail, then LangGraph's ToolNode, with memory."""
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [AIMessage(content="",
                                                                  tool_calls=[CALL])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    return graph.compile(checkpointer=InMemorySaver())


def mail_graph() -> tuple[ToolRegistry, Any]:
    registry = ToolRegistry()

    @registry.register
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    tp.configure(registry, rules=[tp.Rule("ask", tools=("send_*",), reason="mail leaves")])
    return registry, graph_of(registry.to_langchain(approvals="interrupt"))


def test_policy_approval_through_a_langgraph_interrupt() -> None:
    registry, graph = mail_graph()
    config = {"configurable": {"thread_id": "t1"}}
    state = graph.invoke({"messages": [HumanMessage(content="mail the ceo")]}, config)
    (paused,) = state["__interrupt__"]
    policy = tp.get_policy(registry)
    (waiting,) = policy.pending()
    assert paused.value["approval"]["id"] == waiting.id
    assert paused.value["approval"]["message"] == "mail leaves"
    policy.approve(waiting.id, approver="ann")
    state = graph.invoke(Command(resume="approved"), config)
    (answer,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "success" and answer.content == "sent to ceo@example.com"
    registry.close()


def test_the_resume_value_is_decided_through_the_policy() -> None:
    """``decide`` applies the resume value through the policy (approve with changed
    arguments, then the policy's resume), inside the resumed graph."""
    for answer, expected in [
        ({"approve": True, "arguments": {"to": "cfo@example.com", "body": "hi"}},
         "changed arguments"),
        ({"approve": False, "reason": "not now"}, "was denied: not now"),
    ]:
        registry, _ = mail_graph()
        graph = graph_of(registry.to_langchain(approvals="interrupt",
                                               decide=policy_decide(tp.get_policy(registry))))
        config = {"configurable": {"thread_id": "t2"}}
        state = graph.invoke({"messages": [HumanMessage(content="mail the ceo")]}, config)
        assert "__interrupt__" in state
        state = graph.invoke(Command(resume=answer), config)
        (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        assert expected in str(message.content)
        assert from_tool_message(message).ok is answer["approve"]
        if answer["approve"]:
            assert "sent to cfo@example.com" in str(message.content)
        registry.close()


def policy_decide(policy: Any) -> Any:
    """The application's decide: the resume value applied through the policy."""

    def decide(approval: ApprovalRequest, answer: Any) -> ToolResult:
        if answer["approve"]:
            policy.approve(approval.id, arguments=answer.get("arguments"), approver="ann")
        else:
            policy.deny(approval.id, answer["reason"], approver="ann")
        (final,) = policy.resume([approval])
        assert isinstance(final, ToolResult)
        return final

    return decide
