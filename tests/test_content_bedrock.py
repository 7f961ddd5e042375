"""bedrock-converse: audio, resources, links and structured results in a toolResult, checked
against botocore's service model."""

from __future__ import annotations

import pytest

from toolregistry import ToolRegistry

pytest.importorskip("botocore.session")

from .test_bedrock_converse import MODEL, converse
from .test_content_formats import CALLS, PDF, WEATHER, reg, turn  # noqa: F401


def test_a_turn(reg: ToolRegistry) -> None:  # noqa: F811
    calls = [{"toolUse": {"toolUseId": f"tooluse_{i}", "name": n, "input": a}}
             for i, (n, a) in enumerate(CALLS)]
    echo, answer = turn(reg, calls, "bedrock-converse")
    converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "go"}]}, echo,
                                      answer],
             toolConfig={"tools": reg.get_schemas("bedrock-converse"),
                         "toolChoice": {"auto": {}}})
    clip, ogg, report, notes, measure = (b["toolResult"]["content"] for b in answer["content"])
    assert clip[0]["text"].startswith("a clip\n[the tool returned audio (audio/wav")
    assert "bedrock-converse" in ogg[0]["text"]
    assert report == [{"text": "the report"}, {"document": {
        "format": "pdf", "name": "report pdf", "source": {"bytes": PDF}}}]
    assert "hello notes" in notes[0]["text"] and "big.csv" in notes[0]["text"]
    # the structured result as a json block, not its text again
    assert measure == [{"json": WEATHER}]
