"""Audio, embedded resources and resource links to LangChain v1 content blocks and back."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from toolregistry import Audio, EmbeddedResource, ResourceLink
from toolregistry_langchain._content import from_langchain_content, to_langchain_content

WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00"


def test_new_parts_become_standard_blocks_and_come_back() -> None:
    audio = Audio.from_bytes(WAV)
    notes = EmbeddedResource.from_text("file:///notes.txt", "remember the milk")
    pdf = EmbeddedResource.from_bytes("file:///r.pdf", b"%PDF-1.4", "application/pdf")
    parts: list[dict[str, Any]] = [{"type": "text", "text": "here"}, {"type": "audio", "audio": audio},
             {"type": "resource", "resource": notes}, {"type": "resource", "resource": pdf},
             {"type": "resource_link",
              "resource_link": ResourceLink("file:///big.csv", description="a big table")},
             {"type": "audio", "audio": Audio.from_url("https://example.test/a.mp3")}]
    blocks = to_langchain_content(parts)
    assert isinstance(blocks, list)
    # LangChain reads them as its own standard blocks
    message = ToolMessage(content=blocks, tool_call_id="c1")
    assert [b["type"] for b in message.content_blocks] == [
        "text", "audio", "text-plain", "file", "text", "audio"]
    assert blocks[1] == {"type": "audio", "base64": audio.base64(), "mime_type": "audio/wav"}
    assert "file:///big.csv" in blocks[4]["text"] and "a big table" in blocks[4]["text"]
    back = from_langchain_content(blocks)
    assert isinstance(back, list)
    assert back[1] == {"type": "audio", "audio": Audio.from_bytes(WAV, "audio/wav")}
    assert back[2]["resource"] == EmbeddedResource("file:///notes.txt", text="remember the milk",
                                                   mime_type="text/plain")
    assert back[3]["resource"] == pdf
    assert back[5]["audio"].url == "https://example.test/a.mp3"
