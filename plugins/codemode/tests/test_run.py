"""Programs call the tools through the registry's own call path."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

import toolregistry_codemode
from toolregistry import Tool, ToolContext, ToolMetadata, ToolRegistry
from toolregistry.errors import ConfigError, ToolNameCollisionError

MakeMode = Any
Seen = list[tuple[str, dict[str, Any]]]


def test_a_program_chains_calls_and_returns_only_its_answer(make_mode: MakeMode,
                                                             seen: Seen) -> None:
    registry, _ = make_mode()
    code = (
        "temps = {}\n"
        "for region in ['asia', 'europe']:\n"
        "    for city in await list_cities(region):\n"
        "        temps[city] = (await get_weather(city))['temp']\n"
        "print(len(temps), 'cities')\n"
        "max(temps, key=lambda c: temps[c])\n"
    )
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert result.text == '4 cities\nresult: "Tokyo"'
    assert [name for name, _ in seen] == ["list_cities", "get_weather", "get_weather",
                                          "list_cities", "get_weather", "get_weather"]
    calls = result.metadata["calls"]
    assert [c["tool"] for c in calls] == [name for name, _ in seen]
    assert calls[1]["arguments"] == {"city": "Tokyo"} and calls[1]["outcome"] == "ok"
    run = result.value
    assert run.value == "Tokyo" and run.output == "4 cities\n" and len(run.calls) == 6


def test_value_alone_is_json_and_print_alone_is_text(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    assert registry.invoke("run_code", {"code": "{'a': [1, 2.5, None, True]}"}).text == \
        '{"a":[1,2.5,null,true]}'
    assert registry.invoke("run_code", {"code": "print('hi')"}).text == "hi"
    assert "printed nothing" in registry.invoke("run_code", {"code": "x = 1"}).text


def test_async_api_and_provider_calls(make_mode: MakeMode) -> None:
    registry, _ = make_mode()

    async def main() -> list[Any]:
        return await registry.aexecute_tool_calls([
            {"type": "tool_use", "id": "a", "name": "run_code",
             "input": {"code": "(await get_weather('Paris', unit='f'))['temp']"}},
            {"id": "b", "type": "function", "function": {
                "name": "run_code", "arguments": json.dumps({"code": "await list_cities('asia')"})}},
        ])

    first, second = asyncio.run(main())
    assert first.ok and first.text == "57"
    assert second.ok and json.loads(second.text) == ["Tokyo", "Seoul"]


def test_gathered_calls_run_concurrently(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    barrier = threading.Barrier(3, timeout=10)

    @registry.register
    def rendezvous(n: int) -> int:
        """Waits until three calls are in at once."""
        barrier.wait()
        return n

    started = asyncio.Event()

    @registry.register
    async def ping(n: int) -> int:
        """Async tool."""
        await asyncio.sleep(0)
        started.set()
        return n * 10

    code = ("import asyncio\n"
            "await asyncio.gather(rendezvous(1), rendezvous(2), rendezvous(3), ping(4))")
    result = registry.invoke("run_code", {"code": code})
    # Run one after the other, the first rendezvous would wait for the others until the
    # barrier broke (BrokenBarrierError -> an error result).
    assert result.ok, result.text
    assert json.loads(result.text) == [1, 2, 3, 40]


def test_validation_errors_reach_the_program_as_exceptions(make_mode: MakeMode,
                                                            seen: Seen) -> None:
    registry, _ = make_mode(type_check=False)
    code = ("try:\n"
            "    await get_weather('Oslo', unit='kelvin')\n"
            "except TypeError as e:\n"
            "    print('caught:', e)\n"
            "await call_tool('get_weather', {'city': 'Oslo'})")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert "caught: get_weather() failed (invalid_arguments)" in result.text
    assert "unit" in result.text
    assert [c["outcome"] for c in result.metadata["calls"]] == ["invalid_arguments", "ok"]
    assert seen == [("get_weather", {"city": "Oslo", "unit": "c"})]


def test_an_uncaught_tool_error_names_the_line_and_the_calls(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    code = "w = await get_weather('Oslo')\nx = await explode('no fuel')\nprint('never')"
    result = registry.invoke("run_code", {"code": code})
    assert result.is_error and result.error_kind == "execution"
    assert result.text.startswith("Error: line 2: RuntimeError: explode() failed (execution)")
    assert "boom: no fuel" in result.text
    assert "x = await explode('no fuel')" in result.text
    assert "Tool calls made before the error (2): get_weather ok, explode execution" in result.text
    assert result.metadata["error"] == {"kind": "tool", "line": 2}


def test_type_errors_are_reported_with_their_line_before_anything_runs(make_mode: MakeMode,
                                                                        seen: Seen) -> None:
    registry, _ = make_mode()
    code = "a = await list_cities('asia')\nb = await get_weather(town='Oslo')\n"
    result = registry.invoke("run_code", {"code": code})
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "nothing ran" in result.text
    assert "program.py:2:" in result.text and "town" in result.text
    assert result.metadata["error"] == {"kind": "type", "line": 2}
    assert seen == []
    wrong_type = registry.invoke("run_code", {"code": "await get_weather(42)"})
    assert "invalid-argument-type" in wrong_type.text and seen == []
    forgot_await = registry.invoke("run_code", {"code": "w = get_weather('Oslo')\nw['temp']"})
    assert forgot_await.is_error and "CoroutineType" in forgot_await.text


def test_syntax_errors_with_and_without_type_checking(make_mode: MakeMode) -> None:
    for check in (True, False):
        registry, _ = make_mode(type_check=check)
        result = registry.invoke("run_code", {"code": "x = 1\ndef f(:\n    pass"})
        assert result.is_error and result.error_kind == "invalid_arguments", result.text
        assert "syntax error" in result.text and result.metadata["error"]["kind"] == "syntax"
        assert result.metadata["error"]["line"] == 2


def test_context_and_call_ids_reach_the_tools(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    got: list[tuple[Any, str | None]] = []

    @registry.register
    def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        got.append((ctx.values.get("user"), ctx.call.id))
        return str(ctx.values.get("user"))

    results = registry.execute_tool_calls(
        [{"id": "c1", "type": "function", "function": {
            "name": "run_code", "arguments": json.dumps({"code": "await whoami()"})}}],
        context={"user": "ada"})
    assert results[0].text == '"ada"'
    assert got[0][0] == "ada" and got[0][1] is not None and got[0][1].startswith("code")


def test_deferred_tools_are_not_listed_but_reachable_through_call_tool(make_mode: MakeMode
                                                                      ) -> None:
    registry, _ = make_mode()

    def secret_sauce(dish: str) -> str:
        """Reveal the sauce of a dish."""
        return f"{dish}: miso"

    registry.register(Tool.from_function(secret_sauce, metadata=ToolMetadata(defer=True)))
    description = registry["run_code"].description
    assert "secret_sauce" not in description
    assert "More tools exist than are listed here" in description
    result = registry.invoke("run_code", {"code": "await call_tool('secret_sauce', {'dish': 'ramen'})"})
    assert result.ok and result.text == '"ramen: miso"'
    hidden = registry.invoke("run_code", {"code": "await secret_sauce('ramen')"})
    assert hidden.is_error and "secret_sauce" in hidden.text  # not a function programs have
    off = toolregistry_codemode.enable_code_mode(registry, include_deferred=False)
    assert "More tools exist" not in off.description()
    refused = registry.invoke("run_code", {"code": "await call_tool('secret_sauce', {'dish': 'x'})"})
    assert refused.is_error and "no tool 'secret_sauce' available to programs" in refused.text


def test_exposure_by_globs_namespaces_and_tags(make_mode: MakeMode) -> None:
    registry, mode = make_mode(include=["get_*", "ops-*"], exclude=["ops-drop"])

    def drop(table: str) -> str:
        """Drop a table."""
        return table

    def stats() -> dict[str, int]:
        """Statistics."""
        return {"rows": 1}

    registry.register(drop, namespace="ops")
    registry.register(stats, namespace="ops")
    listed = [f.tool_name for f in mode.view().listed]
    assert listed == ["get_weather", "ops-stats"]
    assert "async def ops_stats() -> dict[str, int]:" in registry["run_code"].description
    refused = registry.invoke("run_code", {"code": "await call_tool('ops-drop', {'table': 't'})"})
    assert refused.is_error and "no tool 'ops-drop' available to programs" in refused.text
    tagged = toolregistry_codemode.enable_code_mode(registry, include=["*"], exclude=[],
                                                   tags=["read_only"])
    assert [f.tool_name for f in tagged.view().listed] == []
    registry.update_tool_metadata("list_cities", read_only_hint=False, tags={"read_only"})
    assert [f.tool_name for f in tagged.view().listed] == ["list_cities"]
    spaced = toolregistry_codemode.enable_code_mode(registry, tags=None, namespaces=["ops"])
    assert [f.tool_name for f in spaced.view().listed] == ["ops-drop", "ops-stats"]


def test_the_description_follows_the_registry(make_mode: MakeMode) -> None:
    registry, _ = make_mode()

    @registry.register
    def new_tool(x: int) -> int:
        """A new tool."""
        return x

    assert "async def new_tool(x: int) -> int:" in registry["run_code"].description
    registry.unregister("explode")
    assert "explode" not in registry["run_code"].description
    assert registry.invoke("run_code", {"code": "await new_tool(4)"}).text == "4"


def test_options_are_validated_and_names_guarded() -> None:
    with ToolRegistry() as registry:
        with pytest.raises(ConfigError, match="wall_time"):
            toolregistry_codemode.enable_code_mode(registry, wall_time=-1)
        with pytest.raises(ConfigError, match="nonsense"):
            toolregistry_codemode.enable_code_mode(registry, nonsense=1)

        @registry.register
        def run_code(code: str) -> str:
            """Someone else's tool."""
            return code

        with pytest.raises(ToolNameCollisionError, match="tool_name"):
            toolregistry_codemode.enable_code_mode(registry)
        mode = toolregistry_codemode.enable_code_mode(registry, tool_name="program")
        assert registry["program"].provenance.plugin == "codemode"
        assert toolregistry_codemode.get_code_mode(registry) is mode
        toolregistry_codemode.disable_code_mode(registry)
        assert "program" not in registry and toolregistry_codemode.get_code_mode(registry) is None


def test_config_table_sets_the_defaults(tmp_path: Any) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.toolregistry.plugins.codemode]\nwall-time = 5\nmax-tool-calls = 7\n", "utf-8")
    with ToolRegistry(config=tmp_path / "pyproject.toml") as registry:
        mode = toolregistry_codemode.enable_code_mode(registry, memory_mb=32)
        assert (mode.settings.wall_time, mode.settings.max_tool_calls,
                mode.settings.memory_mb) == (5, 7, 32)
        assert "Limits: 5 s, 32 MiB, 7 tool calls" in registry["run_code"].description


def test_a_bad_table_is_refused_when_the_configuration_loads(tmp_path: Any) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.toolregistry.plugins.codemode]\nwall-time = "long"\n', "utf-8")
    with pytest.raises(ConfigError, match="wall-time"):
        ToolRegistry(config=tmp_path / "pyproject.toml")


def test_a_string_variable_passes_the_check_and_the_registry_checks_its_value(
        make_mode: MakeMode, seen: Seen) -> None:
    registry, _ = make_mode()
    code = ("units = ['c', 'x']\nout = []\nfor u in units:\n    try:\n"
            "        out.append((await get_weather('Oslo', u))['unit'])\n"
            "    except TypeError:\n        out.append('refused')\nout")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert json.loads(result.text) == ["c", "refused"]
    assert len(seen) == 1


def test_findings_that_running_settles_do_not_refuse_a_program(make_mode: MakeMode) -> None:
    registry, _ = make_mode()
    code = ("import re\nw = await get_weather('Oslo')\n"
            "m = re.search(r'(\\d+)', str(w['temp']))\nint(m.group(1))")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text  # ty: `group` on `Match[str] | None`; it runs and works
    assert result.text == "3"
    wrong = registry.invoke("run_code", {"code": "import re\nre.search('x', 'y').group(1)"})
    assert wrong.is_error and wrong.metadata["error"] == {"kind": "runtime", "line": 2}


def test_calls_that_do_not_fit_the_signature_raise_like_python(make_mode: MakeMode,
                                                                seen: Seen) -> None:
    registry, _ = make_mode(type_check=False)
    code = ("try:\n    await list_cities(area='asia')\nexcept TypeError as e:\n"
            "    print('caught:', e)\nawait list_cities('asia', 'europe')")
    result = registry.invoke("run_code", {"code": code})
    assert result.is_error and result.metadata["error"] == {"kind": "runtime", "line": 5}
    assert ("caught: list_cities() got an unexpected keyword argument 'area' "
            "(its parameters: region)") in result.text
    assert "list_cities() takes 1 positional argument but 2 were given" in result.text
    assert seen == [] and result.metadata["calls"] == []


def _never_done(box: list[threading.Event]) -> Any:
    """An async tool that waits until the test lets it go (after run_code returned)."""
    released = threading.Event()
    box.append(released)

    async def slow_lookup(key: str) -> str:
        """Takes too long."""
        while not released.is_set():
            await asyncio.sleep(0.01)
        return key

    return slow_lookup


_CATCH = ("try:\n    await slow_lookup('k')\nexcept TimeoutError as e:\n"
          "    print('timed out:', e)\n'went on'")


@pytest.mark.parametrize("where", ["tool", "registry"])
def test_a_call_that_overruns_its_tool_timeout_is_answered_timeout(make_mode: MakeMode,
                                                                   where: str) -> None:
    # The tool's own timeout (or the registry's default) is shorter than the program's wall
    # time: it holds inside programs. The tool never ends by itself, so the program going on
    # within its wall time shows the call was answered at its deadline.
    box: list[threading.Event] = []
    if where == "tool":
        registry, _ = make_mode(wall_time=20.0)
        registry.register(Tool.from_function(_never_done(box),
                                             metadata=ToolMetadata(timeout=0.3)))
    else:
        registry, _ = make_mode({"default_timeout": 0.3}, wall_time=20.0)
        registry.register(_never_done(box))
    try:
        result = registry.invoke("run_code", {"code": _CATCH})
    finally:
        box[0].set()
    assert result.ok, result.text
    assert "timed out: slow_lookup() failed (timeout)" in result.text
    assert "within 0.3 s" in result.text
    assert result.text.endswith('result: "went on"')
    assert result.metadata["calls"][0]["outcome"] == "timeout"


def test_a_call_outlasting_the_program_is_stopped_by_its_wall_time(make_mode: MakeMode) -> None:
    # The tool's timeout (60 s, the default) ends after the program's wall time: the call has
    # no deadline of its own, the program's limit stops it and the call is cancelled.
    box: list[threading.Event] = []
    registry, _ = make_mode(wall_time=1.0)
    registry.register(_never_done(box))
    try:
        result = registry.invoke("run_code", {"code": _CATCH})
    finally:
        box[0].set()
    assert result.is_error and result.metadata["error"]["kind"] == "limit"
    assert "ran past its wall-time limit of 1 s while waiting for slow_lookup" in result.text
    assert result.metadata["calls"][0]["outcome"] == "cancelled"


def test_a_tool_reading_its_context_keeps_its_deadline(make_mode: MakeMode) -> None:
    registry, _ = make_mode(wall_time=20.0)

    @registry.register
    async def deadline(ctx: ToolContext) -> bool:
        """Whether the call has a deadline."""
        return ctx.deadline is not None

    @registry.register(metadata=ToolMetadata(timeout=5))
    async def short(ctx: ToolContext) -> bool:
        """Whether the call has a deadline."""
        return ctx.deadline is not None

    result = registry.invoke("run_code", {"code": "[await deadline(), await short()]"})
    assert result.ok and result.value.value == [True, True], result.text


def test_results_reach_programs_as_plain_data(make_mode: MakeMode) -> None:
    registry, _ = make_mode(type_check=False)

    @registry.register
    def nested() -> dict[str, Any]:
        """Plain data, a tuple inside (passed as it is)."""
        return {"pets": [{"id": i, "tags": ("a", "b"), "owner": None} for i in range(3)]}

    @registry.register
    def odd() -> dict[str, Any]:
        """Not plain: int keys, a date, a set deep inside (made plain)."""
        import datetime

        return {"when": datetime.date(2026, 12, 1), "by_id": {1: "x"},
                "deep": [[{"s": {3}}]]}

    code = ("a = await nested()\nb = await odd()\n"
            "[len(a['pets']), list(a['pets'][2]['tags']), a['pets'][0]['owner'], b]")
    result = registry.invoke("run_code", {"code": code})
    assert result.ok, result.text
    assert result.value.value == [3, ["a", "b"], None,
                                  {"when": "2026-12-01", "by_id": {"1": "x"},
                                   "deep": [[{"s": [3]}]]}]
