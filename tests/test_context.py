"""The context seams: operations announced to observers, what outgoing requests carry, an
incoming request's context continued around the calls it makes, and context on log events.

Exercised through real plugin objects added to the registry's plugin manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from toolregistry import ToolRegistry
from toolregistry import _context as context_module
from toolregistry._log import log
from toolregistry.plugin import (
    add_carrier,
    add_log_context,
    continuing,
    hookimpl,
    operation,
    outgoing_context,
)

REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("request", default=None)


class Recorder:
    """An operation observer recording what it hears, in order."""

    def __init__(self, label: str, events: list[tuple[Any, ...]]) -> None:
        self.label = label
        self.events = events

    def operation_started(self, name: str, attributes: dict[str, Any]) -> Any:
        self.events.append((self.label, "start", name, dict(attributes)))
        return f"{self.label}-token"

    def operation_finished(self, name: str, attributes: dict[str, Any],
                           error: BaseException | None, token: Any) -> None:
        self.events.append((self.label, "end", name, dict(attributes),
                            type(error).__name__ if error else None, token))


class OperationPlugin:
    def __init__(self, label: str, events: list[tuple[Any, ...]]) -> None:
        self.observer = Recorder(label, events)
        self.asked = 0

    @hookimpl
    def operation_observer(self, registry: ToolRegistry) -> Recorder:
        self.asked += 1
        return self.observer


class BrokenObserverPlugin:
    @hookimpl
    def operation_observer(self, registry: ToolRegistry) -> Any:
        class Broken:
            def operation_started(self, name: str, attributes: dict[str, Any]) -> Any:
                raise RuntimeError("observer down")

            def operation_finished(self, *args: Any) -> None:
                raise RuntimeError("observer down")

        return Broken()


def test_hook_operation_observer_sees_start_end_and_attributes() -> None:
    events: list[tuple[Any, ...]] = []

    class Second(OperationPlugin):  # plugins are named after their class
        pass

    first, second = OperationPlugin("a", events), Second("b", events)
    reg = ToolRegistry(plugins=[first, second])
    with operation(reg, "source.load", {"url": "http://x"}) as attrs:
        attrs["tools"] = 3
    with pytest.raises(ValueError, match="bad spec"), operation(reg, "source.load"):
        raise ValueError("bad spec")
    starts = [e for e in events if e[1] == "start"]
    ends = [e for e in events if e[1] == "end"]
    assert [e[0] for e in starts[:2]] == ["b", "a"] or [e[0] for e in starts[:2]] == ["a", "b"]
    order = [e[0] for e in starts[:2]]
    assert [e[0] for e in ends[:2]] == order[::-1]  # ended in reverse order of starting
    assert starts[0][3] == {"url": "http://x"}
    assert ends[0][3] == {"url": "http://x", "tools": 3} and ends[0][4] is None
    assert ends[0][5].endswith("-token")
    assert ends[2][4] == "ValueError" and ends[3][4] == "ValueError"
    # asked once per registry, not per operation
    assert first.asked == 1
    with operation(reg, "again"):
        pass
    assert first.asked == 1


def test_hook_operation_observer_failures_never_fail_the_operation() -> None:
    events: list[tuple[Any, ...]] = []
    reg = ToolRegistry(plugins=[BrokenObserverPlugin(), OperationPlugin("ok", events)])
    with capture_logs() as logs:
        for _ in range(3):
            with operation(reg, "x") as attrs:
                attrs["n"] = 1
    assert [e[1] for e in events] == ["start", "end"] * 3
    failed = [e for e in logs if e["event"] == "observer.failed"]
    assert len(failed) == 2  # once per observer and method
    assert {e["method"] for e in failed} == {"operation_started", "operation_finished"}


def test_operation_without_observers_costs_a_check() -> None:
    reg = ToolRegistry()
    with operation(reg, "x", {"a": 1}) as attrs:
        attrs["b"] = 2
    assert attrs == {"a": 1, "b": 2}
    assert reg._operation_observers() == ()


class IncomingPlugin:
    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    @hookimpl
    def incoming_context(self, registry: ToolRegistry, carrier: Mapping[str, str]
                         ) -> contextlib.AbstractContextManager[None]:
        self.seen.append(dict(carrier))

        @contextlib.contextmanager
        def manager() -> Iterator[None]:
            token = REQUEST.set(carrier.get("request-id"))
            try:
                yield
            finally:
                REQUEST.reset(token)

        return manager()


def test_hook_incoming_context_continues_around_sync_and_async_calls() -> None:
    plugin = IncomingPlugin()
    reg = ToolRegistry(plugins=[plugin])

    def who() -> str:
        """The request this call belongs to, and the thread it ran on."""
        return f"{REQUEST.get()}@{threading.current_thread().name}"

    async def awho() -> str:
        """The request, from an async tool."""
        return str(REQUEST.get())

    reg.register(who)
    reg.register(awho)
    with continuing(reg, {"request-id": "r-1"}):
        sync = reg.invoke("who", {})
        threaded = reg.execute_tool_calls([
            {"id": "1", "type": "function", "function": {"name": "who", "arguments": "{}"}},
            {"id": "2", "type": "function", "function": {"name": "who", "arguments": "{}"}}])
    assert sync.text.startswith("r-1@")
    assert all(r.text.startswith("r-1@") for r in threaded)
    assert REQUEST.get() is None  # reset after the block

    async def serve() -> str:
        with continuing(reg, {"request-id": "r-2"}):
            result = await reg.ainvoke("awho", {})
        return result.text

    assert asyncio.run(serve()) == "r-2"
    assert plugin.seen == [{"request-id": "r-1"}, {"request-id": "r-2"}]
    # no carrier: the plugins are not asked
    with continuing(reg, None), continuing(reg, {}):
        assert reg.invoke("who", {}).text.startswith("None@")
    assert len(plugin.seen) == 2


def test_hook_incoming_context_failure_serves_the_request_anyway() -> None:
    class Broken:
        @hookimpl
        def incoming_context(self, registry: ToolRegistry, carrier: Mapping[str, str]) -> Any:
            raise RuntimeError("bad propagator")

    reg = ToolRegistry(plugins=[Broken()])
    reg.register(lambda: "ran", name="ping")
    with capture_logs() as logs, continuing(reg, {"traceparent": "garbage"}):
        assert reg.invoke("ping", {}).text == "ran"
    assert any(e["event"] == "hook.failed" and e.get("hook") == "incoming_context"
               for e in logs)


@pytest.fixture
def clean_carriers() -> Iterator[None]:
    saved = context_module._carriers
    saved_log = log.__class__.__module__
    from toolregistry import _log

    saved_context = _log._context
    try:
        yield
    finally:
        context_module._carriers = saved
        _log._context = saved_context
        assert saved_log


def test_outgoing_context_from_carriers_in_the_calling_context(clean_carriers: None) -> None:
    assert outgoing_context() == {}

    def request_id(carrier: MutableMapping[str, str]) -> None:
        value = REQUEST.get()
        if value:
            carrier["x-request-id"] = value

    def broken(carrier: MutableMapping[str, str]) -> None:
        raise KeyError("nope")

    add_carrier(request_id)
    add_carrier(request_id)  # idempotent
    add_carrier(broken)
    reg = ToolRegistry()

    def remote() -> dict[str, str]:
        """What a request made by this tool would carry."""
        return outgoing_context()

    reg.register(remote)
    token = REQUEST.set("abc")
    try:
        with capture_logs() as logs:
            result = reg.invoke("remote", {})
            again = reg.execute_tool_calls([{"id": "1", "type": "function", "function": {
                "name": "remote", "arguments": "{}"}}])[0]
    finally:
        REQUEST.reset(token)
    assert result.value == {"x-request-id": "abc"} and again.value == {"x-request-id": "abc"}
    assert len([e for e in logs if e["event"] == "carrier.failed"]) == 1  # logged once


def test_log_events_carry_the_log_context(clean_carriers: None) -> None:
    def ids() -> Mapping[str, str]:
        value = REQUEST.get()
        return {"request_id": value} if value else {}

    def broken() -> Mapping[str, str]:
        raise RuntimeError("no")

    add_log_context(ids)
    add_log_context(broken)
    with capture_logs() as logs:
        log.warning("thing.happened", n=1)
        token = REQUEST.set("r-9")
        try:
            log.warning("thing.happened", n=2, request_id="explicit wins")
            log.warning("thing.happened", n=3)
        finally:
            REQUEST.reset(token)
    assert [e.get("request_id") for e in logs] == [None, "explicit wins", "r-9"]
