"""Registration, names, namespaces, enable/disable, metadata, events, thread safety."""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Annotated, Any

import pytest

from toolregistry import (
    ChangeEvent,
    Injected,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolRegistry,
    ToolTag,
)
from toolregistry.errors import (
    ToolNameCollisionError,
    ToolNotFoundError,
    ToolRegistrationError,
)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_register_forms(registry: ToolRegistry) -> None:
    @registry.register
    def one(x: int) -> int:
        return x

    @registry.register(name="renamed", namespace="ns", description="Custom.")
    def two(x: int) -> int:
        return x

    assert one(3) == 3  # the decorated function stays a function
    registry.register(add)
    registry.register(Tool.from_function(lambda y: y, name="lam"))
    assert registry.list_tools() == ["one", "ns-renamed", "add", "lam"]
    assert registry["ns-renamed"].description == "Custom."
    assert registry["ns-renamed"].namespace == "ns"
    assert registry["ns-renamed"].provenance.original_name == "renamed"
    assert "add" in registry and "nope" not in registry
    assert registry.get_tool("nope") is None
    with pytest.raises(KeyError, match=r"no tool named 'ad'.*did you mean 'add'"):
        registry["ad"]


def test_collisions_are_errors_unless_replace(registry: ToolRegistry) -> None:
    registry.register(add)
    with pytest.raises(ToolNameCollisionError, match=r"'add' is already registered.*replace=True"):
        registry.register(add)
    registry.register(add, replace=True)
    assert len(registry) == 1


def test_collision_created_by_normalisation(registry: ToolRegistry) -> None:
    registry.register(Tool(name="files.read", callable=lambda: 1))
    assert registry.list_tools() == ["files_read"]
    assert registry["files_read"].provenance.original_name == "files.read"
    with pytest.raises(ToolNameCollisionError, match="originally 'files/read'"):
        registry.register(Tool(name="files/read", callable=lambda: 1))


@pytest.mark.parametrize("name", ["a" * 100, "名前", "../../etc/passwd", "x y z", ""])
def test_unsafe_names_are_normalised(registry: ToolRegistry, name: str) -> None:
    registry.register(Tool(name=name or "x", callable=lambda: 1) if name else
                      Tool(name="", callable=lambda: 1))
    (registered,) = registry.list_tools()
    import re

    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", registered)


def test_register_from_class(registry: ToolRegistry) -> None:
    class Calculator:
        """A calculator."""

        factor = 10

        @staticmethod
        def add(a: float, b: float) -> float:
            """Add."""
            return a + b

        @classmethod
        def scale(cls, x: float) -> float:
            """Scale by the class factor."""
            return x * cls.factor

        def mul(self, a: float, b: float) -> float:
            """Multiply."""
            return a * b

        def _private(self) -> None:
            pass

    registry.register_from_class(Calculator, namespace=True)
    assert registry.list_tools() == ["Calculator-add", "Calculator-scale", "Calculator-mul"]
    assert registry.invoke("Calculator-mul", {"a": 2, "b": 3}).text == "6.0"
    assert registry.invoke("Calculator-scale", {"x": 2}).text == "20.0"
    assert registry["Calculator-add"].provenance.kind == "class"

    class NeedsArgs:
        def __init__(self, key: str) -> None:
            self.key = key

        def get(self) -> str:
            return self.key

    with pytest.raises(ToolRegistrationError, match="pass an instance"):
        registry.register_from_class(NeedsArgs)
    with pytest.raises(ToolRegistrationError, match="namespace must be a str, got 5"):
        registry.register_from_class(Calculator, namespace=5)  # type: ignore[arg-type]
    with pytest.raises(ToolRegistrationError, match="namespace must be a str, got 5"):
        registry.register(lambda: 1, name="one", namespace=5)  # type: ignore[arg-type]
    with pytest.raises(ToolRegistrationError, match="namespace must be a str, got True"):
        registry.register(lambda: 1, name="one", namespace=True)  # type: ignore[arg-type]
    registry.register(lambda: 1, name="one", namespace=False)  # type: ignore[arg-type]
    assert "one" in registry  # False: no namespace, as before
    registry.register_from_class(NeedsArgs("secret"), namespace="keys")
    assert registry.invoke("keys-get").text == "secret"


class Opaque:
    pass


def test_args_and_unsupported_annotations_are_clear_errors() -> None:
    def star(*values: int) -> int:
        return 0

    def kw(**options: int) -> int:
        return 0

    def opaque(thing: Opaque) -> None:
        pass

    with pytest.raises(ToolRegistrationError, match=r"\*values"):
        Tool.from_function(star)
    with pytest.raises(ToolRegistrationError, match=r"\*\*options"):
        Tool.from_function(kw)
    with pytest.raises(ToolRegistrationError, match=r"parameter 'thing'.*no JSON schema"):
        Tool.from_function(opaque)

    def unresolvable(thing: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ToolRegistrationError, match="cannot resolve the type hints"):
        Tool.from_function(unresolvable)


def test_injected_parameters_are_hidden_and_supplied(registry: ToolRegistry) -> None:
    seen: dict[str, Any] = {}

    def lookup(key: str, ctx: ToolContext, db: Annotated[dict[str, str], Injected()]) -> str:
        seen["call"] = ctx.call
        return db[key]

    registry.register(lookup)
    props = registry.get_schemas()[0]["function"]["parameters"]["properties"]
    assert list(props) == ["key"]
    result = registry.invoke("lookup", {"key": "k"}, context={"db": {"k": "v"}}, call_id="c1")
    assert result.text == "v"
    assert seen["call"].id == "c1"
    missing = registry.invoke("lookup", {"key": "k"})
    assert missing.is_error and "context value 'db'" in missing.text


def test_best_practices_and_metadata(registry: ToolRegistry) -> None:
    def search(query: str) -> str:
        """Search the docs.

        Args:
            query: What to look for.

        Best Practices:
            - Use precise terms.
            - Prefer English
              queries.
        """
        return query

    registry.register(search)
    tool = registry["search"]
    assert tool.metadata.best_practices == ("Use precise terms.", "Prefer English queries.")
    assert "Best Practices" not in tool.description
    assert tool.parameters["properties"]["query"]["description"] == "What to look for."
    with pytest.raises(ValueError, match="known tags"):
        ToolMetadata(tags={"nonsense"})
    assert ToolMetadata(tags=["network"]).tags == frozenset({ToolTag.NETWORK})


def test_provenance_and_schema_hash(registry: ToolRegistry) -> None:
    registry.register(add)
    tool = registry["add"]
    assert tool.provenance.kind == "function"
    assert tool.provenance.detail.endswith(":add")
    h = tool.schema_hash
    assert len(h) == 16 and h == Tool.from_function(add).schema_hash
    assert h != Tool.from_function(add, description="other").schema_hash


def test_enable_disable_tool_and_namespace(registry: ToolRegistry) -> None:
    registry.register(add, namespace="math")
    registry.register(add, name="plus", namespace="math")
    registry.register(add, name="solo")
    registry.disable("solo", reason="under repair")
    result = registry.invoke("solo", {"a": 1, "b": 2})
    assert result.error_kind == "disabled" and "under repair" in result.text
    assert registry.list_tools() == ["math-add", "math-plus"]
    registry.disable("math", reason="maintenance")
    assert registry.list_tools() == []
    assert registry.list_tools(include_disabled=True) == ["math-add", "math-plus", "solo"]
    registry.enable("math")
    registry.enable("solo")
    assert len(registry.get_schemas()) == 3
    with pytest.raises(ToolNotFoundError):
        registry.disable("ghost")


def test_every_change_emits_an_event(registry: ToolRegistry) -> None:
    events: list[ChangeEvent] = []
    unsubscribe = registry.on_change(events.append)
    registry.register(add)
    registry.register(add, name="other")
    registry.disable("add", reason="x")
    registry.enable("add")
    registry.update_tool_metadata("add", defer=True)
    registry.rename("other", "another")
    registry.set_namespace("another", "ns")
    second = ToolRegistry()
    second.register(add, name="merged")
    registry.merge(second)
    registry.unregister("merged")
    registry.set_setting("custom", 1)
    kinds = [e.kind for e in events]
    assert kinds == ["register", "register", "disable", "enable", "metadata", "rename",
                     "namespace", "register", "unregister", "setting"]
    assert events[5].details["renamed"] == {"other": "another"}
    assert events[6].names == ("ns-another",)
    unsubscribe()
    registry.unregister("add")
    assert len(events) == 10
    second.close()


def test_a_failing_callback_does_not_break_registration(registry: ToolRegistry) -> None:
    def boom(event: ChangeEvent) -> None:
        raise RuntimeError("subscriber bug")

    registry.on_change(boom)
    registry.register(add)
    assert "add" in registry


def test_update_tool_metadata_errors(registry: ToolRegistry) -> None:
    registry.register(add)
    with pytest.raises(ToolRegistrationError, match="ToolMetadata fields"):
        registry.update_tool_metadata("add", no_such_field=1)
    with pytest.raises(ToolNotFoundError):
        registry.update_tool_metadata("ghost", defer=True)


def test_deferred_summaries(registry: ToolRegistry) -> None:
    def compress_file(path: str) -> str:
        """Compress a file into a zip archive. Uses deflate."""
        return path

    registry.register(Tool.from_function(compress_file, metadata=ToolMetadata(defer=True)))
    registry.register(add)
    assert registry.get_deferred_summaries() == [
        {"name": "compress_file", "description": "Compress a file into a zip archive.",
         "namespace": None}]
    registry.disable("compress_file")
    assert registry.get_deferred_summaries() == []


def test_async_tools_and_sync_tools_side_by_side(registry: ToolRegistry) -> None:
    async def slow_add(a: int, b: int) -> int:
        await asyncio.sleep(0.01)
        return a + b

    registry.register(slow_add)
    assert registry["slow_add"].is_async
    assert registry.invoke("slow_add", {"a": 1, "b": 2}).text == "3"
    assert asyncio.run(registry.ainvoke("slow_add", {"a": 2, "b": 2})).text == "4"


def test_closed_registry_refuses_registration() -> None:
    reg = ToolRegistry()
    reg.close()
    reg.close()  # idempotent
    with pytest.raises(ToolRegistrationError, match="closed"):
        reg.register(add)


def test_thread_safety_under_concurrent_changes() -> None:
    reg = ToolRegistry(default_timeout=10)
    reg.register(add)
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(idx: int) -> None:
        try:
            for i in range(150):
                name = f"t{idx}_{i}"
                reg.register(add, name=name)
                if random.random() < 0.5:
                    reg.unregister(name)
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            while not stop.is_set():
                schemas = reg.get_schemas()
                names = [s["function"]["name"] for s in schemas]
                assert len(names) == len(set(names))
                assert reg.invoke("add", {"a": 1, "b": 1}).text == "2"
                reg.list_tools()
        except BaseException as exc:
            errors.append(exc)

    writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[0]
    names = reg.list_tools()
    assert len(names) == len(set(names))
    schema_names = [s["function"]["name"] for s in reg.get_schemas()]
    assert schema_names == names
    reg.close()


def test_null_for_an_optional_parameter_means_not_given(registry: ToolRegistry) -> None:
    def page(query: str, limit: int = 10, cursor: str | None = None) -> str:
        return f"{query}:{limit}:{cursor}"

    registry.register(page)
    registry.register(Tool(name="remote", callable=lambda **kw: kw, parameters={
        "type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["q"]}))
    # OpenAI strict mode makes optional parameters required and nullable: models send null.
    assert registry.invoke("page", {"query": "a", "limit": None, "cursor": None}).text == "a:10:None"
    assert registry.invoke("remote", {"q": "x", "n": None}).text == '{"q":"x"}'
    assert registry.invoke("remote", {"q": None}).error_kind == "invalid_arguments"


def test_aclose_awaits_async_closers_on_the_running_loop() -> None:
    seen: list[object] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def closer() -> None:
            seen.append(asyncio.get_running_loop() is loop)

        async with ToolRegistry() as reg:
            reg.add_closer(closer)
            reg.add_closer(lambda: seen.append("sync"))
        assert reg.closed

    asyncio.run(main())
    assert seen == ["sync", True]


def test_closers_run_last_added_first_once_and_one_failing_stops_none() -> None:
    seen: list[str] = []
    reg = ToolRegistry()
    reg.add_closer(lambda: seen.append("first"))
    reg.add_closer(lambda: 1 / 0)
    reg.add_closer(lambda: seen.append("last"))
    reg.close()
    reg.close()
    assert seen == ["last", "first"]


def test_a_closer_added_after_close_runs_at_once() -> None:
    """A plugin that opens something on a closed registry (a late call, a lazy client) must
    not leave it open: nothing would ever close it."""
    seen: list[str] = []
    reg = ToolRegistry()
    reg.close()
    reg.add_closer(lambda: seen.append("late"))
    assert seen == ["late"]
    reg.close()
    assert seen == ["late"]


def test_a_malformed_call_is_still_echoed_and_answered(registry: ToolRegistry) -> None:
    registry.register(add)
    calls = [{"id": "ok", "type": "function", "function": {"name": "add",
                                                            "arguments": '{"a": 1, "b": 2}'}},
             {"id": "bad", "type": "function", "function": {"name": "add", "arguments": "{oops"}}]
    results = registry.execute_tool_calls(calls)
    messages = registry.build_tool_call_messages(calls, results, api_format="openai-chat")
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["ok", "bad"]
    assert [m["tool_call_id"] for m in messages[1:]] == ["ok", "bad"]
    assert messages[2]["content"].startswith("Error: arguments for tool 'add' are not valid JSON")


def test_a_tool_with_an_async_twin_runs_each_on_its_own_path(registry: ToolRegistry) -> None:
    def ping(**kw: object) -> str:
        return "sync"

    async def aping(**kw: object) -> str:
        return "async"

    registry.register(Tool(name="ping", callable=ping, acallable=aping))
    registry.register(Tool(name="aonly", acallable=aping))
    assert registry.invoke("ping").text == "sync"
    assert asyncio.run(registry.ainvoke("ping")).text == "async"
    assert [r.text for r in registry.execute_tool_calls([{"name": "ping"}, {"name": "aonly"}])] \
        == ["sync", "async"]
    assert [r.text for r in asyncio.run(registry.aexecute_tool_calls([{"name": "ping"}]))] \
        == ["async"]
