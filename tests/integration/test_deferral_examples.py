"""The deferral examples run on their recorded turns, and the recordings are what the
provider SDKs' types build (``examples/recorded/build_recordings.py``)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.test_examples_providers import EXAMPLES, _installed, _run

# example -> (its SDK, lines its output must have)
CASES = {
    "deferral_anthropic.py": ("anthropic", [
        "tools sent: [('get_order', False), ('tool_search_tool_bm25', False), "
        "('refund_order', True), ('track_package', True), ('change_address', True), "
        "('cancel_subscription', True)]",
        "model output: ['text', 'server_tool_use', 'tool_search_tool_result', 'tool_use']",
        "found by the provider's search: ['refund_order']",
        "echoed: ['server_tool_use', 'tool_search_tool_result', 'tool_use']",
    ]),
    "deferral_openai_responses.py": ("openai", [
        "tools sent: [('get_order', False), ('tool_search', False), ('refund_order', True), "
        "('track_package', True), ('change_address', True), ('cancel_subscription', True)]",
        "model output: ['tool_search_call', 'tool_search_output', 'function_call']",
        "found by the provider's search: ['refund_order']",
        "sent back: ['tool_search_call', 'tool_search_output', 'function_call', "
        "'function_call_output']",
    ]),
    "deferral_openai_chat.py": ("openai", [
        "tools sent: ['discover_tools', 'get_order']",
        "found by discover_tools: ['refund_order']",
        "tools sent: ['discover_tools', 'get_order', 'refund_order']",
    ]),
    "deferral_gemini.py": ("google.genai", [
        "declarations sent: ['discover_tools', 'get_order']",
        "found by discover_tools: ['refund_order']",
        "declarations sent: ['discover_tools', 'get_order', 'refund_order']",
    ]),
}


@pytest.mark.parametrize("example", sorted(CASES))
def test_deferral_example_runs(example: str) -> None:
    sdk, lines = CASES[example]
    if not _installed(sdk):
        pytest.skip(f"{example} needs the {sdk} SDK")
    proc = _run(EXAMPLES / example)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    for line in lines:
        assert line in out, (line, proc.stdout)
    # the refund ran once, after the search found it, and the model answered
    assert sum("refund_order({" in line and "-> refunded 34.00 EUR" in line
               for line in out) == 1, proc.stdout
    assert "Done: 34.00 EUR" in out[-1], proc.stdout


def _builder() -> ModuleType:
    path = EXAMPLES / "recorded" / "build_recordings.py"
    spec = importlib.util.spec_from_file_location("build_recordings", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["deferral_anthropic", "deferral_openai_responses",
                                  "deferral_openai_chat", "deferral_gemini"])
def test_recordings_are_what_the_sdk_types_build(name: str) -> None:
    sdk = CASES[f"{name}.py"][0]
    if not _installed(sdk):
        pytest.skip(f"needs the {sdk} SDK")
    builder = _builder()
    recorded = (EXAMPLES / "recorded" / f"{name}.json").read_text(encoding="utf-8")
    assert recorded == builder.text(builder.BUILDERS[name]()), (
        f"examples/recorded/{name}.json is stale: run "
        "python examples/recorded/build_recordings.py")
