"""LangChain tools through a real registry: loading, calls, context, errors, artifacts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.tools import (
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    ToolException,
    tool,
)
from pydantic import BaseModel, field_validator

from toolregistry import ToolMetadata, ToolRegistry
from toolregistry.errors import ToolNameCollisionError, ToolRegistrationError


@tool
def multiply(a: float, b: float) -> float:
    """计算两个数的乘积,适合精确乘法运算。"""
    return a * b


@tool
def whoami(
    greeting: str,
    user_id: Annotated[str, InjectedToolArg],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> str:
    """Greet the current user."""
    return f"{greeting} {user_id} [{tool_call_id}]"


@tool(response_format="content_and_artifact")
def top_rows(n: int) -> tuple[str, list[dict[str, int]]]:
    """Return the first n rows of a table."""
    rows = [{"id": i, "value": i * i} for i in range(n)]
    return f"{n} rows fetched", rows


def _fragile(x: int) -> str:
    """Fail for odd x."""
    if x % 2:
        raise ToolException(f"x={x} is odd")
    return "even"


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(default_timeout=10)


def lc_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def test_register_from_langchain_registers_with_namespace(registry: ToolRegistry) -> None:
    tools = registry.register_from_langchain([multiply, whoami], namespace="lc")
    assert [t.name for t in tools] == ["lc-multiply", "lc-whoami"]
    assert registry.list_tools() == ["lc-multiply", "lc-whoami"]
    schema = registry.get_tool_schema("lc-whoami")["function"]
    assert schema["parameters"]["properties"] == {"greeting": {"type": "string"}}
    assert registry["lc-multiply"].provenance.original_name == "multiply"
    assert registry["lc-multiply"].provenance.kind == "langchain"
    with pytest.raises(ToolNameCollisionError):
        registry.register_from_langchain(multiply, namespace="lc")
    assert registry.register_from_langchain(multiply, namespace="lc", replace=True)


def test_async_loader(registry: ToolRegistry) -> None:
    tools = asyncio.run(registry.aregister_from_langchain(multiply))
    assert [t.name for t in tools] == ["multiply"]


def test_invoke_validates_with_the_json_schema(registry: ToolRegistry) -> None:
    registry.register_from_langchain(multiply)
    assert registry.invoke("multiply", {"a": 3, "b": 4}).content == "12.0"
    bad = registry.invoke("multiply", {"a": "three", "b": 4})
    assert bad.is_error and bad.error_kind == "invalid_arguments"
    assert "a" in bad.content


def test_execute_tool_calls_takes_langchain_tool_calls(registry: ToolRegistry) -> None:
    registry.register_from_langchain([multiply, whoami])
    results = registry.execute_tool_calls(
        [lc_call("multiply", {"a": 2, "b": 5}, "call_a"),
         lc_call("whoami", {"greeting": "hello"}, "call_b")],
        context={"user_id": "u-7"},
    )
    assert [r.call_id for r in results] == ["call_a", "call_b"]
    assert results[0].content == "10.0"
    # InjectedToolCallId receives the id the model gave the call.
    assert results[1].content == "hello u-7 [call_b]"


def test_missing_context_value_is_an_error_result(registry: ToolRegistry) -> None:
    registry.register_from_langchain(whoami)
    result = registry.execute_tool_calls([lc_call("whoami", {"greeting": "hi"}, "c1")])[0]
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "user_id" in result.content and "context=" in result.content


def test_artifact_is_kept_for_the_application(registry: ToolRegistry) -> None:
    registry.register_from_langchain(top_rows)
    result = registry.invoke("top_rows", {"n": 3}, call_id="c1")
    assert result.content == "3 rows fetched"
    assert result.artifact == [{"id": 0, "value": 0}, {"id": 1, "value": 1},
                               {"id": 2, "value": 4}]
    messages = registry.build_tool_call_messages(
        [lc_call("top_rows", {"n": 3}, "c1")], [result])
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "3 rows fetched"}


def test_tool_errors_become_error_results(registry: ToolRegistry) -> None:
    handled = StructuredTool.from_function(_fragile, name="handled", handle_tool_error=True)
    unhandled = StructuredTool.from_function(_fragile, name="unhandled")

    def boom(x: int) -> str:
        """Crash."""
        raise RuntimeError("disk on fire")

    crashing = StructuredTool.from_function(boom)
    registry.register_from_langchain([handled, unhandled, crashing])
    ok, err, err2, crash = registry.execute_tool_calls([
        lc_call("handled", {"x": 2}, "1"), lc_call("handled", {"x": 3}, "2"),
        lc_call("unhandled", {"x": 5}, "3"), lc_call("boom", {"x": 1}, "4"),
    ])
    assert ok.ok and ok.content == "even"
    assert err.is_error and err.error_kind == "execution" and err.content == "x=3 is odd"
    assert err2.is_error and err2.error_kind == "execution" and "x=5 is odd" in err2.content
    assert crash.is_error and crash.error_kind == "execution"
    assert "disk on fire" in crash.content


def test_async_tools_run_on_both_apis(registry: ToolRegistry) -> None:
    async def lookup(key: str) -> dict[str, str]:
        """Look a key up."""
        await asyncio.sleep(0.01)
        return {"key": key, "value": key.upper()}

    registry.register_from_langchain(StructuredTool.from_function(coroutine=lookup))
    assert registry.invoke("lookup", {"key": "k"}).content == '{"key": "k", "value": "K"}'

    async def main() -> list[str]:
        results = await registry.aexecute_tool_calls(
            [lc_call("lookup", {"key": str(i)}, f"c{i}") for i in range(5)])
        return [r.call_id or "" for r in results]

    assert asyncio.run(main()) == [f"c{i}" for i in range(5)]


# --- offline langchain-community tools ------------------------------------------------------

def test_file_management_toolkit_in_a_temporary_directory(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    from langchain_community.agent_toolkits import FileManagementToolkit

    toolkit = FileManagementToolkit(root_dir=str(tmp_path))
    tools = registry.register_from_langchain(toolkit, namespace="fs")
    assert {t.name for t in tools} >= {"fs-write_file", "fs-read_file", "fs-list_directory"}
    results = registry.execute_tool_calls([
        lc_call("fs-write_file", {"file_path": "notes.txt", "text": "你好, registry"}, "w1"),
    ])
    assert results[0].ok, results[0].content
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "你好, registry"
    read, listing, escape = registry.execute_tool_calls([
        lc_call("fs-read_file", {"file_path": "notes.txt"}, "r1"),
        lc_call("fs-list_directory", {}, "l1"),
        lc_call("fs-read_file", {"file_path": "../../etc/passwd"}, "r2"),
    ])
    assert read.content == "你好, registry"
    assert "notes.txt" in listing.content
    # The toolkit refuses paths outside its root: its own answer reaches the model.
    assert "Access denied" in escape.content


def test_json_toolkit(registry: ToolRegistry) -> None:
    from langchain_community.agent_toolkits import JsonToolkit
    from langchain_community.tools.json.tool import JsonSpec

    spec = JsonSpec(dict_={"user": {"name": "Ada", "langs": ["py", "ml"]}})
    registry.register_from_langchain(JsonToolkit(spec=spec))
    keys = registry.invoke("json_spec_list_keys", {"tool_input": "data"})
    assert keys.content == "['user']"
    value = registry.invoke("json_spec_get_value", {"tool_input": 'data["user"]["name"]'})
    assert value.content == "Ada"


def test_sleep_tool_times_out(registry: ToolRegistry) -> None:
    from langchain_community.tools import SleepTool

    registry.register_from_langchain(SleepTool())
    assert not registry["sleep"].is_async  # invoke() on a worker thread by default
    fast = registry.invoke("sleep", {"sleep_time": 0})
    assert fast.ok and fast.content == "Agent slept for 0 seconds."
    slow = registry.invoke("sleep", {"sleep_time": 2}, timeout=0.3)
    assert slow.is_error and slow.error_kind == "timeout"
    assert slow.duration < 1.5


def test_run_async_uses_the_native_coroutine_and_cancels_on_timeout(
    registry: ToolRegistry,
) -> None:
    from langchain_community.tools import SleepTool

    registry.register_from_langchain(SleepTool(), run_async=True)
    assert registry["sleep"].is_async
    started = time.perf_counter()
    slow = registry.invoke("sleep", {"sleep_time": 5}, timeout=0.3)
    assert slow.error_kind == "timeout"

    async def main() -> list[Any]:
        return await registry.aexecute_tool_calls(
            [lc_call("sleep", {"sleep_time": 5}, f"s{i}") for i in range(3)], timeout=0.3)

    results = asyncio.run(main())
    assert [r.error_kind for r in results] == ["timeout"] * 3
    # asyncio.sleep was cancelled each time: nothing waited for the 5 s sleeps.
    assert time.perf_counter() - started < 3

    async def only_async(q: str) -> str:
        """Async only."""
        return q

    with pytest.raises(ToolRegistrationError, match="run_async=False"):
        registry.register_from_langchain(
            StructuredTool.from_function(coroutine=only_async), run_async=False)


def test_plugin_is_found_and_imports_langchain_lazily() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from toolregistry import ToolRegistry\n"
        "r = ToolRegistry()\n"
        "rec = {p['name']: p for p in r.plugins.report()}['langchain']\n"
        "assert rec['status'] == 'loaded' and rec['hooks'] == ['loaders'], rec\n"
        "assert rec['distribution'] == 'toolregistry-langchain', rec\n"
        "import toolregistry_langchain\n"
        "assert 'langchain_core' not in sys.modules, 'langchain_core imported too early'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


class PositiveInput(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _positive(cls, value: int) -> int:
        # A rule the JSON schema cannot carry: only LangChain's pydantic validation sees it.
        if value <= 0:
            raise ValueError("n must be positive")
        return value


def _half(n: int) -> float:
    """Halve a positive number."""
    return n / 2


def test_langchain_side_validation_errors(registry: ToolRegistry) -> None:
    strict = StructuredTool.from_function(_half, name="half", args_schema=PositiveInput)
    lenient = StructuredTool.from_function(
        _half, name="half_handled", args_schema=PositiveInput,
        handle_validation_error="n must be a positive integer, try again")
    registry.register_from_langchain([strict, lenient])
    assert registry.invoke("half", {"n": 4}).content == "2.0"
    bad = registry.invoke("half", {"n": -4})
    assert bad.is_error and bad.error_kind == "invalid_arguments"
    assert "n must be positive" in bad.content
    handled = registry.invoke("half_handled", {"n": -4})
    assert handled.is_error and handled.content == "n must be a positive integer, try again"


def test_import_path_sources_and_config(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "a.txt").write_text("alpha", encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.toolregistry]\n"
        "default-timeout = 10\n"
        "[[tool.toolregistry.sources]]\n"
        'kind = "langchain"\n'
        'target = "langchain_community.agent_toolkits:FileManagementToolkit"\n'
        'namespace = "fs"\n'
        f'init = {{ root_dir = "{sandbox.as_posix()}", selected_tools = ["read_file"] }}\n'
        "[[tool.toolregistry.sources]]\n"
        'kind = "langchain"\n'
        'target = "langchain_community.tools:SleepTool"\n',
        encoding="utf-8",
    )
    registry = ToolRegistry.from_config(config)
    assert registry.list_tools() == ["fs-read_file", "sleep"]
    assert registry.invoke("fs-read_file", {"file_path": "a.txt"}).content == "alpha"

    direct = ToolRegistry()
    direct.register_from_langchain("langchain_community.tools:SleepTool", namespace="t")
    assert direct.list_tools() == ["t-sleep"]
    with pytest.raises(ToolRegistrationError, match="init= applies only"):
        direct.register_from_langchain(multiply, init={"x": 1})
    with pytest.raises(ToolRegistrationError, match="not a module"):
        direct.register_from_langchain("langchain_community.tools.sleep.tool", init={"a": 1})


def test_metadata_option_keeps_langchain_fields(registry: ToolRegistry) -> None:
    tagged = StructuredTool.from_function(_half, name="half", tags=["math"])
    registry.register_from_langchain(
        tagged, metadata=ToolMetadata(timeout=5, tags=["read_only"], custom_tags=["mine"]))
    meta = registry["half"].metadata
    assert meta.timeout == 5 and meta.is_read_only
    assert meta.custom_tags == frozenset({"mine", "math"})
    assert meta.extra["langchain"]["response_format"] == "content"
    registry.register_from_langchain(
        multiply, metadata={"too-long-to-file": True, "defer": True})
    assert registry["multiply"].metadata.too_long_to_file is True
    assert registry["multiply"].metadata.defer is True
    with pytest.raises(ToolRegistrationError, match="fields: "):
        registry.register_from_langchain(multiply, metadata={"colour": "red"}, replace=True)
