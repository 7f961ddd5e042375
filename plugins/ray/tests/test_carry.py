"""The caller's context in a Ray task: the context variables an application registers for
carrying arrive with their values (each call its own caller's), in a context of that call
only; what cannot cross is refused naming it. (The otel plugin's trace context:
tests/integration/test_ray_context.py.)"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import toolregistry_ray
import toolregistry_ray._carry as carry_module
from toolregistry import ToolMetadata
from toolregistry.errors import ConfigError

from .conftest import MakeRegistry

ON_RAY = ToolMetadata(extra={"ray": True})
REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("request_id")
TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="no tenant")
NOT_CARRIED: contextvars.ContextVar[str] = contextvars.ContextVar("not_carried", default="-")


@pytest.fixture(autouse=True)
def fresh_registrations(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """carry() is process-wide: what a test registers goes away with it."""
    monkeypatch.setattr(carry_module, "_registered", ())
    yield


def test_registered_variables_reach_the_task_with_each_callers_value(
        make_registry: MakeRegistry) -> None:
    toolregistry_ray.carry(REQUEST_ID)  # the variable itself
    registry = make_registry(carry=[f"{__name__}:TENANT"])  # or its import path

    @registry.register(metadata=ON_RAY)
    def whose() -> dict[str, Any]:
        seen = {"request": REQUEST_ID.get("unset"), "tenant": TENANT.get(), "pid": os.getpid()}
        REQUEST_ID.set("changed in the task")  # stays in the task
        return seen

    answers: dict[str, Any] = {}

    def caller(request: str, tenant: str | None) -> None:
        REQUEST_ID.set(request)
        if tenant is not None:
            TENANT.set(tenant)
        answers[request] = registry.invoke("whose", {}, timeout=120).value

    threads = [threading.Thread(target=contextvars.Context().run, args=(caller, r, t))
               for r, t in (("req-1", "acme"), ("req-2", None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers["req-1"]["request"] == "req-1" and answers["req-1"]["tenant"] == "acme"
    assert answers["req-2"]["request"] == "req-2"
    assert answers["req-2"]["tenant"] == "no tenant"  # unset in that caller: the default
    assert answers["req-1"]["pid"] != os.getpid()
    # unset here: the task sees the variable unset (what an earlier task set did not stay)
    result = contextvars.Context().run(registry.invoke, "whose", {}, timeout=120)
    assert result.value["request"] == "unset", result.text

    # async tools too, and a batch: each call its caller's values
    @registry.register(metadata=ON_RAY)
    async def whose_async() -> str:
        return f"{REQUEST_ID.get('unset')}/{TENANT.get()}"

    def batch() -> list[Any]:
        REQUEST_ID.set("req-3")
        TENANT.set("globex")
        return registry.execute_tool_calls([{"id": "a", "name": "whose_async", "arguments": {}},
                                            {"id": "b", "name": "whose", "arguments": {}}])

    first, second = contextvars.Context().run(batch)
    assert first.value == "req-3/globex", first.text
    assert second.value["request"] == "req-3" and second.value["tenant"] == "globex"

    # a value that does not pickle: that call's error, naming the variable
    def locked() -> Any:
        REQUEST_ID.set(threading.Lock())
        return registry.invoke("whose", {}, timeout=120)

    failed = contextvars.Context().run(locked)
    assert failed.outcome == "execution"
    assert "the value of the carried context variable" in failed.text
    assert ":REQUEST_ID" in failed.text and "_thread.lock" in failed.text


def test_a_variable_not_carried_is_refused_at_registration(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    with pytest.raises(Exception, match=r"'reads_other' cannot run on Ray.*context variable.*"
                                        r"toolregistry_ray.carry\(\)"):
        @registry.register(metadata=ON_RAY)
        def reads_other() -> str:
            return NOT_CARRIED.get()


def test_what_cannot_be_carried_is_refused_naming_it(make_registry: MakeRegistry) -> None:
    with pytest.raises(ConfigError, match=r"is a function, not a contextvars\.ContextVar"):
        toolregistry_ray.carry("os.path:join")
    with pytest.raises(ConfigError, match=r"expected a contextvars\.ContextVar"):
        toolregistry_ray.carry(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"plugins.ray\] carry"):
        make_registry(carry=["no_such_module_here:var"])
