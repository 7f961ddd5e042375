"""The error contract (docs/errors.md): what a model sends wrong is returned as an error result,
what a program does wrong is raised; every exception and every error kind is documented."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from toolregistry import Image, ToolRegistry, errors
from toolregistry.errors import (
    ConfigError,
    MissingPluginError,
    ToolCallError,
    ToolNameCollisionError,
    ToolNotFoundError,
    ToolRegistrationError,
    ToolRegistryError,
    ToolRejected,
)
from toolregistry.plugin import hookimpl
from toolregistry.types import ErrorKind

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGE = (DOCS / "errors.md").read_text(encoding="utf-8")


def test_every_exception_is_documented_with_its_bases() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", PAGE, re.M))
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert name in rows, f"docs/errors.md has no row for {name}"
        assert rows[name].strip() == ", ".join(f"`{b.__name__}`" for b in cls.__bases__), name


def test_every_error_kind_is_documented() -> None:
    text = (DOCS / "execution.md").read_text(encoding="utf-8")
    table = text[text.index("## Errors the model can act on"):]
    for kind in get_args(ErrorKind):
        assert f"\n| `{kind}`" in table, f"docs/execution.md does not describe error_kind {kind!r}"


# --- returned ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", get_args(ErrorKind))
def test_a_tool_chooses_its_error_kind(registry: ToolRegistry, kind: Any) -> None:
    @registry.register
    def fails() -> None:
        raise ToolCallError("what the model reads", kind=kind)

    result = registry.invoke("fails", {})
    assert (result.is_error, result.error_kind, result.text) == (
        True, kind, "Error: what the model reads")


def test_a_tools_own_timeout_is_retried_and_a_timeout_kind_is_not() -> None:
    from toolregistry import RetryPolicy
    from toolregistry.errors import ToolTimeoutError
    from toolregistry.tool import ToolMetadata

    reg = ToolRegistry(retry=RetryPolicy(attempts=3, backoff=0.001))
    tries = {"own": 0, "kind": 0}

    def own() -> str:
        tries["own"] += 1
        if tries["own"] < 3:
            raise ToolTimeoutError("the upstream did not answer in 1 s")
        return "ok"

    def kind() -> str:
        tries["kind"] += 1
        raise ToolCallError("the upstream did not answer in 1 s", kind="timeout")

    try:
        idempotent = ToolMetadata(idempotent_hint=True)
        reg.register(own, metadata=idempotent)
        reg.register(kind, metadata=idempotent)
        assert reg.invoke("own", {}).value == "ok"
        result = reg.invoke("kind", {})
        assert (result.error_kind, result.text) == ("timeout",
                                                    "Error: the upstream did not answer in 1 s")
        assert tries == {"own": 3, "kind": 1}
    finally:
        reg.close()


def test_an_unknown_kind_is_refused_where_it_is_made(registry: ToolRegistry) -> None:
    with pytest.raises(ValueError, match=r"kind 'flaky' is not an error kind; use one of "
                                         r"unknown_tool, .*remote"):
        ToolCallError("x", kind="flaky")  # type: ignore[arg-type]

    @registry.register
    def fails() -> None:
        raise ToolCallError("x", kind="flaky")  # type: ignore[arg-type]

    result = registry.invoke("fails", {})
    assert result.error_kind == "execution"
    assert "kind 'flaky' is not an error kind" in result.text


def test_a_closed_registry_answers_with_error_results() -> None:
    reg = ToolRegistry()

    @reg.register
    def ping() -> str:
        return "pong"

    reg.close()
    results = reg.execute_tool_calls([{"name": "ping"}, {"name": "ping"}])
    assert [r.error_kind for r in results] == ["execution", "execution"]
    assert "is closed" in results[0].text
    assert reg.invoke("ping", {}).is_error
    with pytest.raises(ToolRegistrationError, match="is closed"):
        reg.register(lambda: 1, name="late")


def test_interrupts_propagate_from_the_callers_thread(registry: ToolRegistry) -> None:
    @registry.register
    def interrupted() -> None:
        raise KeyboardInterrupt

    @registry.register
    def ok() -> int:
        return 1

    with pytest.raises(KeyboardInterrupt):
        registry.invoke("interrupted", {})
    with pytest.raises(KeyboardInterrupt):
        registry.execute_tool_calls([{"name": "interrupted"}], timeout=0)
    # on a worker thread it cannot stop the program: that call's error, the batch goes on
    results = registry.execute_tool_calls([{"name": "interrupted"}, {"name": "ok"}])
    assert [r.error_kind for r in results] == ["execution", None]
    assert "KeyboardInterrupt" in results[0].text


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)], ids=repr)
@pytest.mark.parametrize("timeout", [None, 0])
def test_an_async_tool_cannot_stop_the_private_loop(registry: ToolRegistry, exc: BaseException,
                                                    timeout: float | None) -> None:
    @registry.register
    async def interrupted() -> None:
        raise exc

    @registry.register
    async def ok() -> int:
        return 1

    # the sync API runs async tools on the registry's own loop thread: before, the exception
    # left asyncio's loop and ended that thread, and every later async call waited in vain
    result = registry.invoke("interrupted", {}, timeout=timeout)
    assert result.error_kind == "execution"
    assert f"tool 'interrupted' failed: {type(exc).__name__}" in result.text
    results = registry.execute_tool_calls([{"name": "interrupted"}, {"name": "ok"}],
                                          timeout=timeout)
    assert [r.error_kind for r in results] == ["execution", None]
    assert registry.invoke("ok", {}, timeout=5).value == 1


def test_an_awaitable_awaited_in_a_helper_thread_reports_its_interrupt(
        registry: ToolRegistry) -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt

    @registry.register
    def returns_awaitable() -> Any:
        return interrupted()

    async def from_async_code() -> Any:
        # this thread runs a loop, so the awaitable is awaited on a helper thread
        return registry.invoke("returns_awaitable", {}, timeout=0)

    result = asyncio.run(from_async_code())
    assert result.error_kind == "execution"  # before: a success whose value was None
    assert "KeyboardInterrupt" in result.text


def test_an_async_tool_interrupts_the_callers_own_loop(registry: ToolRegistry) -> None:
    @registry.register
    async def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(registry.ainvoke("interrupted", {}))


# --- raised ------------------------------------------------------------------------------------

class _Refuser:
    @hookimpl
    def register(self, registry: ToolRegistry, tool: Any) -> None:
        if tool.name.startswith("secret"):
            raise ToolRejected(f"tool {tool.name!r}: secrets are not tools")


def _registry(**options: Any) -> ToolRegistry:
    reg = ToolRegistry(**options)

    @reg.register
    def add(a: int, b: int) -> int:
        return a + b

    @reg.register
    def sub(a: int, b: int) -> int:
        return a - b

    return reg


def _two_calls(reg: ToolRegistry) -> None:
    calls = [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "1"}]
    reg.build_tool_call_messages(calls, [], api_format="anthropic")


RAISED: list[tuple[str, type[BaseException], str, Callable[[ToolRegistry], Any]]] = [
    ("not callable", ToolRegistrationError, "not callable", lambda r: r.register(5)),
    ("name taken", ToolNameCollisionError, "already registered",
     lambda r: r.register(lambda a, b: 0, name="add")),
    ("rename onto a name", ToolNameCollisionError, "already registered",
     lambda r: r.rename("add", "sub")),
    ("unknown by index", ToolNotFoundError, "no tool named 'ad'", lambda r: r["ad"]),
    ("unregister", ToolNotFoundError, "no tool named 'ad'", lambda r: r.unregister("ad")),
    ("disable", ToolNotFoundError, "named 'ad'", lambda r: r.disable("ad")),
    ("enable", ToolNotFoundError, "named 'ad'", lambda r: r.enable("ad")),
    ("schema", ToolNotFoundError, "no tool named 'ad'", lambda r: r.get_tool_schema("ad")),
    ("tool choice", ToolNotFoundError, "no tool named 'ad'",
     lambda r: r.tool_choice("ad", "anthropic")),
    ("missing plugin", MissingPluginError, "install toolregistry-mcp",
     lambda r: r.register_from_mcp("server.py")),
    ("config", ConfigError, "default_timeout", lambda r: ToolRegistry(default_timeout=-1)),
    ("calls not a list", TypeError, "needs a list of tool calls",
     lambda r: r.execute_tool_calls("add(1, 2)")),
    ("format not a str", TypeError, "api_format must be a str", lambda r: r.get_schemas(3)),
    ("unknown format", ValueError, "unknown api_format 'claude-3'",
     lambda r: r.get_schemas("claude-3")),
    ("format lacks it", ValueError, "the 'mcp' format has no chat messages",
     lambda r: r.build_tool_call_messages([], [], api_format="mcp")),
    ("results do not match", ValueError, "1 calls but 0 results", _two_calls),
    ("no such choice", ValueError, "no tool choice 'none'",
     lambda r: r.tool_choice("none", "bedrock-converse")),
    ("image sources", ValueError, "exactly one of", lambda r: Image()),
]


@pytest.mark.parametrize("case", RAISED, ids=[c[0] for c in RAISED])
def test_what_a_program_does_wrong_is_raised(
        case: tuple[str, type[BaseException], str, Callable[[ToolRegistry], Any]]) -> None:
    _, exc_type, message, action = case
    reg = _registry()
    try:
        with pytest.raises(exc_type, match=re.escape(message)):
            action(reg)
    finally:
        reg.close()


def test_a_register_hook_refusal_reaches_the_caller() -> None:
    reg = ToolRegistry(plugins=[_Refuser()])
    try:
        with pytest.raises(ToolRejected, match="secrets are not tools"):
            reg.register(lambda: "x", name="secret_key")
        assert "secret_key" not in reg
    finally:
        reg.close()


def test_the_registrys_own_errors_share_a_base() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, ToolRegistryError) or name == "ToolCancelled", name
    assert not issubclass(errors.ToolCancelled, Exception)  # `except Exception` cannot eat it


def test_kernel_errors_outside_errors_module_derive_from_the_base() -> None:
    from toolregistry._calls import CallParseError
    from toolregistry.formats._table import FormatConflict

    assert issubclass(CallParseError, ToolRegistryError) and issubclass(CallParseError, ValueError)
    assert issubclass(FormatConflict, ToolRegistryError) and issubclass(FormatConflict, ValueError)
    for name in ("CallParseError", "FormatConflict", "ApprovalError", "SpoolError"):
        assert name in (errors.__doc__ or ""), f"{name} missing from errors.py's tree"
        assert f"| `{name}` |" in PAGE, f"{name} missing from docs/errors.md"


def test_a_wrong_keyword_names_toolregistry_not_its_parts() -> None:
    """The registry is assembled from private parts; Python's own "unexpected keyword"
    error names the method's class, which must be the one users know."""
    registry = ToolRegistry()
    with pytest.raises(TypeError) as info:
        registry.get_schemas(sort=True)  # type: ignore[call-arg]
    assert str(info.value).startswith("ToolRegistry.get_schemas() got an unexpected keyword "
                                      "argument 'sort'"), info.value
    for name in ("get_tool", "unregister", "register_from_mcp", "close", "invoke"):
        assert getattr(ToolRegistry, name).__qualname__ == f"ToolRegistry.{name}"
