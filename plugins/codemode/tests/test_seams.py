"""Calls made by programs meet the kernel's seams as a model's calls do: authorization (deny,
pending approval, and the program's pause and resume at a held call) and call observers, whose
context the program's calls inherit."""

from __future__ import annotations

import contextvars
import json
from typing import Any

import pytest

from toolregistry.plugin import hookimpl
from toolregistry.types import Decision
from toolregistry_codemode import PausedRun

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
    assert held.pending and held.approval is not None and held.approval.tool == "list_cities"
    assert "waits for a person's approval of list_cities()" in held.text
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


class Person:
    """Holds every list_cities call until a person decides it (by call id, as an authorizing
    plugin without a queue of its own would when the same call comes again)."""

    def __init__(self) -> None:
        self.decided: dict[str, Decision] = {}
        self.asked: list[str] = []

    @hookimpl
    def authorize(self, tool: Any, call: Any) -> Decision | None:
        if tool.name != "list_cities":
            return None
        self.asked.append(call.id)
        return self.decided.get(call.id) or Decision.pending("cities need approval", rule="ask")


PROGRAM = ("w = await get_weather('Paris')\n"
           "print('before', w['temp'])\n"
           "try:\n"
           "    cities = await list_cities('asia')\n"
           "except PermissionError as e:\n"
           "    cities = ['refused: ' + str(e)]\n"
           "print('after', cities)\n"
           "len(cities)")


def _run_code(registry: Any, code: str, call_id: str = "call_1") -> Any:
    (result,) = registry.execute_tool_calls([{"id": call_id, "name": "run_code",
                                             "arguments": {"code": code}}])
    return result


def test_a_program_pauses_at_a_held_call_and_goes_on_after_approval(make_mode: MakeMode,
                                                                    seen: Seen) -> None:
    person = Person()
    registry, mode = make_mode({"plugins": [person]})
    held = _run_code(registry, PROGRAM)
    assert held.pending and held.error_kind == "approval_required", held.text
    assert held.call_id == "call_1" and held.name == "run_code"
    asked = held.approval
    assert asked.tool == "list_cities" and dict(asked.arguments) == {"region": "asia"}
    assert "Paused at line 4: the program waits" in held.text and "before 14" in held.text
    assert held.metadata["paused"] == {"approvals": [asked.id], "line": 4}
    assert [c["outcome"] for c in held.metadata["calls"]] == ["ok", "approval_required"]
    assert [name for name, _ in seen] == ["get_weather"]

    # The state as JSON (as an application keeps it); nobody decided yet: still pending and
    # the sandbox is not even loaded.
    state = json.loads(json.dumps(held.value.paused.to_dict()))
    again = mode.resume(state)
    assert again.pending and again.approval == asked and again.call_id == "call_1"
    assert [name for name, _ in seen] == ["get_weather"]

    person.decided[asked.call_id] = Decision.allow(rule="person")
    done = mode.resume(state)
    assert done.ok, done.text
    assert done.call_id == "call_1" and done.name == "run_code"
    assert done.text == "before 14\nafter ['Tokyo', 'Seoul']\nresult: 2"
    # get_weather ran once (before the pause), list_cities once (after the decision), under
    # the call id it was held with
    assert [name for name, _ in seen] == ["get_weather", "list_cities"]
    calls = done.metadata["calls"]
    assert [(c["tool"], c["outcome"]) for c in calls] == [("get_weather", "ok"),
                                                          ("list_cities", "ok")]
    assert calls[1]["call_id"] == asked.call_id == person.asked[-1]


def test_a_denied_held_call_raises_in_the_resumed_program(make_mode: MakeMode,
                                                          seen: Seen) -> None:
    person = Person()
    registry, mode = make_mode({"plugins": [person]})
    held = _run_code(registry, PROGRAM)
    person.decided[held.approval.call_id] = Decision.deny("not today", rule="person")
    done = mode.resume(held)  # the pending result itself
    assert done.ok, done.text
    assert 'after ["refused: list_cities() failed (denied): ' in done.text
    assert "not today" in done.text and done.text.endswith("result: 1")
    assert [name for name, _ in seen] == ["get_weather"]
    assert [c["outcome"] for c in done.metadata["calls"]] == ["ok", "denied"]


def test_gathered_held_calls_are_decided_one_by_one(make_mode: MakeMode, seen: Seen) -> None:
    person = Person()
    registry, mode = make_mode({"plugins": [person]})
    code = ("import asyncio\n"
            "a, w, b = await asyncio.gather(list_cities('asia'), get_weather('Oslo'),\n"
            "                               list_cities('europe'))\n"
            "a + b + [w['city']]")
    held = _run_code(registry, code)
    assert held.pending, held.text
    assert held.metadata["paused"]["line"] == 2  # the gather's await
    first, second = held.value.paused.held
    assert {first.arguments["region"], second.arguments["region"]} == {"asia", "europe"}
    assert held.metadata["paused"]["approvals"] == [first.approval.id, second.approval.id]
    assert [name for name, _ in seen] == ["get_weather"]  # ran alongside, before the pause

    person.decided[first.call_id] = Decision.allow()
    half = mode.resume(held.approval.id)  # an approval id of a program paused here
    assert half.pending and half.approval.id == second.approval.id, half.text
    person.decided[second.call_id] = Decision.allow()
    done = mode.resume(half)
    assert done.ok, done.text
    assert json.loads(done.text) == ["Tokyo", "Seoul", "Paris", "Oslo", "Oslo"]
    assert sorted(name for name, _ in seen) == ["get_weather", "list_cities", "list_cities"]


def test_bad_resume_input_is_a_clear_error(make_mode: MakeMode) -> None:
    _, mode = make_mode()
    with pytest.raises(LookupError, match="no program paused in this process"):
        mode.resume("apr_nothing")
    with pytest.raises(ValueError, match="not a paused code-mode program"):
        mode.resume({"format": "something else"})
    with pytest.raises(TypeError, match="resume\\(\\) takes"):
        mode.resume(42)
    with pytest.raises(ValueError, match=r"paused by pydantic-monty 0\.0\.1"):
        PausedRun.from_dict({"format": "toolregistry-codemode/paused-1", "monty": "0.0.1"})


def test_a_resumed_program_pauses_again_at_its_next_held_call(make_mode: MakeMode,
                                                              seen: Seen) -> None:
    person = Person()
    registry, mode = make_mode({"plugins": [person]})
    code = ("a = await list_cities('asia')\n"
            "w = await get_weather(a[0])\n"
            "b = await call_tool('list_cities', {'region': 'europe'})\n"
            "[a, w['temp'], b]")
    first = _run_code(registry, code)
    assert first.pending and dict(first.approval.arguments) == {"region": "asia"}
    person.decided[first.approval.call_id] = Decision.allow()
    second = mode.resume(first)
    assert second.pending, second.text
    assert dict(second.approval.arguments) == {"region": "europe"}
    assert "Paused at line 3" in second.text
    assert second.call_id == "call_1"
    assert [name for name, _ in seen] == ["list_cities", "get_weather"]
    person.decided[second.approval.call_id] = Decision.allow()
    done = mode.resume(second.value.paused.to_dict())
    assert done.ok, done.text
    assert json.loads(done.text) == [["Tokyo", "Seoul"], 21, ["Paris", "Oslo"]]
    assert [c["outcome"] for c in done.metadata["calls"]] == ["ok", "ok", "ok"]
    assert [name for name, _ in seen] == ["list_cities", "get_weather", "list_cities"]


def test_a_program_pauses_with_a_single_worker(make_mode: MakeMode, seen: Seen) -> None:
    # No second worker to look at the dump with: it is taken as it is (after a few seconds).
    person = Person()
    registry, mode = make_mode({"plugins": [person]}, pool_size=1)
    held = _run_code(registry, PROGRAM)
    assert held.pending, held.text
    person.decided[held.approval.call_id] = Decision.allow()
    done = mode.resume(held)
    assert done.ok, done.text
    assert done.text == "before 14\nafter ['Tokyo', 'Seoul']\nresult: 2"


def test_a_program_that_may_be_held_sleeps_as_any_other(make_mode: MakeMode) -> None:
    """With a plugin that authorizes calls the host steps the program (to pause it exactly at
    held calls) and answers its sleeps: gathered with calls, and a sleep past the program's
    budget stops it at once, even if it catches the TimeoutError."""
    registry, _ = make_mode({"plugins": [Guard()]}, wall_time=2.0)
    code = ("import asyncio\nimport time\ntime.sleep(0.01)\n"
            "r = await asyncio.gather(asyncio.sleep(0.2, 'a'), asyncio.sleep(0.2, 'b'),"
            " get_weather('Paris'))\n"
            "[r[0], r[1], r[2]['city']]")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert result.value.value == ["a", "b", "Paris"]
    late = registry.invoke("run_code", {"code": "import time\ntry:\n    time.sleep(3600)\n"
                                                "except TimeoutError:\n    pass\n1"})
    assert late.is_error and "sleep limit exceeded" in late.text, late.text
    assert late.value.duration < 1.5
