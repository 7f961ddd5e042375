"""Call observers compiled into a tool's call plan: what the plan keeps is the observer
object, its methods read when the plan is compiled (``refresh_call_plans`` compiles the plans
again), and only the observers that watch a call hear of its end (with the token their start
gave, ``None`` when the start failed); an observer without ``call_started`` hears of every
end, in the plan's order among the others."""

from __future__ import annotations

import asyncio
from typing import Any

from toolregistry import ToolCall, ToolRegistry, ToolResult
from toolregistry.plugin import UNOBSERVED, hookimpl, refresh_call_plans


def test_an_observer_may_change_its_methods_while_a_plan_holds_it() -> None:
    """A log that starts tracking calls in flight later (the inspector's, when its page
    opens) turns its observer told of ends only into one with a start and has the plans
    compiled again: the plan follows."""
    told: list[tuple[str, Any, str | None]] = []

    class Quiet:
        call_started: Any = None

        def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
            told.append(("quiet", token, call.id))

    class Loud(Quiet):
        def call_started(self, call: ToolCall) -> Any:
            return "loud"

        def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
            told.append(("loud", token, call.id))

    observer = Quiet()

    class Plugin:
        @hookimpl
        def call_observer(self) -> Any:
            return observer

    reg = ToolRegistry(plugins=[Plugin()], load_plugins=[], default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}, call_id="a").value == 1
        observer.__class__ = Loud
        refresh_call_plans(reg)
        assert reg.invoke("one", {}, call_id="b").value == 1
        assert asyncio.run(reg.ainvoke("one", {}, call_id="c")).value == 1
        assert told == [("quiet", None, "a"), ("loud", "loud", "b"), ("loud", "loud", "c")]
    finally:
        reg.close()


def test_only_the_watching_observers_hear_of_the_end_in_order() -> None:
    told: list[tuple[str, Any]] = []

    def plugin(name: str, start: Any) -> Any:
        class Observer:
            def call_started(self, call: ToolCall) -> Any:
                if isinstance(start, Exception):
                    raise start
                return start

            def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
                told.append((name, token))

        class Plugin:
            @hookimpl
            def call_observer(self) -> Any:
                return Observer()

        Plugin.__name__ = name
        return Plugin()

    reg = ToolRegistry(plugins=[plugin("first", 1), plugin("sits_out", UNOBSERVED),
                                plugin("broken", RuntimeError("down")), plugin("last", 4)],
                       load_plugins=[], default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}).value == 1
        assert reg.invoke("one", {"x": 1}).outcome == "invalid_arguments"
        names = [name for name, _ in told]
        assert sorted(names[:3]) == sorted(names[3:]) == ["broken", "first", "last"]
        assert dict(told) == {"first": 1, "broken": None, "last": 4}
    finally:
        reg.close()


class _Ends:
    """Told of ends only."""

    call_started = None

    def __init__(self, name: str, told: list[tuple[str, Any, Any, str]]) -> None:
        self.name = name
        self.told = told

    def call_finished(self, call: ToolCall, result: ToolResult, token: Any) -> None:
        self.told.append((self.name, call.id, token, result.outcome))


class _Starts(_Ends):
    def __init__(self, name: str, told: list[tuple[str, Any, Any, str]], start: Any) -> None:
        super().__init__(name, told)
        self.start = start

    def call_started(self, call: ToolCall) -> Any:  # type: ignore[override]
        return self.start


def _plugin(name: str, observer: Any) -> Any:
    class Plugin:
        @hookimpl
        def call_observer(self) -> Any:
            return observer

    Plugin.__name__ = name
    return Plugin()


def test_an_observer_without_call_started_hears_every_end() -> None:
    """Ends only: every call's end with the token ``None``, those refused before running
    (arguments that cannot be read, invalid ones, a disabled tool, no such tool) too, on
    both APIs and in batches."""
    told: list[tuple[str, Any, Any, str]] = []
    reg = ToolRegistry(plugins=[_plugin("ends", _Ends("ends", told))], load_plugins=[],
                       default_timeout="none")

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    @reg.register
    async def aadd(a: int, b: int) -> int:
        return a + b

    @reg.register
    def off() -> int:
        return 0

    reg.disable("off")
    try:
        assert reg.invoke("add", {"a": 1, "b": 2}, call_id="ok").value == 3
        assert reg.invoke("add", "{not json", call_id="unread").outcome == "malformed_arguments"
        assert reg.invoke("add", {"a": "x", "b": 2}, call_id="bad").outcome == \
            "invalid_arguments"
        assert reg.invoke("off", {}, call_id="off").outcome == "disabled"
        assert reg.invoke("nope", {}, call_id="nope").outcome == "unknown_tool"
        assert asyncio.run(reg.ainvoke("aadd", {"a": 1, "b": 1}, call_id="async")).value == 2
        batch = reg.execute_tool_calls([{"id": "b1", "name": "add",
                                         "arguments": {"a": 1, "b": 1}},
                                        {"id": "b2", "name": "add", "arguments": {}}])
        assert [r.outcome for r in batch] == ["ok", "invalid_arguments"]
        assert sorted(told[:6]) == sorted([
            ("ends", "ok", None, "ok"), ("ends", "unread", None, "malformed_arguments"),
            ("ends", "bad", None, "invalid_arguments"), ("ends", "off", None, "disabled"),
            ("ends", "nope", None, "unknown_tool"), ("ends", "async", None, "ok")])
        assert sorted(told[6:]) == [("ends", "b1", None, "ok"),
                                    ("ends", "b2", None, "invalid_arguments")]
    finally:
        reg.close()


def test_a_mixed_plan_keeps_the_observers_order() -> None:
    """Observers told of ends only and observers that start hear of each end in the plan's
    order, whether the starting ones watch the call, sit it out or fail to start."""
    told: list[tuple[str, Any, Any, str]] = []
    watching = _Starts("watching", told, "w")
    observers = [_Ends("first", told), watching, _Ends("middle", told),
                 _Starts("quiet", told, UNOBSERVED), _Ends("last", told)]
    reg = ToolRegistry(plugins=[_plugin(o.name, o) for o in observers], load_plugins=[],
                       default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}, call_id="a").value == 1
        order = [name for name, *_ in told]
        assert sorted(order) == ["first", "last", "middle", "watching"]
        assert {n: t for n, _, t, _ in told} == {"first": None, "watching": "w",
                                                   "middle": None, "last": None}
        plan = [name for name, *_ in told]
        told.clear()
        watching.start = UNOBSERVED  # every starting one sits it out: the ends still hear
        assert reg.invoke("one", {}, call_id="b").value == 1
        assert [name for name, *_ in told] == [n for n in plan if n != "watching"]
        told.clear()
        watching.start = "again"
        assert reg.invoke("nope", {}, call_id="c").outcome == "unknown_tool"
        assert asyncio.run(reg.ainvoke("one", {}, call_id="d")).value == 1
        assert [name for name, *_ in told] == plan + plan  # a stand-in's observers too
    finally:
        reg.close()


def test_one_starting_observer_among_ends_keeps_the_order() -> None:
    told: list[tuple[str, Any, Any, str]] = []
    observers = [_Ends("end", told), _Starts("start", told, "s"), _Ends("tail", told)]
    reg = ToolRegistry(plugins=[_plugin(o.name, o) for o in observers], load_plugins=[],
                       default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}, call_id="a").value == 1
        plan = [(name, token) for name, _, token, _ in told]
        assert sorted(plan) == [("end", None), ("start", "s"), ("tail", None)]
        told.clear()
        assert reg.invoke("one", {}, call_id="b").value == 1
        assert [(name, token) for name, _, token, _ in told] == plan
    finally:
        reg.close()


class _Gated(_Starts):
    """Has a start, and a gate that says whether it wants the next call."""

    def __init__(self, name: str, told: list[tuple[str, Any, Any, str]], wants: Any) -> None:
        super().__init__(name, told, name)
        self.wants = wants
        self.asked = 0
        self.started = 0

    def wants_calls(self) -> bool:
        self.asked += 1
        if isinstance(self.wants, Exception):
            raise self.wants
        return bool(self.wants)

    def call_started(self, call: ToolCall) -> Any:  # type: ignore[override]
        self.started += 1
        return self.name if self.wants else UNOBSERVED


def test_a_gate_that_wants_no_call_skips_the_start_and_the_context() -> None:
    """``wants_calls`` is asked before each call, outside its context: while it says no, the
    observer is neither started nor told of the end (as if it had returned ``UNOBSERVED``),
    the tool runs in the caller's context as an unobserved call does, and the observers told
    of ends only still hear of every end. Once it says yes, the next call is started."""
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="caller")
    seen: list[str] = []
    told: list[tuple[str, Any, Any, str]] = []
    gated = _Gated("gated", told, False)
    reg = ToolRegistry(plugins=[_plugin("gated", gated), _plugin("ends", _Ends("ends", told))],
                       load_plugins=[], default_timeout="none")

    def one() -> int:
        seen.append(var.get())
        var.set("tool")  # an unobserved sync call runs in a copy of the caller's context
        return 1

    reg.register(one)
    try:
        assert reg.invoke("one", {}, call_id="a").value == 1
        assert asyncio.run(reg.ainvoke("one", {}, call_id="b")).value == 1
        assert reg.invoke("one", {"x": 1}, call_id="c").outcome == "invalid_arguments"
        assert (gated.asked, gated.started) == (3, 0)
        assert told == [("ends", "a", None, "ok"), ("ends", "b", None, "ok"),
                        ("ends", "c", None, "invalid_arguments")]
        told.clear()
        gated.wants = True
        assert reg.invoke("one", {}, call_id="d").value == 1
        assert sorted(t[:3] for t in told) == [("ends", "d", None), ("gated", "d", "gated")]
        assert gated.started == 1 and var.get() == "caller"
    finally:
        reg.close()


def test_a_gate_is_a_hint_observers_without_one_and_failures_open_it() -> None:
    """With another observer that has a start but no gate, every call starts both (the gated
    one decides in ``call_started``); a gate that raises is logged and counts as wanting the
    call; of two gates, one that wants the call starts both."""
    from structlog.testing import capture_logs

    told: list[tuple[str, Any, Any, str]] = []
    gated = _Gated("gated", told, False)
    plain = _Starts("plain", told, "plain")
    reg = ToolRegistry(plugins=[_plugin("gated", gated), _plugin("plain", plain)],
                       load_plugins=[], default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}, call_id="a").value == 1
        assert gated.started == 1 and [t[0] for t in told] == ["plain"]
    finally:
        reg.close()

    told.clear()
    broken = _Gated("broken", told, RuntimeError("gate down"))
    reg = ToolRegistry(plugins=[_plugin("broken", broken)], load_plugins=[],
                       default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        with capture_logs() as logs:
            assert reg.invoke("one", {}, call_id="b").value == 1
        failed = [e for e in logs if e["event"] == "observer.failed"]
        assert len(failed) == 1 and "wants_calls" in str(failed[0])
        assert broken.started == 1  # started: it decides for itself (here: UNOBSERVED)
    finally:
        reg.close()

    told.clear()
    no, yes = _Gated("no", told, False), _Gated("yes", told, True)
    reg = ToolRegistry(plugins=[_plugin("no", no), _plugin("yes", yes)], load_plugins=[],
                       default_timeout="none")
    reg.register(lambda: 1, name="one")
    try:
        assert reg.invoke("one", {}, call_id="c").value == 1
        assert (no.started, yes.started) == (1, 1) and [t[0] for t in told] == ["yes"]
        yes.wants = False
        assert reg.invoke("one", {}, call_id="d").value == 1
        assert (no.started, yes.started) == (1, 1)  # neither wanted it: neither started
        assert no.asked >= 1 and yes.asked == 2
    finally:
        reg.close()
