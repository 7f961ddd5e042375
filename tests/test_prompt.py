"""render_tool_prompt: best practices, prompt injections, deferred summaries (kernel only)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
import structlog

from toolregistry import Tool, ToolMetadata, ToolRegistry
from toolregistry.decorators import tool
from toolregistry.prompt import render_best_practices, render_deferred_summaries, render_tool_prompt


@contextmanager
def captured_events(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Rendered toolregistry events (stdlib fallback, or structlog when the app configured it)."""
    if structlog.is_configured():
        with structlog.testing.capture_logs() as logs:
            out: list[str] = []
            yield out
            out.extend(" ".join(f"{k}={v!r}" for k, v in e.items()) for e in logs)
        return
    with caplog.at_level(logging.WARNING, logger="toolregistry"):
        out = []
        yield out
        out.extend(r.getMessage() for r in caplog.records if r.name == "toolregistry")


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry("prompt-test")
    yield reg
    reg.close()


def _manual(name: str, description: str = "", **meta: Any) -> Tool:
    return Tool(name=name, description=description, callable=lambda: "ok",
                metadata=ToolMetadata(**meta))


def test_empty_registry_renders_nothing(registry: ToolRegistry) -> None:
    assert render_tool_prompt(registry) == ""
    registry.register(_manual("plain", "Does a thing."))
    assert render_tool_prompt(registry, {"x": 1}) == ""


def test_docstring_best_practices_render_as_block(registry: ToolRegistry) -> None:
    @registry.register
    def get_weather(city: str) -> str:
        """Get current weather for a city.

        Args:
            city: City name.

        Best Practices:
            - Use full city names, not abbreviations.
            - Default to celsius unless the user
              specifies otherwise.
        """
        return city

    assert render_tool_prompt(registry) == (
        "<tool_best_practices>\n"
        "get_weather:\n"
        "- Use full city names, not abbreviations.\n"
        "- Default to celsius unless the user specifies otherwise.\n"
        "</tool_best_practices>"
    )


def test_order_is_by_name_not_registration() -> None:
    a = _manual("alpha", best_practices=["Alpha first."])
    b = _manual("beta", best_practices=["Beta second."])
    one, two = ToolRegistry("one"), ToolRegistry("two")
    try:
        one.register(b)
        one.register(a)
        two.register(a)
        two.register(b)
        text = render_tool_prompt(one)
        assert text == render_tool_prompt(two)
        assert text.index("alpha:") < text.index("beta:")
        assert render_tool_prompt(one) == text  # stable across calls
    finally:
        one.close()
        two.close()


def test_duplicates_and_description_repeats_are_dropped(registry: ToolRegistry) -> None:
    registry.register(_manual(
        "search_docs", "Search the documentation. Returns matching pages.",
        best_practices=[
            "Prefer exact product names.",
            "prefer `exact` product names",          # same words: a duplicate
            "Search the documentation.",             # only the description again
            "returns matching pages",                # a run of the description's words
            "",                                      # nothing
            "Quote error messages verbatim.",
        ]))
    registry.register(_manual(
        "search_web", "Search the web.",
        best_practices=["Prefer exact product names.", "Use for news only."]))
    text = render_best_practices(registry)
    assert text.count("Prefer exact product names.") == 1
    assert "- Quote error messages verbatim." in text
    assert "Search the documentation." not in text
    assert "returns matching pages" not in text.lower()
    assert "search_web:\n- Use for news only." in text


def test_tool_with_only_repeated_practices_gets_no_section(registry: ToolRegistry) -> None:
    registry.register(_manual("echo", "Echo the text back.", best_practices=["Echo the text back"]))
    assert render_tool_prompt(registry) == ""


def test_disabled_and_deferred_tools_are_left_out(registry: ToolRegistry) -> None:
    registry.register(_manual("on", "On.", best_practices=["Visible practice."]))
    registry.register(_manual("off", "Off.", best_practices=["Disabled practice."]))
    registry.register(_manual("later", "Compress a file. Slowly.", defer=True,
                              best_practices=["Deferred practice."]))
    registry.disable("off", reason="maintenance")
    text = render_tool_prompt(registry)
    assert "Visible practice." in text
    assert "Disabled practice." not in text
    assert "Deferred practice." not in text
    assert "<deferred_tools>" in text
    assert "- later: Compress a file." in text
    assert "Slowly" not in text  # first sentence only
    registry.enable("off")
    assert "Disabled practice." in render_tool_prompt(registry)


def test_deferred_summaries_block(registry: ToolRegistry) -> None:
    registry.register(_manual("zip_file", "Compress a file into a zip archive.", defer=True))
    registry.register(_manual("backup", "Back up a folder. Incremental.", defer=True))
    block = render_deferred_summaries(registry)
    assert block.startswith("<deferred_tools>\n")
    assert block.endswith("\n</deferred_tools>")
    assert block.index("- backup: Back up a folder.") < block.index("- zip_file:")
    # Without the discovery plugin there is no discover_tools to point at.
    assert "discover_tools" not in block
    assert render_tool_prompt(registry, include_deferred_summaries=False) == ""
    assert render_tool_prompt(registry) == block


def test_deferred_summaries_mention_discover_tools_when_registered(
        registry: ToolRegistry) -> None:
    # A stand-in with the discovery plugin's tool name: the text follows what is registered.
    registry.register(_manual("discover_tools", "Find tools."))
    registry.register(_manual("zip_file", "Compress a file.", defer=True))
    assert "Call discover_tools with a tool's name" in render_tool_prompt(registry)
    registry.disable("discover_tools")
    assert "discover_tools" not in render_tool_prompt(registry)


def test_prompt_injection_builder_gets_the_context(registry: ToolRegistry) -> None:
    seen: list[Mapping[str, Any]] = []

    def builder(ctx: Mapping[str, Any]) -> str:
        seen.append(ctx)
        return f"Current workspace: {ctx.get('workspace', '/')}"

    registry.register(_manual("list_files", "List files.", prompt_injection_builder=builder,
                              best_practices=["Use relative paths."]))
    text = render_tool_prompt(registry, {"workspace": "/srv/app"})
    assert text == ("<tool_best_practices>\nlist_files:\n- Use relative paths.\n"
                    "- Current workspace: /srv/app\n</tool_best_practices>")
    assert seen == [{"workspace": "/srv/app"}]
    assert "Current workspace: /" in render_tool_prompt(registry)  # no context: empty mapping
    assert seen[-1] == {}


def test_multiline_injection_keeps_its_layout(registry: ToolRegistry) -> None:
    registry.register(_manual("deploy", "Deploy.",
                              prompt_injection_builder=lambda ctx: "Targets:\n  - staging\n"))
    assert "deploy:\nTargets:\n  - staging\n</tool_best_practices>" in render_tool_prompt(registry)


def test_builder_returning_nothing_adds_nothing(registry: ToolRegistry) -> None:
    registry.register(_manual("a", "A.", prompt_injection_builder=lambda ctx: None))
    registry.register(_manual("b", "B.", prompt_injection_builder=lambda ctx: "   "))
    assert render_tool_prompt(registry) == ""


def test_failing_builder_is_reported_not_fatal(registry: ToolRegistry,
                                                caplog: pytest.LogCaptureFixture) -> None:
    def broken(ctx: Mapping[str, Any]) -> str:
        raise KeyError("workspace")

    registry.register(_manual("broken_tool", "Broken.", prompt_injection_builder=broken,
                              best_practices=["Still shown."]))
    registry.register(_manual("fine", "Fine.", prompt_injection_builder=lambda c: "Fine text."))
    with captured_events(caplog) as events:
        text = render_tool_prompt(registry, {})
    assert "broken_tool:\n- Still shown." in text
    assert "- Fine text." in text
    failed = [e for e in events if "prompt.builder_failed" in e]
    assert len(failed) == 1
    assert "broken_tool" in failed[0]
    assert "KeyError" in failed[0]
    assert "note=" in failed[0]


def test_async_or_non_text_builder_is_reported(registry: ToolRegistry,
                                               caplog: pytest.LogCaptureFixture) -> None:
    async def async_builder(ctx: Mapping[str, Any]) -> str:
        return "never"

    registry.register(_manual("a", "A.", prompt_injection_builder=async_builder))
    registry.register(_manual("n", "N.", prompt_injection_builder=lambda c: 42))
    with captured_events(caplog) as events:
        # filterwarnings=error: an un-awaited coroutine would fail the test here.
        assert render_tool_prompt(registry) == ""
    failed = [e for e in events if "prompt.builder_failed" in e]
    assert len(failed) == 2
    assert any("awaitable" in e for e in failed)
    assert any("returned int" in e for e in failed)


def test_names_limit_the_practices(registry: ToolRegistry) -> None:
    registry.register(_manual("one", "One.", best_practices=["First tool rule."]))
    registry.register(_manual("two", "Two.", best_practices=["Second tool rule."]))
    registry.register(_manual("hidden", "Hidden.", defer=True))
    text = render_tool_prompt(registry, names=["two"])
    assert "Second tool rule." in text
    assert "First tool rule." not in text
    assert "- hidden: Hidden." in text


def test_decorator_tools_in_the_prompt(registry: ToolRegistry) -> None:
    @tool(best_practices=["Explicit wins over the docstring."])
    def explicit(x: int) -> int:
        """Explicit.

        Best Practices:
            - From the docstring.
        """
        return x

    registry.register(explicit)
    text = render_tool_prompt(registry)
    assert "Explicit wins over the docstring." in text
    assert "From the docstring." not in text


def test_metadata_update_changes_the_prompt(registry: ToolRegistry) -> None:
    registry.register(_manual("t", "T.", best_practices=["Old rule."]))
    assert "Old rule." in render_tool_prompt(registry)
    registry.update_tool_metadata("t", best_practices=["New rule."])
    text = render_tool_prompt(registry)
    assert "New rule." in text
    assert "Old rule." not in text
    registry.update_tool_metadata("t", defer=True)
    assert render_tool_prompt(registry) == "<deferred_tools>\nThese tools exist but are not in " \
        "your tool list yet.\n- t: T.\n</deferred_tools>"


def test_cjk_practices_dedupe(registry: ToolRegistry) -> None:
    registry.register(_manual("tianqi", "查询天气。使用城市全名。",
                              best_practices=["使用城市全名", "默认使用摄氏度。", "默认使用摄氏度"]))
    text = render_tool_prompt(registry)
    assert "使用城市全名" not in text.split("tianqi:")[1]
    assert text.count("默认使用摄氏度") == 1
