"""bedrock-converse: requests and answer messages checked against botocore's own service model
of ``bedrock-runtime`` ``Converse``: its parameter validator (what boto3 runs before it sends a
request, offline), then the model's constraints that validator leaves to the service (enums,
patterns, maximum lengths) and the service's refusal of blank text blocks."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest

from toolregistry import Image, ToolCall, ToolRegistry
from toolregistry.errors import ToolCallError

from ._corpus import CORPUS

botocore_session = pytest.importorskip("botocore.session")
from botocore.validate import ParamValidator  # noqa: E402

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
CONVERSE = botocore_session.get_session().get_service_model("bedrock-runtime").operation_model(
    "Converse").input_shape
# Blocks whose ``text`` the service refuses when blank ("The text field in the ContentBlock
# object at messages.N.content.M is blank").
TEXT_BLOCKS = {"ContentBlock", "ToolResultContentBlock", "SystemContentBlock"}


def _service_rules(value: Any, shape: Any, where: str, errors: list[str]) -> None:
    """What the service checks beyond botocore's validator, read from the same shapes."""
    kind, meta = shape.type_name, shape.metadata
    if kind == "structure" and isinstance(value, dict) and not meta.get("document"):
        if shape.name in TEXT_BLOCKS and isinstance(value.get("text"), str) and \
                not value["text"].strip():
            errors.append(f"{where}.text is blank")
        for key, item in value.items():
            if key in shape.members:
                _service_rules(item, shape.members[key], f"{where}.{key}", errors)
    elif kind == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{where} has {len(value)} items, more than {meta['max']}")
        for i, item in enumerate(value):
            _service_rules(item, shape.member, f"{where}[{i}]", errors)
    elif kind == "blob" and isinstance(value, bytes):
        if len(value) < meta.get("min", 0):
            errors.append(f"{where} has {len(value)} bytes, fewer than {meta['min']}")
    elif kind == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            errors.append(f"{where}={value!r} is not one of {shape.enum}")
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{where} is longer than {meta['max']}")
        # the service matches a pattern against the whole value
        if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
            errors.append(f"{where}={value!r} does not match {meta['pattern']!r}")


def converse(**request: Any) -> None:
    """Raise AssertionError naming what ``client.converse(**request)`` would be refused for."""
    report = ParamValidator().validate(request, CONVERSE)
    assert not report.has_errors(), report.generate_report()
    errors: list[str] = []
    _service_rules(request, CONVERSE, "request", errors)
    assert not errors, "\n".join(errors)


def test_the_checks_catch_mistakes() -> None:
    good = {"modelId": MODEL, "messages": [{"role": "user", "content": [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}], "status": "error"}}]}]}
    converse(**good)
    for bad in (
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}], "status": "failed"}},
        {"toolResult": {"content": [{"text": "ok"}]}},
        {"toolResult": {"toolUseId": "t1", "content": [{"txt": "ok"}]}},
        {"toolResult": {"toolUseId": "t1", "content": [{"text": " "}]}},
        {"toolResult": {"toolUseId": "t 1", "content": [{"text": "ok"}]}},
        {"toolUse": {"toolUseId": "t1", "name": "n"}},
        {"toolUse": {"toolUseId": "t1", "name": "a.b", "input": {}}},
        {"image": {"format": "bmp", "source": {"bytes": PNG}}},
        {"image": {"format": "png", "source": {"bytes": b""}}},
    ):
        with pytest.raises(AssertionError):
            converse(modelId=MODEL, messages=[{"role": "user", "content": [bad]}])
    with pytest.raises(AssertionError):
        converse(modelId=MODEL, messages=[], toolConfig={"tools": [], "toolChoice": {"none": {}}})
    with pytest.raises(AssertionError):
        converse(modelId=MODEL, messages=[], toolConfig={"tools": [{"toolSpec": {
            "name": "x" * 65, "inputSchema": {"json": {"type": "object"}}}}]})


# --- the request: toolConfig ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus_registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry(default_timeout=5)
    for fn in CORPUS:
        reg.register(fn)
    yield reg
    reg.close()


@pytest.mark.parametrize("choice", ["auto", "required", "f12"])
def test_tool_config_of_the_whole_corpus(corpus_registry: ToolRegistry, choice: str) -> None:
    tools = corpus_registry.get_schemas("bedrock-converse")
    assert len(tools) == len(corpus_registry) and all(set(t) == {"toolSpec"} for t in tools)
    converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}],
             toolConfig={"tools": tools, "toolChoice": corpus_registry.tool_choice(
                 choice, "bedrock-converse")})


def test_the_envelope_and_tool_choice() -> None:
    reg = ToolRegistry()

    def ping(host: str) -> str:
        return host

    reg.register(ping)
    (tool,) = reg.get_schemas("converse")
    assert tool == {"toolSpec": {"name": "ping", "inputSchema": {"json": {
        "type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}}}}
    assert reg.tool_choice("auto", "bedrock-converse") == {"auto": {}}
    assert reg.tool_choice("required", "bedrock-converse") == {"any": {}}
    assert reg.tool_choice("ping", "bedrock-converse") == {"tool": {"name": "ping"}}
    with pytest.raises(ValueError, match="no tool choice 'none'"):
        reg.tool_choice("none", "bedrock-converse")
    reg.close()


# --- a turn: toolUse blocks in, toolResult blocks out ----------------------------------------------

@pytest.fixture
def reg(registry: ToolRegistry) -> ToolRegistry:
    @registry.register
    def weather(city: str) -> dict[str, Any]:
        """Weather."""
        return {"city": city, "temp": 21}

    @registry.register
    def chart(title: str) -> tuple[str, Image]:
        """Chart."""
        return f"chart of {title}", Image.from_bytes(PNG)

    @registry.register
    def photos() -> list[Image]:
        """Photos in S3 and on the web."""
        return [Image.from_url("s3://bucket/p.jpg"), Image.from_url("https://example.test/p.jpg")]

    @registry.register
    def broken() -> str:
        """Fails."""
        raise ToolCallError("service unavailable", kind="remote")

    return registry


def _response() -> dict[str, Any]:
    """``client.converse(...)`` as boto3 returns it: plain dicts."""
    return {"output": {"message": {"role": "assistant", "content": [
        {"text": "Let me look."},
        {"toolUse": {"toolUseId": "tooluse_0", "name": "weather", "input": {"city": "東京"}}},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "chart", "input": {"title": "sales"}}},
        {"toolUse": {"toolUseId": "tooluse_2", "name": "photos", "input": {}}},
        {"toolUse": {"toolUseId": "tooluse_3", "name": "broken", "input": {}}},
    ]}}, "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 20, "totalTokens": 30}}


def test_a_turn(reg: ToolRegistry) -> None:
    message = _response()["output"]["message"]
    calls = [block for block in message["content"] if "toolUse" in block]
    results = reg.execute_tool_calls(calls)
    assert [r.call_id for r in results] == [f"tooluse_{i}" for i in range(4)]
    assert [c.format for c in reg.parse_tool_calls(calls)] == ["bedrock-converse"] * 4
    echo, answer = reg.build_tool_call_messages(calls, results, api_format="bedrock-converse")
    question = {"role": "user", "content": [{"text": "Weather in Tokyo, a chart, photos?"}]}
    tools = reg.get_schemas("bedrock-converse")
    for assistant in (message, echo):  # the model's own message, or the registry's echo
        converse(modelId=MODEL, messages=[question, assistant, answer],
                 toolConfig={"tools": tools, "toolChoice": {"auto": {}}})
    assert [b["toolUse"]["toolUseId"] for b in echo["content"]] == [
        f"tooluse_{i}" for i in range(4)]
    blocks = [b["toolResult"] for b in answer["content"]]
    assert [b["toolUseId"] for b in blocks] == [f"tooluse_{i}" for i in range(4)]
    assert [b.get("status") for b in blocks] == [None, None, None, "error"]
    assert blocks[0]["content"] == [{"text": '{"city":"東京","temp":21}'}]
    assert blocks[1]["content"] == [{"text": "chart of sales"},
                                    {"image": {"format": "png", "source": {"bytes": PNG}}}]
    assert blocks[2]["content"][0] == {"image": {"format": "jpeg", "source": {
        "s3Location": {"uri": "s3://bucket/p.jpg"}}}}
    assert "not by URL" in blocks[2]["content"][1]["text"]  # Converse takes no web URLs
    assert blocks[3]["content"][0]["text"].startswith("Error: ")


def test_calls_as_inner_blocks_and_without_ids(reg: ToolRegistry) -> None:
    inner = {"toolUseId": "tooluse_9", "name": "weather", "input": {"city": "Oslo"}}
    (call,) = reg.parse_tool_calls([inner])
    assert (call.format, call.id, call.arguments) == ("bedrock-converse", "tooluse_9",
                                                      {"city": "Oslo"})
    calls = [ToolCall(name="weather", arguments={"city": "Oslo"})]  # no id: the result's id
    results = reg.execute_tool_calls(calls)
    echo, answer = reg.build_tool_call_messages(calls, results, api_format="bedrock-converse")
    converse(modelId=MODEL, messages=[echo, answer])
    assert echo["content"][0]["toolUse"]["toolUseId"] == results[0].call_id == \
        answer["content"][0]["toolResult"]["toolUseId"]


def test_malformed_and_server_tool_uses(reg: ToolRegistry) -> None:
    bad = {"toolUse": {"toolUseId": "t1", "name": "weather", "input": "not an object"}}
    server = {"toolUse": {"toolUseId": "t2", "name": "web_search", "input": {},
                          "type": "server_tool_use"}}
    results = reg.execute_tool_calls([bad, server])
    assert results[0].error_kind == "malformed_arguments"
    assert results[1].error_kind == "malformed_call"
    assert "a Bedrock Converse toolUse block" in results[1].text
    messages = reg.build_tool_call_messages([bad], results[:1], api_format="bedrock-converse")
    converse(modelId=MODEL, messages=messages)
    assert messages[1]["content"][0]["toolResult"]["status"] == "error"


def test_empty_results_are_never_blank(registry: ToolRegistry) -> None:
    @registry.register
    def nothing() -> None:
        return None

    @registry.register
    def blank() -> str:
        return "  \n"

    @registry.register
    def picture() -> tuple[str, Image]:
        return "", Image.from_bytes(PNG)

    @registry.register
    def empty_picture() -> Image:
        return Image.from_bytes(b"")

    calls = [{"toolUse": {"toolUseId": f"t{i}", "name": n, "input": {}}}
             for i, n in enumerate(["nothing", "blank", "picture", "empty_picture"])]
    results = registry.execute_tool_calls(calls)
    messages = registry.build_tool_call_messages(calls, results, api_format="bedrock-converse")
    converse(modelId=MODEL, messages=messages)
    contents = [b["toolResult"]["content"] for b in messages[1]["content"]]
    assert contents[0] == [{"text": "null"}]
    assert contents[1] == [{"text": "(the tool returned no output)"}]
    assert contents[2] == [{"image": {"format": "png", "source": {"bytes": PNG}}}]
    assert contents[3] == [{"text": "[the tool returned an empty image]"}]


def test_streamed_calls_and_error_statuses(reg: ToolRegistry) -> None:
    # converse_stream: contentBlockStart carries toolUseId and name, the contentBlockDelta
    # events the input as pieces of a JSON string; an application joins them into this.
    streamed = {"toolUse": {"toolUseId": "tooluse_s", "name": "weather",
                            "input": '{"city": "Lima"}'}}
    unknown = {"toolUse": {"toolUseId": "tooluse_u", "name": "no_such_tool", "input": {}}}
    invalid = {"toolUse": {"toolUseId": "tooluse_v", "name": "weather", "input": {"town": 1}}}
    calls = [streamed, unknown, invalid]
    results = reg.execute_tool_calls(calls)
    assert results[0].value == {"city": "Lima", "temp": 21}
    assert [r.error_kind for r in results] == [None, "unknown_tool", "invalid_arguments"]
    echo, answer = reg.build_tool_call_messages(calls, results, api_format="bedrock-converse")
    converse(modelId=MODEL, messages=[echo, answer], toolConfig={
        "tools": reg.get_schemas("bedrock-converse"), "toolChoice": {"any": {}}})
    assert echo["content"][0]["toolUse"]["input"] == {"city": "Lima"}  # an object, not a string
    assert [b["toolResult"].get("status") for b in answer["content"]] == [None, "error", "error"]


def test_the_format_in_the_table(registry: ToolRegistry) -> None:
    fmt = registry.formats.get("Bedrock_Converse")
    assert fmt is registry.formats.get("converse")
    assert fmt.features == {"schemas", "calls", "messages", "tool_choice"}
    # toolSpec.strict is not OpenAI's strict mode: strict=True changes nothing here
    assert not fmt.supports_strict

    @registry.register
    def ping(host: str, port: int = 80) -> str:
        return host

    assert registry.get_schemas("bedrock-converse", strict=True) == registry.get_schemas(
        "bedrock-converse")


def test_the_plugin_format_of_hooks_md(registry_factory: Any) -> None:
    import re
    import types
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
               if "BedrockConverseJson" in b]
    plugin = types.ModuleType("toolregistry_bedrock_json")
    exec(compile(code, "hooks.md", "exec"), plugin.__dict__)
    reg = registry_factory(plugins=[plugin])
    assert "bedrock-converse-json" in reg.formats.names("messages")
    assert reg.formats.get("converse").name == "bedrock-converse"

    @reg.register
    def weather(city: str) -> dict[str, Any]:
        return {"city": city, "temp": 21}

    @reg.register
    def motto() -> str:
        return "carpe diem"

    calls = [{"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Oslo"}}},
             {"toolUse": {"toolUseId": "t2", "name": "motto", "input": {}}},
             {"toolUse": {"toolUseId": "t3", "name": "weather", "input": {}}}]
    results = reg.execute_tool_calls(calls)
    echo, answer = reg.build_tool_call_messages(calls, results, api_format="bedrock-converse-json")
    converse(modelId=MODEL, messages=[echo, answer])
    contents = [b["toolResult"]["content"] for b in answer["content"]]
    assert contents[0] == [{"json": {"city": "Oslo", "temp": 21}}]
    assert contents[1] == [{"text": "carpe diem"}]
    assert contents[2][0]["text"].startswith("Error: ")
    assert [c.format for c in reg.parse_tool_calls(calls)] == ["bedrock-converse"] * 3
