"""Audio, embedded resources and resource links in the execution log: kept like images (their
shape by default, ``data:`` URLs and texts in full mode), in memory and in the SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolregistry import Audio, EmbeddedResource, ResourceLink, ToolRegistry
from toolregistry_inspector import execution_log, query_log

WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00"


def _parts() -> tuple[str, Audio, EmbeddedResource, EmbeddedResource, ResourceLink]:
    return ("said", Audio.from_bytes(WAV),
            EmbeddedResource.from_text("file:///secret/notes.txt", "remember the milk"),
            EmbeddedResource.from_bytes("file:///r.pdf", b"%PDF", "application/pdf"),
            ResourceLink("file:///secret/big.csv", mime_type="text/csv"))


@pytest.mark.parametrize("mode", ["redacted", "full"])
def test_audio_and_resources_are_logged(tmp_path: Path, mode: str) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n'
                      f'arguments = "{mode}"\n', encoding="utf-8")
    reg = ToolRegistry(config=config)
    reg.register(_parts, name="speak")
    try:
        reg.invoke("speak", {}, call_id="c1")
        log = execution_log(reg)
        log.flush()
        for entry in (log.entries()[-1], query_log(tmp_path / "calls.sqlite")[-1]):
            assert entry.result is not None
            _, audio, notes, pdf, link = entry.result
            assert {k: audio[k] for k in ("type", "media_type", "bytes")} == {
                "type": "audio", "media_type": "audio/wav", "bytes": len(WAV)}
            assert (pdf["type"], pdf["media_type"], pdf["bytes"]) == (
                "resource", "application/pdf", 4)
            assert (link["type"], link["mime_type"]) == ("resource_link", "text/csv")
            if mode == "full":
                assert audio["url"] == Audio.from_bytes(WAV).as_url()
                assert notes["text"] == "remember the milk"
                assert link["uri"] == "file:///secret/big.csv"
            else:
                assert "url" not in audio
                assert notes["text"] == "<str, 17 chars>"
                assert "secret" not in json.dumps(entry.to_dict())
    finally:
        reg.close()
