"""The provider examples run (``python examples/<file>.py``, exit 0) and their checks are real.

Each example is skipped only when its provider SDK is not installed.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

CASES = {
    "provider_openai_chat.py": "openai",
    "provider_openai_responses.py": "openai",
    "provider_anthropic.py": "anthropic",
    "provider_gemini.py": "google.genai",
    "provider_bedrock_converse.py": "botocore",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package ("google")
        return False


@functools.cache  # each example runs once per session (the SDK imports are slow)
def _run(path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-W", "error", str(path)], cwd=EXAMPLES.parent,
                          capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize("example", sorted(CASES))
def test_example_runs(example: str) -> None:
    sdk = CASES[example]
    if not _installed(sdk):
        pytest.skip(f"{example} needs the {sdk} SDK")
    proc = _run(EXAMPLES / example)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # The whole cycle: two parallel calls, a forced chart call, a final answer.
    assert "get_weather" in out and "Tokyo" in out and "Paris" in out
    assert "make_chart" in out
    assert "compress_file" not in out.split("--- ")[-1]  # deferred: never sent as a schema
    assert out.count("-> ") == 3


def test_openai_chat_example_prints_the_tool_prompt() -> None:
    if not _installed("openai"):
        pytest.skip("needs the openai SDK")
    out = _run(EXAMPLES / "provider_openai_chat.py").stdout
    assert "<tool_best_practices>" in out
    assert "- Use full city names, not abbreviations." in out
    assert f"- Current workspace: {EXAMPLES.parent}" in out
    assert "- compress_file: Compress a file into a zip archive." in out


def _replay_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_replay", EXAMPLES / "_replay.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_replay_rejects_what_the_provider_would() -> None:
    if not _installed("anthropic"):
        pytest.skip("needs the anthropic SDK")
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from pydantic import ValidationError

    validate = _replay_module().typed_dict_validator(MessageCreateParamsNonStreaming)
    good = {"model": "m", "max_tokens": 10, "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}
    validate(good)
    with pytest.raises(ValidationError):
        validate({**good, "tool_choice": {"type": "required"}})
    with pytest.raises(ValidationError):  # inside a lazily validated iterable
        validate({**good, "messages": [{"role": "user", "content": [
            {"type": "tool_result", "content": "no id"}]}]})


def test_replay_insists_on_answers() -> None:
    replay_mod = _replay_module()
    replay = replay_mod.Replay(
        [{"calls": ["a"]}, {"calls": []}],
        parse=lambda r: r, validate=lambda req: None,
        asked=lambda r: r["calls"], answered=lambda req: req.get("answers", []))
    replay(answers=[])
    with pytest.raises(RuntimeError, match=r"\['a'\] were not answered"):
        replay(answers=[])
    replay(answers=["a"])
    with pytest.raises(RuntimeError, match="no response left"):
        replay()
