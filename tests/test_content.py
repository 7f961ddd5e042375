"""The content parts besides text and images: Audio, embedded resources, resource links, and a
structured result beside the content."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import toolregistry
from toolregistry import Audio, EmbeddedResource, ResourceLink, Tool, ToolRegistry
from toolregistry._results import encode_content

WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00"
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(16)
OGG = b"OggS\x00\x02" + bytes(20)


def test_the_new_types_are_exported() -> None:
    for name in ("Audio", "EmbeddedResource", "ResourceLink"):
        assert name in toolregistry.__all__
        assert getattr(toolregistry, name) is getattr(toolregistry.types, name)


@pytest.mark.parametrize(("data", "mime", "fmt"), [
    (WAV, "audio/wav", "wav"), (MP3, "audio/mpeg", "mp3"), (OGG, "audio/ogg", "ogg"),
    (b"fLaC" + bytes(8), "audio/flac", "flac"), (b"\x00\x01", "audio/wav", "wav")])
def test_audio_sniffs_its_type_from_the_bytes(data: bytes, mime: str, fmt: str) -> None:
    audio = Audio.from_bytes(data)
    assert (audio.media_type, audio.format) == (mime, fmt)
    assert audio.as_url() == f"data:{mime};base64,{base64.b64encode(data).decode()}"


def test_audio_from_a_path_a_url_or_a_given_type(tmp_path: Path) -> None:
    path = tmp_path / "clip.mp3"
    path.write_bytes(MP3)
    assert Audio.from_path(path).media_type == "audio/mpeg"
    assert Audio.from_path(path).read_bytes() == MP3
    assert Audio.from_url("https://example.test/a.wav").media_type == "audio/wav"
    assert Audio.from_url("https://example.test/a.wav").base64() is None
    assert Audio.from_bytes(WAV, "audio/L16").format == "L16"
    with pytest.raises(ValueError, match="Audio needs exactly one of"):
        Audio()
    with pytest.raises(ValueError, match="Audio needs exactly one of"):
        Audio(path="a.wav", data=WAV)


def test_resources_and_links() -> None:
    text = EmbeddedResource.from_text("file:///notes/readme.md", "# hi")
    assert (text.media_type, text.filename, base64.b64decode(text.base64())) == (
        "text/markdown", "readme.md", b"# hi")
    blob = EmbeddedResource.from_bytes("mem://blob", b"\x00\x01")
    assert blob.media_type == "application/octet-stream"
    with pytest.raises(ValueError, match="exactly one of text= or data="):
        EmbeddedResource("mem://x")
    with pytest.raises(ValueError, match="needs a uri"):
        EmbeddedResource("", text="x")
    link = ResourceLink("file:///data/table.csv", description="a table")
    assert link.name == "table.csv"
    with pytest.raises(ValueError, match="ResourceLink needs a uri"):
        ResourceLink(None)  # type: ignore[arg-type]


def test_results_carry_the_new_parts_in_order() -> None:
    audio = Audio.from_bytes(WAV)
    res = EmbeddedResource.from_text("mem://a", "A")
    link = ResourceLink("mem://b", "b")
    parts = encode_content(("said", audio, [res, link], {"n": 1}))
    assert parts == [{"type": "text", "text": "said"}, {"type": "audio", "audio": audio},
                     {"type": "resource", "resource": res},
                     {"type": "resource_link", "resource_link": link},
                     {"type": "text", "text": '{"n":1}'}]
    assert encode_content(audio) == [{"type": "audio", "audio": audio}]
    assert encode_content(link) == [{"type": "resource_link", "resource_link": link}]
    # ready-made parts pass through, audio bytes are audio like image bytes are images
    assert encode_content([{"type": "audio", "audio": audio}]) == [{"type": "audio",
                                                                   "audio": audio}]
    parts = encode_content(WAV)
    assert isinstance(parts, list) and parts[0]["type"] == "audio"
    assert parts[0]["audio"].media_type == "audio/wav"


def test_a_tool_returns_audio(registry: ToolRegistry) -> None:
    @registry.register
    def speak(text: str) -> tuple[str, Audio]:
        """Say it."""
        return f"said {text}", Audio.from_bytes(WAV)

    result = registry.invoke("speak", {"text": "hi"})
    assert result.ok and result.text == "said hi"
    assert [a.media_type for a in result.audio] == ["audio/wav"]


def test_a_tool_with_an_output_schema_gives_structured_content(registry: ToolRegistry) -> None:
    def measure(city: str) -> dict[str, Any]:
        return {"city": city, "temp": 21}

    schema = {"type": "object", "properties": {"city": {"type": "string"},
                                               "temp": {"type": "number"}}}
    registry.register(attrs.evolve(Tool.from_function(measure), output_schema=schema))

    @registry.register
    def plain(city: str) -> dict[str, Any]:
        """No output schema."""
        return {"city": city}

    result = registry.invoke("measure", {"city": "Oslo"})
    assert result.structured_content == {"city": "Oslo", "temp": 21}
    assert json.loads(result.text) == result.structured_content  # the same data as text
    assert registry.invoke("plain", {"city": "Oslo"}).structured_content is None
