"""Audio, embedded resources, resource links and structured results in every provider's answer
messages, checked against the provider SDKs' own types: each part the provider's way where it
takes it, a text saying what was left out where it does not."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from toolregistry import (
    Audio,
    EmbeddedResource,
    ResourceLink,
    Tool,
    ToolCall,
    ToolRegistry,
    ToolResult,
)

from .test_content import OGG, WAV
from .test_messages import conforms

PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"
WEATHER = {"city": "Oslo", "temp": 21}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("clip", {}), ("ogg", {}), ("report", {}), ("notes", {}), ("measure", {"city": "Oslo"})]


@pytest.fixture
def reg(registry: ToolRegistry) -> ToolRegistry:
    @registry.register
    def clip() -> tuple[str, Audio]:
        """A wav clip."""
        return "a clip", Audio.from_bytes(WAV)

    @registry.register
    def ogg() -> Audio:
        """An ogg clip."""
        return Audio.from_bytes(OGG)

    @registry.register
    def report() -> tuple[str, EmbeddedResource]:
        """A PDF."""
        return "the report", EmbeddedResource.from_bytes("file:///r/report.pdf", PDF,
                                                          "application/pdf")

    @registry.register
    def notes() -> tuple[EmbeddedResource, ResourceLink]:
        """A text resource and a link."""
        return (EmbeddedResource.from_text("file:///n/notes.txt", "hello notes"),
                ResourceLink("file:///data/big.csv", "big.csv", "the big table", "text/csv"))

    def measure(city: str) -> dict[str, Any]:
        return {"city": city, "temp": 21}

    registry.register(attrs.evolve(Tool.from_function(measure), output_schema={
        "type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "number"}}}))
    return registry


def turn(reg: ToolRegistry, calls: list[Any], api_format: str) -> list[dict[str, Any]]:
    results = reg.execute_tool_calls(calls)
    assert all(r.ok for r in results), [r.text for r in results]
    return reg.build_tool_call_messages(calls, results, api_format=api_format)


def test_openai_chat(reg: ToolRegistry) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(CALLS)]
    messages = turn(reg, calls, "openai-chat")
    for message in messages:
        conforms(message, ChatCompletionMessageParam)
    _, clip, ogg, report, notes, measure, user = messages
    assert clip["content"] == "a clip\n[1 audio clip(s) follow in the next user message]"
    assert "audio (audio/ogg" in ogg["content"] and "openai-chat" in ogg["content"]
    assert report["content"] == "the report\n[1 file(s) follow in the next user message]"
    assert "hello notes" in notes["content"] and "file:///data/big.csv" in notes["content"]
    assert json.loads(measure["content"]) == WEATHER
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text", "input_audio", "text", "file"]
    assert user["content"][1]["input_audio"]["format"] == "wav"
    assert user["content"][3]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert user["content"][3]["file"]["filename"] == "report.pdf"


def test_openai_responses(reg: ToolRegistry) -> None:
    from openai.types.responses import ResponseInputItemParam

    calls = [{"type": "function_call", "call_id": f"c{i}", "name": n,
              "arguments": json.dumps(a)} for i, (n, a) in enumerate(CALLS)]
    items = turn(reg, calls, "openai-responses")
    for item in items:
        conforms(item, ResponseInputItemParam)
    clip, ogg, report, notes, measure = (i["output"] for i in items[len(CALLS):])
    # no audio in a function_call_output: the text says it was there
    assert clip.startswith("a clip\n[the tool returned audio (audio/wav")
    assert "audio (audio/ogg" in ogg
    assert report[0] == {"type": "input_text", "text": "the report"}
    assert report[1]["type"] == "input_file" and report[1]["filename"] == "report.pdf"
    assert "hello notes" in notes and "big.csv" in notes
    assert json.loads(measure) == WEATHER


def test_anthropic(reg: ToolRegistry) -> None:
    from anthropic.types import MessageParam

    calls = [{"type": "tool_use", "id": f"t{i}", "name": n, "input": a}
             for i, (n, a) in enumerate(CALLS)]
    assistant, user = turn(reg, calls, "anthropic")
    conforms(assistant, MessageParam)
    conforms(user, MessageParam)
    clip, ogg, report, notes, measure = (b["content"] for b in user["content"])
    assert clip.startswith("a clip\n[the tool returned audio (audio/wav")
    assert "anthropic" in ogg
    assert report[1] == {"type": "document", "title": "file:///r/report.pdf", "source": {
        "type": "base64", "media_type": "application/pdf",
        "data": EmbeddedResource.from_bytes("x:y", PDF).base64()}}
    assert "big.csv" in notes[0]["text"]
    assert notes[1]["source"] == {"type": "text", "media_type": "text/plain",
                                  "data": "hello notes"}
    assert json.loads(measure) == WEATHER


def test_gemini(reg: ToolRegistry) -> None:
    from google.genai import types as gt

    calls = [gt.Part(function_call=gt.FunctionCall(id=f"g{i}", name=n, args=a))
             for i, (n, a) in enumerate(CALLS)]
    model, user = turn(reg, calls, "gemini")
    gt.Content.model_validate(model)
    parts = gt.Content.model_validate(user).parts or []
    responses = {p.function_response.name: p.function_response.response
                 for p in parts if p.function_response}
    # the structured result is the response object itself
    assert responses["measure"] == {"output": WEATHER}
    assert responses["clip"] == {"output": "a clip"}
    assert "hello notes" in responses["notes"]["output"]  # type: ignore[index]
    assert "big.csv" in responses["notes"]["output"]  # type: ignore[index]
    inline = [(p.inline_data.mime_type, p.inline_data.data) for p in parts if p.inline_data]
    assert inline == [("audio/wav", WAV), ("audio/ogg", OGG), ("application/pdf", PDF)]


def test_gemini_keeps_text_that_says_more_than_the_structured_result() -> None:
    from toolregistry.formats import Answer
    from toolregistry.formats.gemini import Gemini

    result = ToolResult("g0", "measure", "It is mild in Oslo.", structured_content=WEATHER)
    call = ToolCall("measure", {}, id="g0")
    _, user = Gemini().answer_messages([Answer(call, result, True)])
    assert user["parts"][0]["function_response"]["response"] == {
        "output": WEATHER, "text": "It is mild in Oslo."}


def test_remote_audio_is_said_not_dropped(registry: ToolRegistry) -> None:
    @registry.register
    def far() -> Audio:
        """Audio by URL."""
        return Audio.from_url("https://example.test/a.wav")

    calls = [{"id": "c0", "type": "function", "function": {"name": "far", "arguments": "{}"}}]
    _, tool = turn(registry, calls, "openai-chat")
    assert "https://example.test/a.wav" in tool["content"]
