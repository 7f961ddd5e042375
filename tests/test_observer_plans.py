"""Call observers compiled into a tool's call plan: what the plan keeps is the observer
object, its methods looked up per call, and only the observers that watch a call hear of its
end (with the token their start gave, ``None`` when the start failed)."""

from __future__ import annotations

import asyncio
from typing import Any

from toolregistry import ToolCall, ToolRegistry, ToolResult
from toolregistry.plugin import UNOBSERVED, hookimpl


def test_an_observer_may_change_its_methods_while_a_plan_holds_it() -> None:
    """A log that starts tracking calls in flight later (the inspector's, when its page
    opens) turns its observer into another class: the compiled plan follows."""
    told: list[tuple[str, Any, str | None]] = []

    class Quiet:
        def call_started(self, call: ToolCall) -> Any:
            return UNOBSERVED

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
        assert reg.invoke("one", {}, call_id="b").value == 1
        assert asyncio.run(reg.ainvoke("one", {}, call_id="c")).value == 1
        assert told == [("loud", "loud", "b"), ("loud", "loud", "c")]
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
