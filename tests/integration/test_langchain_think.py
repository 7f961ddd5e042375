"""LangChain tools exported while think was on keep working once it is turned off: the model
fills ``toolcall_reason`` from the schema it was given, and the registry strips it (the think
plugin and the langchain plugin, through the kernel only)."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from toolregistry import ToolRegistry
from toolregistry_langchain import from_tool_message


def test_exported_tool_made_with_think_on_accepts_the_reason_after_it_is_off() -> None:
    with ToolRegistry(think_augment=True) as registry:
        @registry.register
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        (tool,) = registry.to_langchain()
        assert isinstance(tool.args_schema, dict)
        assert "toolcall_reason" in tool.args_schema["properties"]
        registry.disable_think_augment()
        message = tool.invoke({"type": "tool_call", "id": "call_1", "name": "add",
                               "args": {"a": 2, "b": 3,
                                        "toolcall_reason": "the user asked for 2 + 3"}})
        assert isinstance(message, ToolMessage)
        assert message.status == "success", message.content
        assert message.content == "5"
        result = from_tool_message(message)
        assert result.reason == "the user asked for 2 + 3"
