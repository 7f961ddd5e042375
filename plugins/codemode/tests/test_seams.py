"""Calls made by programs meet the kernel's seams as a model's calls do: authorization (deny,
pending approval) and call observers, whose context the program's calls inherit."""

from __future__ import annotations

import contextvars
from typing import Any

from toolregistry.plugin import hookimpl
from toolregistry.types import Decision

MakeMode = Any
Seen = list[tuple[str, dict[str, Any]]]


class Guard:
    """No weather for Oslo; list_cities needs a person's approval."""

    @hookimpl
    def authorize(self, tool: Any, call: Any) -> Decision | None:
        if tool.name == "get_weather" and call.arguments.get("city") == "Oslo":
            return Decision.deny("Oslo is off limits", rule="no-oslo")
        if tool.name == "list_cities":
            return Decision.pending("listing cities needs approval", rule="ask")
        return None


def test_denied_and_pending_calls_raise_in_the_program_and_do_not_run(make_mode: MakeMode,
                                                                       seen: Seen) -> None:
    registry, _ = make_mode({"plugins": [Guard()]})
    code = ("out = []\n"
            "for city in ['Paris', 'Oslo']:\n"
            "    try:\n"
            "        out.append((await get_weather(city))['city'])\n"
            "    except PermissionError as e:\n"
            "        out.append(str(e))\n"
            "out")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert "Paris" in result.text and "get_weather() failed (denied)" in result.text
    assert "Oslo is off limits" in result.text
    assert [c["outcome"] for c in result.metadata["calls"]] == ["ok", "denied"]
    assert seen == [("get_weather", {"city": "Paris", "unit": "c"})]

    held = registry.invoke("run_code", {"code": "await list_cities('asia')"})
    assert held.is_error and held.metadata["error"]["kind"] == "tool"
    assert "list_cities() failed (approval_required)" in held.text
    assert held.metadata["calls"][0]["outcome"] == "approval_required"
    assert [name for name, _ in seen] == ["get_weather"]


span: contextvars.ContextVar[str] = contextvars.ContextVar("span", default="-")


class Tracing:
    """Each call gets a span; a call's parent is whatever span was current when it started."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    @hookimpl
    def call_observer(self, tool: Any) -> Any:
        events = self.events

        class Observer:
            def call_started(self, call: Any) -> Any:
                parent = span.get()
                span.set(f"span:{call.id}")
                return parent

            def call_finished(self, call: Any, result: Any, token: Any) -> None:
                events.append((tool.name, str(call.id), token, result.outcome))

        return Observer()


def test_program_calls_are_observed_as_children_of_the_run_code_call(make_mode: MakeMode
                                                                     ) -> None:
    tracing = Tracing()
    registry, _ = make_mode({"plugins": [tracing]})
    code = ("import asyncio\n"
            "await asyncio.gather(get_weather('Paris'), list_cities('europe'))\n"
            "try:\n    await explode('x')\nexcept RuntimeError:\n    pass\n")
    results = registry.execute_tool_calls([{"id": "outer", "type": "function", "function": {
        "name": "run_code", "arguments": {"code": code}}}])
    assert results[0].ok, results[0].text
    by_tool = {name: (call_id, parent, outcome) for name, call_id, parent, outcome
               in tracing.events}
    assert by_tool["run_code"] == ("outer", "-", "ok")
    for name, outcome in (("get_weather", "ok"), ("list_cities", "ok"),
                          ("explode", "execution")):
        call_id, parent, seen_outcome = by_tool[name]
        assert parent == "span:outer", (name, parent)
        assert call_id.startswith("code") and seen_outcome == outcome
