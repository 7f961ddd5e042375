"""Deadlines under load and hostile input (issue 16 items 1-3, 6): timeouts validated at every
entry, calls past their deadline never start, the main thread answered on time, empty ids."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from typing import Any

import pytest

from toolregistry import ToolMetadata, ToolRegistry

BAD_TIMEOUTS = [math.nan, math.inf, -math.inf, -1, 1e10, True, "5"]


def chat(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.fixture
def registry() -> Any:
    reg = ToolRegistry()

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    yield reg
    reg.close()


# --- item 1: timeouts checked where they enter ---------------------------------------------------

@pytest.mark.parametrize("bad", BAD_TIMEOUTS, ids=repr)
def test_a_bad_call_timeout_is_refused_on_every_api(registry: ToolRegistry, bad: Any) -> None:
    calls = [chat("add", {"a": 1, "b": 2}, "c")]
    checks = [
        lambda: registry.invoke("add", {"a": 1, "b": 2}, timeout=bad),
        lambda: registry.execute_tool_calls(calls, timeout=bad),
        lambda: asyncio.run(registry.ainvoke("add", {"a": 1, "b": 2}, timeout=bad)),
        lambda: asyncio.run(registry.aexecute_tool_calls(calls, timeout=bad)),
    ]
    for check in checks:
        with pytest.raises(ValueError, match=r"timeout= must be a finite number of seconds > 0"):
            check()


def test_a_bad_call_timeout_is_refused_off_the_main_thread(registry: ToolRegistry) -> None:
    # Before: OverflowError (timestamp out of range) from deep inside the call.
    errors: list[BaseException] = []

    def run() -> None:
        try:
            registry.invoke("add", {"a": 1, "b": 2}, timeout=math.inf)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], ValueError)
    assert "timeout=" in str(errors[0]) and "inf" in str(errors[0])


def test_good_call_timeouts_work(registry: ToolRegistry) -> None:
    for good in (None, 0, 0.5, 3, 31_536_000):
        assert registry.invoke("add", {"a": 1, "b": 2}, timeout=good).content == "3"
        (result,) = registry.execute_tool_calls([chat("add", {"a": 1, "b": 2}, "c")],
                                                timeout=good)
        assert result.content == "3"


@pytest.mark.parametrize("bad", [*BAD_TIMEOUTS, 0, -0.5], ids=repr)
def test_a_bad_tool_timeout_is_refused(bad: Any) -> None:
    # Before: inf and nan were accepted and broke every call off the main thread.
    with pytest.raises(ValueError, match=r"ToolMetadata.timeout must be a finite number"):
        ToolMetadata(timeout=bad)


# --- item 6: empty call ids ------------------------------------------------------------------------

def test_an_empty_call_id_gets_an_id_of_its_own(registry: ToolRegistry) -> None:
    calls = [chat("add", {"a": 1, "b": 2}, ""), chat("add", {"a": 2, "b": 2}, "")]
    for results in (registry.execute_tool_calls(calls),
                    asyncio.run(registry.aexecute_tool_calls(calls))):
        ids = [r.call_id for r in results]
        assert all(i and i.startswith("call_") for i in ids) and ids[0] != ids[1]
        messages = registry.build_tool_call_messages(calls, results)
        assert [c["id"] for c in messages[0]["tool_calls"]] == ids
        assert [m["tool_call_id"] for m in messages[1:]] == ids
    assert registry.invoke("add", {"a": 1, "b": 2}, call_id="").call_id is None  # as missing
