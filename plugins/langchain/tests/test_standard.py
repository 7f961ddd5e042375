"""LangChain's standard tool suites (``langchain-tests``) on exported registry tools.

``ToolsUnitTests`` and ``ToolsIntegrationTests`` are what LangChain asks of every tool
integration: a name, an input schema the example arguments satisfy, and ``invoke`` /
``ainvoke`` returning valid ``ToolMessage`` content (and an artifact when the response format
promises one), with a tool call and without. They run here, unchanged, on exported tools of
each kind: a Python function with a nested pydantic argument, a third-party LangChain tool
(langchain-community's JSON toolkit) imported and exported again, a tool whose result is an
image, and an export with ``response_format="content"``.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from langchain_community.agent_toolkits import JsonToolkit
from langchain_community.tools.json.tool import JsonSpec
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from pydantic import BaseModel, Field

from toolregistry import Image, ToolRegistry

# A 1x1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e5272ae7"
    "0000000049454e44ae426082"
)


class Meeting(BaseModel):
    title: str = Field(min_length=1)
    attendees: list[str] = Field(min_length=1, description="E-mail addresses.")
    day: date
    length: Literal["30m", "1h"] = "30m"


def _registry() -> ToolRegistry:
    registry = ToolRegistry(default_timeout=30)

    @registry.register
    def schedule(meeting: Meeting, notify: bool = True) -> dict[str, Any]:
        """Put a meeting in the calendar.

        Args:
            meeting: What, who and when.
            notify: Send invitations.
        """
        return {"scheduled": meeting.title, "day": meeting.day, "invited": notify}

    @registry.register
    def snapshot(caption: str) -> tuple[str, Image]:
        """A captioned picture."""
        return caption, Image.from_bytes(PIXEL, "image/png")

    # A third-party LangChain toolkit, imported and exported again.
    spec = JsonSpec(dict_={"user": {"name": "Ada", "langs": ["py", "ml"]}})
    registry.register_from_langchain(JsonToolkit(spec=spec), namespace="json")
    return registry


REGISTRY = _registry()
EXPORTED = {t.name: t for t in REGISTRY.to_langchain()}
CONTENT_ONLY = {t.name: t for t in REGISTRY.to_langchain(response_format="content")}


MEETING = {"meeting": {"title": "Review", "attendees": ["ada@example.org"], "day": "2026-11-02"}}


def case(tool: BaseTool, example: dict[str, Any]) -> type:
    """What the standard suites ask of a tool integration: the tool and example arguments."""
    return type("Case", (), {"tool_constructor": tool, "tool_invoke_params_example": example})


PythonTool = case(EXPORTED["schedule"], MEETING)
ImportedTool = case(EXPORTED["json-json_spec_get_value"], {"tool_input": '["user"]["name"]'})
ImageTool = case(EXPORTED["snapshot"], {"caption": "a pixel"})
ContentOnlyTool = case(CONTENT_ONLY["schedule"], MEETING)


class TestPythonUnit(PythonTool, ToolsUnitTests):
    pass


class TestPythonIntegration(PythonTool, ToolsIntegrationTests):
    pass


class TestImportedUnit(ImportedTool, ToolsUnitTests):
    pass


class TestImportedIntegration(ImportedTool, ToolsIntegrationTests):
    pass


class TestImageUnit(ImageTool, ToolsUnitTests):
    pass


class TestImageIntegration(ImageTool, ToolsIntegrationTests):
    pass


class TestContentOnlyUnit(ContentOnlyTool, ToolsUnitTests):
    pass


class TestContentOnlyIntegration(ContentOnlyTool, ToolsIntegrationTests):
    pass


def test_the_suites_really_called_the_registry() -> None:
    # The suites only look at the shapes; the content must be the registry's answer.
    message = EXPORTED["snapshot"].invoke(
        {"type": "tool_call", "id": "s1", "name": "snapshot", "args": {"caption": "hi"}})
    assert message.content[0] == {"type": "text", "text": "hi"}
    assert message.content[1]["type"] == "image" and message.content[1]["mime_type"] == "image/png"
    assert EXPORTED["json-json_spec_get_value"].invoke({"tool_input": '["user"]["name"]'}) == "Ada"
    message = EXPORTED["schedule"].invoke({"type": "tool_call", "id": "s2", "name": "schedule",
                                           "args": MEETING})
    assert message.artifact["value"] == {"scheduled": "Review", "day": "2026-11-02",
                                         "invited": True}
