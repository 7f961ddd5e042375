"""The plugin system: entry points, isolation of broken plugins, block and allow lists,
strict mode, the hook facade, and the errors for plugins that are not installed."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolregistry
from toolregistry import ChangeEvent, Tool, ToolRegistry, hookimpl
from toolregistry import hookspecs as specs
from toolregistry._config import ConfigWarning
from toolregistry._plugins import PluginHost, PluginSettings
from toolregistry.errors import ConfigError, MissingPluginError, ToolRejected
from toolregistry.plugin import ChoiceMode, Definition, ProviderFormat, SourceKind

from ._dists import install_dist

# --- third-party distributions, really built and installed -------------------------------------

GOOD = '''
from toolregistry import hookimpl, Tool
from toolregistry.plugin import SourceKind

def _load(registry, source, **options):
    tools = [Tool(name=f"hello_{n}", description="Say hello.", callable=lambda n=n: f"hello {n}")
             for n in source]
    return registry.register_tools(tools, **options)

@hookimpl
def loaders():
    return [SourceKind(name="hello", load=_load)]

@hookimpl
def register(registry, tool):
    return None
'''
BROKEN = '''
raise RuntimeError("this plugin is broken on purpose")
'''
MISSPELT = '''
from toolregistry import hookimpl

@hookimpl
def regster(registry, tool):
    return None
'''
CLAIMS_HELLO = '''
from toolregistry import hookimpl

@hookimpl
def on_change(registry, event):
    pass
'''


@pytest.fixture(scope="module")
def third_party(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build wheels of four small plugin distributions and install each into its own folder."""
    root = tmp_path_factory.mktemp("dists")
    specs_ = {
        "good": ("toolregistry-hello", "tr_hello", "hello", GOOD),
        "broken": ("toolregistry-broken", "tr_broken", "broken", BROKEN),
        "misspelt": ("toolregistry-misspelt", "tr_misspelt", "misspelt", MISSPELT),
        "rival": ("toolregistry-rival", "tr_rival", "hello", CLAIMS_HELLO),
    }
    return {key: install_dist(root, dist, {ep: (module, code)})
            for key, (dist, module, ep, code) in specs_.items()}


def _run(code: str, *sites: Path, env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREGISTRY_")}
    full_env["PYTHONPATH"] = os.pathsep.join(str(s) for s in sites)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=60)


PLUGINS_JSON = ("import json,sys; from toolregistry.cli import main; sys.exit(main(['plugins']))")


def _report(*sites: Path, env: dict[str, str] | None = None, cwd: Path | None = None
            ) -> dict[str, Any]:
    proc = _run(PLUGINS_JSON, *sites, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout) if r["name"] != "think"
            and r["distribution"] not in _FIRST_PARTY}


_FIRST_PARTY = {f"toolregistry-{p}" for p in
                ("think", "discovery", "mcp", "openapi", "langchain", "spool")}


def test_a_third_party_plugin_is_found_and_works(third_party: dict[str, Path]) -> None:
    report = _report(third_party["good"])
    hello = report["hello"]
    assert hello["status"] == "loaded"
    assert hello["distribution"] == "toolregistry-hello" and hello["version"] == "0.1.0"
    assert hello["hooks"] == ["loaders", "register"]
    proc = _run("from toolregistry import ToolRegistry; r = ToolRegistry();"
                "r.register_from_hello(['a', 'b'], namespace='hi');"
                "print(r.list_tools(), r.invoke('hi-hello_a').text)", third_party["good"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['hi-hello_a', 'hi-hello_b'] hello a"


def test_a_broken_plugin_is_reported_and_the_rest_keep_working(third_party: dict[str, Path]
                                                                ) -> None:
    report = _report(third_party["good"], third_party["broken"])
    assert report["hello"]["status"] == "loaded"
    broken = report["broken"]
    assert broken["status"] == "broken"
    assert broken["distribution"] == "toolregistry-broken"
    assert "RuntimeError: this plugin is broken on purpose" in broken["error"]
    proc = _run("from toolregistry import ToolRegistry; r = ToolRegistry();"
                "r.register_from_hello(['x']); print(r.invoke('hello_x').text)",
                third_party["good"], third_party["broken"])
    assert proc.stdout.strip() == "hello x", proc.stderr


def test_strict_mode_raises_for_a_broken_plugin(third_party: dict[str, Path]) -> None:
    proc = _run(PLUGINS_JSON, third_party["broken"], env={"TOOLREGISTRY_STRICT_PLUGINS": "1"})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "plugin 'broken' (toolregistry-broken)" in proc.stderr


def test_a_misspelt_hook_is_named(third_party: dict[str, Path]) -> None:
    record = _report(third_party["misspelt"])["misspelt"]
    assert record["status"] == "broken"
    assert "unknown hook 'regster' (did you mean 'register'?)" in record["error"]


def test_two_distributions_claiming_one_name(third_party: dict[str, Path]) -> None:
    proc = _run(PLUGINS_JSON, third_party["good"], third_party["rival"])
    records = [r for r in json.loads(proc.stdout) if r["name"] == "hello"]
    by_dist = {r["distribution"]: r for r in records}
    assert by_dist["toolregistry-hello"]["status"] == "loaded"
    conflict = [r for r in records if r["status"] == "broken"]
    assert len(conflict) == 1
    assert "toolregistry-hello" in conflict[0]["error"]
    assert "toolregistry-rival" in conflict[0]["error"]


def test_block_and_allow_lists_with_precedence(third_party: dict[str, Path],
                                               tmp_path: Path) -> None:
    site = third_party["good"]
    assert _report(site, env={"TOOLREGISTRY_DISABLE_PLUGINS": "hello"})["hello"]["status"] \
        == "blocked"
    assert _report(site, env={"TOOLREGISTRY_LOAD_PLUGINS": "other"})["hello"]["status"] \
        == "blocked"
    (tmp_path / "pyproject.toml").write_text('[tool.toolregistry]\ndisable-plugins = ["hello"]\n')
    assert _report(site, cwd=tmp_path)["hello"]["status"] == "blocked"
    # environment beats pyproject
    assert _report(site, cwd=tmp_path, env={"TOOLREGISTRY_DISABLE_PLUGINS": ""})["hello"][
        "status"] == "loaded"
    # an explicit argument beats both
    proc = _run("from toolregistry import ToolRegistry;"
                "r = ToolRegistry(disable_plugins=[]);"
                "print(r.plugins.records['hello'].status)", site, cwd=tmp_path,
                env={"TOOLREGISTRY_DISABLE_PLUGINS": "hello"})
    assert proc.stdout.strip() == "loaded", proc.stderr
    proc = _run("from toolregistry import ToolRegistry;"
                "ToolRegistry().register_from_hello(['x'])", site, cwd=tmp_path)
    assert proc.returncode != 0 and "register_from_hello" in proc.stderr


# --- the hook facade, with in-process plugins -------------------------------------------------

def add(a: int, b: int) -> int:
    """Add."""
    return a + b


class CohereV2(ProviderFormat):
    """Cohere's v2 chat API: OpenAI-style tool definitions, an upper-case tool_choice that has
    no "auto" (leaving it out lets the model decide) and no forced tool."""

    name = "cohere-v2"
    aliases = ("cohere",)

    def tool_definition(self, tool: Tool, parameters: dict[str, Any], *, strict: bool
                        ) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": tool.name, "description": tool.description, "parameters": parameters}}

    def read_definition(self, definition: Any) -> Definition:
        fn = definition["function"]
        return Definition(fn["name"], fn.get("description"), fn.get("parameters"))

    def tool_choice(self, mode: ChoiceMode, tool: str | None = None) -> Any:
        if mode in ("none", "required"):
            return mode.upper()
        raise ValueError(f"cohere-v2 has no tool_choice for {mode!r}: leave tool_choice out "
                         "to let the model decide")


class Recorder:
    """A plugin implementing every hook, recording what it sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    @hookimpl
    def register(self, registry: ToolRegistry, tool: Tool) -> Tool | None:
        self.seen.append(("register", tool.name))
        if tool.name == "forbidden":
            raise ToolRejected("tool 'forbidden' is not allowed here")
        if tool.name == "add":
            return tool.evolve(description="Add (edited by a plugin).")
        return None

    @hookimpl
    def schema_transform(self, registry: ToolRegistry, tool: Tool, schema: dict[str, Any],
                         api_format: str) -> None:
        self.seen.append(("schema_transform", (tool.name, api_format)))
        schema.setdefault("properties", {})["trace"] = {"type": "string"}

    @hookimpl
    def pre_invoke(self, registry: ToolRegistry, tool: Tool, call: Any) -> None:
        self.seen.append(("pre_invoke", tool.name))
        call.arguments.pop("trace", None)
        call.extra["seen"] = True

    @hookimpl
    def post_invoke(self, registry: ToolRegistry, tool: Tool, call: Any, result: Any) -> Any:
        self.seen.append(("post_invoke", (tool.name, call.extra.get("seen"))))
        result.metadata["post"] = True
        return None

    @hookimpl
    def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
        self.seen.append(("on_change", event.kind))

    @hookimpl
    def loaders(self) -> list[SourceKind]:
        return [SourceKind(name="numbers", load=lambda registry, source, **kw:
                           registry.register_tools([Tool(name=f"n{i}", callable=lambda i=i: i)
                                                    for i in range(source)], **kw))]

    @hookimpl
    def suggest_tools(self, registry: ToolRegistry, name: str, limit: int) -> list[str]:
        return ["add", "not-registered"]

    @hookimpl
    def provider_formats(self) -> list[ProviderFormat]:
        return [CohereV2()]


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, ToolRegistry]]:
    plugin = Recorder()
    reg = ToolRegistry(plugins=[plugin])
    yield plugin, reg
    reg.close()


def test_hook_register(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    assert reg["add"].description == "Add (edited by a plugin)."
    with pytest.raises(ToolRejected, match="not allowed"):
        reg.register(add, name="forbidden")
    assert "forbidden" not in reg
    assert ("register", "forbidden") in plugin.seen


def test_a_kind_a_plugin_brings_later_is_a_method_of_the_registries_that_have_it() -> None:
    class Own:  # a host of its own: the default one is shared with other tests
        pass

    class Letters:
        @hookimpl
        def loaders(self) -> list[SourceKind]:
            return [SourceKind(name="letters", load=lambda registry, source, **kw:
                               registry.register_tools([Tool(name=c, callable=lambda c=c: c)
                                                        for c in source], **kw))]

    reg, other = ToolRegistry(plugins=[Own()]), ToolRegistry()
    assert not hasattr(reg, "register_from_letters")
    with pytest.raises(AttributeError, match="'ToolRegistry' object has no attribute "
                                             "'register_from_letters'"):
        reg.register_from_letters("ab")
    reg.plugins.add(Letters(), name="letters")
    assert [t.name for t in reg.register_from_letters("ab")] == ["a", "b"]
    assert [t.name for t in asyncio.run(reg.aregister_from_letters("c"))] == ["c"]
    assert not hasattr(other, "register_from_letters")  # its plugins do not provide it
    with pytest.raises(AttributeError, match="no attribute 'register_from_nothing'"):
        reg.register_from_nothing("x")
    reg.close()
    other.close()


@pytest.mark.parametrize("trace", [False, True])
def test_register_and_on_change_call_implementations_as_pluggy_does(trace: bool) -> None:
    # the kernel calls these two hooks itself on every registration (trace: through pluggy)
    calls: list[tuple[str, ...]] = []

    class Both:
        @hookimpl
        def register(self, registry: ToolRegistry, tool: Tool) -> None:
            calls.append(("both", tool.name))

        @hookimpl
        def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
            calls.append(("both", event.kind))

    class Reordered:
        @hookimpl
        def register(self, tool: Tool, registry: ToolRegistry) -> None:
            calls.append(("reordered", tool.name, type(registry).__name__))

        @hookimpl
        def on_change(self, event: ChangeEvent) -> None:
            calls.append(("event only", event.kind))

    class Replacer:
        @hookimpl
        def register(self, tool: Tool) -> Tool | None:
            calls.append(("replacer", tool.name))
            return tool.evolve(description="Replaced.") if tool.name == "add" else None

    reg = ToolRegistry(plugins=[Both(), Reordered(), Replacer()], trace_hooks=trace)
    reg.register(add, name="plain")
    reg.register(add)
    # last registered first; register stops at the first result
    assert calls == [("replacer", "plain"), ("reordered", "plain", "ToolRegistry"),
                     ("both", "plain"), ("event only", "register"), ("both", "register"),
                     ("replacer", "add"), ("event only", "register"), ("both", "register")]
    assert reg["add"].description == "Replaced." and reg["plain"].description != "Replaced."
    reg.close()


def test_hook_schema_transform(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    for fmt in ("openai-chat", "anthropic"):
        reg.get_schemas(fmt)
    assert ("schema_transform", ("add", "anthropic")) in plugin.seen
    assert "trace" in reg.get_schemas()[0]["function"]["parameters"]["properties"]
    assert "trace" not in reg["add"].parameters["properties"]  # the stored schema is untouched


def test_hook_pre_invoke(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    assert reg.invoke("add", {"a": 1, "b": 2, "trace": "x"}).text == "3"
    assert ("pre_invoke", "add") in plugin.seen


def test_hook_post_invoke(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    (result,) = reg.execute_tool_calls([{"name": "add", "arguments": {"a": 1, "b": 1}}])
    assert result.metadata["post"] is True
    assert ("post_invoke", ("add", True)) in plugin.seen


def test_hook_on_change(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    reg.disable("add")
    kinds = [v for k, v in plugin.seen if k == "on_change"]
    assert kinds == ["register", "disable"]


def test_hook_loaders(recorder: tuple[Recorder, ToolRegistry]) -> None:
    _, reg = recorder
    tools = reg.register_from_numbers(3, namespace="num")
    assert [t.name for t in tools] == ["num-n0", "num-n1", "num-n2"]
    assert reg.load("numbers", 1, namespace="x")[0].name == "x-n0"


def test_hook_suggest_tools(recorder: tuple[Recorder, ToolRegistry]) -> None:
    _, reg = recorder
    reg.register(add)
    result = reg.invoke("sum", {})
    assert result.error_kind == "unknown_tool"
    assert "Did you mean: add?" in result.text


class Picky:
    """Declares that its hooks concern only tools tagged 'picky' (post_invoke only for those
    also tagged 'wrap'); its post_invoke is a wrapper over the other plugins'."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.asked: list[str] = []

    @hookimpl
    def call_hooks(self, tool: Tool) -> set[str]:
        self.asked.append(tool.name)
        tags = tool.metadata.custom_tags
        if "picky" not in tags:
            return set()
        return {"pre_invoke", "post_invoke"} if "wrap" in tags else {"pre_invoke"}

    @hookimpl
    def pre_invoke(self, tool: Tool, call: Any) -> None:
        self.seen.append(("pre", tool.name))

    @hookimpl(wrapper=True)
    def post_invoke(self, tool: Tool, result: Any) -> Any:
        replaced = yield
        self.seen.append(("post", tool.name))
        current = replaced if replaced is not None else result
        current.metadata["wrapped_after"] = current.metadata.get("plain")
        return current


class Plain:
    """Declares nothing: concerns every tool."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def post_invoke(self, tool: Tool, result: Any) -> Any:
        self.seen.append(tool.name)
        result.metadata["plain"] = tool.name
        return None


def test_hook_call_hooks() -> None:
    from toolregistry import ToolMetadata

    picky, plain = Picky(), Plain()
    reg = ToolRegistry(plugins=[picky, plain])
    try:
        reg.register(add)
        reg.register(add, name="tagged", metadata=ToolMetadata(custom_tags={"picky"}))
        reg.register(add, name="wrapped", metadata=ToolMetadata(custom_tags={"picky", "wrap"}))
        for name in ("add", "tagged", "wrapped"):
            assert reg.invoke(name, {"a": 1, "b": 2}).text == "3"
            assert reg.invoke(name, {"a": 1, "b": 3}).text == "4"
        # asked once per tool (the plan is kept), and only concerned hooks ran
        assert sorted(picky.asked) == ["add", "tagged", "wrapped"]
        assert picky.seen == [("pre", "tagged"), ("pre", "tagged"),
                              ("pre", "wrapped"), ("post", "wrapped"),
                              ("pre", "wrapped"), ("post", "wrapped")]
        assert plain.seen == ["add", "add", "tagged", "tagged", "wrapped", "wrapped"]
        # the wrapper still has the last word over the plain implementation (pluggy's order)
        assert reg.invoke("wrapped", {"a": 0, "b": 0}).metadata["wrapped_after"] == "wrapped"
        # a metadata change recompiles that tool's plan and asks again
        reg.update_tool_metadata("add", custom_tags={"picky"})
        picky.seen.clear()
        reg.invoke("add", {"a": 1, "b": 2})
        assert picky.seen == [("pre", "add")] and picky.asked.count("add") == 2
        # a setting change recompiles every plan
        reg.set_setting("anything", True)
        reg.invoke("tagged", {"a": 1, "b": 2})
        assert picky.asked.count("tagged") == 2
    finally:
        reg.close()


def test_a_broken_call_hooks_declaration_concerns_every_tool() -> None:
    class Broken:
        def __init__(self) -> None:
            self.pre = 0

        @hookimpl
        def call_hooks(self, tool: Tool) -> set[str]:
            raise RuntimeError("cannot decide")

        @hookimpl
        def pre_invoke(self, call: Any) -> None:
            self.pre += 1

    plugin = Broken()
    reg = ToolRegistry(plugins=[plugin])
    try:
        reg.register(add)
        assert reg.invoke("add", {"a": 1, "b": 2}).ok and plugin.pre == 1
    finally:
        reg.close()


class Marking:
    """Transforms only the schemas of tools tagged 'mark' (``schema_hooks``); ``Stamping``
    declares nothing and transforms every schema. Both note their order in the schema."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.transformed: list[str] = []

    @hookimpl
    def schema_hooks(self, tool: Tool) -> set[str]:
        self.asked.append(tool.name)
        return {"schema_transform"} if "mark" in tool.metadata.custom_tags else set()

    @hookimpl
    def schema_transform(self, tool: Tool, schema: dict[str, Any]) -> None:
        self.transformed.append(tool.name)
        schema.setdefault("x-by", []).append("marking")


class Stamping:
    @hookimpl
    def schema_transform(self, schema: dict[str, Any]) -> None:
        schema.setdefault("x-by", []).append("stamping")


def test_hook_schema_hooks() -> None:
    from toolregistry import ToolMetadata

    marking = Marking()
    reg = ToolRegistry(plugins=[marking])
    try:
        reg.register(add)
        reg.register(add, name="marked", metadata=ToolMetadata(custom_tags={"mark"}))
        params = {d["name"]: d["input_schema"] for d in reg.get_schemas("anthropic")}
        assert params["marked"]["x-by"] == ["marking"] and "x-by" not in params["add"]
        assert "x-by" not in reg["marked"].parameters  # the transform edited a private copy
        assert marking.transformed == ["marked"]
        # a tool nothing concerns goes out as it is stored: no copy (emitted schemas are
        # read-only)
        chat = {d["function"]["name"]: d["function"]["parameters"] for d in reg.get_schemas()}
        assert chat["add"] is reg["add"].parameters
        assert chat["marked"] is not reg["marked"].parameters
        assert reg.get_parameters("add") == reg["add"].parameters
        # asked once per tool and format until something changes
        reg.get_schemas("anthropic")
        reg.get_schemas()
        assert sorted(marking.asked) == ["add", "add", "add", "marked", "marked"]
        reg.update_tool_metadata("add", custom_tags={"mark"})
        assert reg.get_schemas("anthropic")[0]["input_schema"]["x-by"] == ["marking"]
    finally:
        reg.close()


def test_schema_hooks_keep_pluggy_order_among_the_concerned() -> None:
    from toolregistry import ToolMetadata

    reg = ToolRegistry(plugins=[Marking(), Stamping()])
    reference = ToolRegistry(plugins=[Stamping()])
    try:
        reg.register(add)
        reg.register(add, name="marked", metadata=ToolMetadata(custom_tags={"mark"}))
        params = {d["function"]["name"]: d["function"]["parameters"] for d in reg.get_schemas()}
        # pluggy calls the last registered first
        assert params["marked"]["x-by"] == ["stamping", "marking"]
        assert params["add"]["x-by"] == ["stamping"]
        reference.register(add)
        assert reference.get_schemas() == [d for d in reg.get_schemas()
                                           if d["function"]["name"] == "add"]
    finally:
        reg.close()
        reference.close()


def test_a_broken_schema_hooks_declaration_concerns_every_tool() -> None:
    class Broken(Marking):
        @hookimpl
        def schema_hooks(self, tool: Tool) -> set[str]:
            raise RuntimeError("cannot decide")

    from structlog.testing import capture_logs

    plugin = Broken()
    reg = ToolRegistry(plugins=[plugin])
    try:
        reg.register(add)
        with capture_logs() as logs:
            assert reg.get_schemas()[0]["function"]["parameters"]["x-by"] == ["marking"]
        assert [e["hook"] for e in logs if e["event"] == "hook.failed"] == ["schema_hooks"]
    finally:
        reg.close()


def test_a_plugin_added_later_is_compiled_into_existing_plans() -> None:
    plain = Plain()
    reg = ToolRegistry(plugins=[Picky()])
    try:
        reg.register(add)
        assert "plain" not in reg.invoke("add", {"a": 1, "b": 2}).metadata
        reg.plugins.add(plain, name="plain-late")
        assert reg.invoke("add", {"a": 1, "b": 2}).metadata["plain"] == "add"
    finally:
        reg.close()

def test_hook_settings_model(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Options(BaseModel):
        colour: str = "red"

    class Painter:
        __name__ = "painter"

        def __init__(self) -> None:
            self.calls = 0

        @hookimpl
        def settings_model(self) -> type[BaseModel]:
            self.calls += 1
            return Options

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.painter]\ncolour = "blue"\n')
    plugin = Painter()
    with ToolRegistry(config=config, plugins=[plugin]) as reg:
        assert reg.plugin_settings("painter", Options).colour == "blue"
        assert reg.plugins.settings_model("painter") is Options
    assert plugin.calls == 1  # asked once, when the table was checked
    config.write_text("[tool.toolregistry.plugins.painter]\ncolour = 5\n")
    with pytest.raises(ConfigError, match=r"plugins.painter\].*colour: Input should be a "
                                          r"valid string"):
        ToolRegistry(config=config, plugins=[Painter()])


def test_hook_cli_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from toolregistry.plugin import Command, CommandContext

    ran: list[CommandContext] = []

    class Commander:
        __name__ = "commander"

        @hookimpl
        def cli_commands(self) -> list[Command]:
            return [Command(name="hello", help="greet", run=lambda ctx: ran.append(ctx) or 0)]

    host = PluginHost(PluginSettings())
    host.add(Commander())
    (plugin, command), = host.commands(taken=("plugins",))
    assert plugin == "commander" and command.name == "hello"
    command.run(CommandContext(argparse.Namespace(), None))
    assert len(ran) == 1
    assert host.commands(taken=("hello",)) == []
    assert "the command name(s) hello are taken" in (host.records["commander"].error or "")


def test_hook_provider_formats(recorder: tuple[Recorder, ToolRegistry]) -> None:
    plugin, reg = recorder
    reg.register(add)
    assert reg.formats.names("schemas")[-1] == "cohere-v2"
    (definition,) = reg.get_schemas("Cohere")  # by alias
    assert definition["function"]["name"] == "add"
    assert ("schema_transform", ("add", "cohere-v2")) in plugin.seen
    assert reg.tool_choice("required", "cohere-v2") == "REQUIRED"
    with pytest.raises(ValueError, match="no tool_choice for 'tool'"):
        reg.tool_choice("add", "cohere-v2")
    with pytest.raises(ValueError, match="'cohere-v2' format has no chat messages"):
        reg.build_tool_call_messages([], [], api_format="cohere-v2")
    other = ToolRegistry()  # a registry without the plugin does not know the format
    with pytest.raises(ValueError, match="unknown api_format 'cohere-v2'"):
        other.get_schemas("cohere-v2")
    other.close()


def test_every_hook_has_a_test() -> None:
    hooks = [n for n, f in vars(specs).items() if getattr(f, "toolregistry_spec", None)]
    assert tuple(hooks) == toolregistry._plugins.HOOK_NAMES  # every spec, in their order
    from tests import test_context, test_seams  # the seams are tested there

    tested = {*globals(), *vars(test_seams), *vars(test_context)}
    for name in hooks:
        assert any(t.startswith(f"test_hook_{name}") for t in tested), \
            f"hook {name!r} has no test_hook_{name}"


def test_a_hookimpl_with_a_misspelt_hook_in_process() -> None:
    class Bad:
        @hookimpl
        def pre_invok(self, registry: Any, tool: Any, call: Any) -> None:
            pass

    host = PluginHost(PluginSettings())
    record = host.add(Bad(), name="bad")
    assert record.status == "broken"
    assert "did you mean 'pre_invoke'" in (record.error or "")


# --- plugins that are not installed -------------------------------------------------------------

def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"toolregistry_{name}") is not None


@pytest.mark.skipif(_installed("think"), reason="toolregistry-think is installed")
def test_think_augment_without_the_plugin() -> None:
    with pytest.raises(MissingPluginError, match="install toolregistry-think"):
        ToolRegistry(think_augment=True)


@pytest.mark.skipif(_installed("mcp"), reason="toolregistry-mcp is installed")
def test_register_from_mcp_without_the_plugin() -> None:
    with pytest.raises(MissingPluginError, match="install toolregistry-mcp"):
        ToolRegistry().register_from_mcp({"command": "x"})


@pytest.mark.skipif(_installed("openapi"), reason="toolregistry-openapi is installed")
def test_register_from_openapi_without_the_plugin() -> None:
    with pytest.raises(MissingPluginError, match="install toolregistry-openapi"):
        ToolRegistry().register_from_openapi("spec.yaml")


@pytest.mark.skipif(_installed("discovery"), reason="toolregistry-discovery is installed")
def test_tool_discovery_without_the_plugin() -> None:
    with pytest.raises(MissingPluginError, match="install toolregistry-discovery"):
        from toolregistry.tool_discovery import ToolDiscoveryTool  # noqa: F401
    with pytest.raises(MissingPluginError, match="install toolregistry-discovery"):
        ToolRegistry(tool_discovery=True)


def test_a_blocked_plugin_is_named_as_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREGISTRY_DISABLE_PLUGINS", "think")
    with pytest.raises(MissingPluginError, match="think_augment") as info, \
            warnings.catch_warnings():
        # without the plugin, blocking it is itself reported (an unknown name)
        warnings.simplefilter("ignore", ConfigWarning)
        ToolRegistry(think_augment=True)
    if _installed("think"):
        assert info.value.blocked and "blocked by configuration" in str(info.value)


def test_gc_paused_is_deprecated_and_leaves_the_collector_alone() -> None:
    import gc

    from toolregistry.plugin import gc_paused

    with pytest.warns(DeprecationWarning, match="gc_paused is deprecated"), gc_paused(10_000):
        assert gc.isenabled()
    assert gc.isenabled()


def test_entry_points_are_read_as_importlib_metadata_reads_them(
        third_party: dict[str, Path]) -> None:
    """The kernel reads entry points without importing ``importlib.metadata`` (a fifth of the
    cost of creating a registry); it finds what that finds, names and versions included."""
    code = (
        "import json, sys, attrs\n"
        "from toolregistry._entrypoints import _from_importlib, entry_points\n"
        "assert 'importlib.metadata' not in sys.modules\n"
        "out = {}\n"
        "for group in ('toolregistry.plugins', 'console_scripts', 'pytest11'):\n"
        "    ours = sorted(attrs.astuple(e) for e in entry_points(group))\n"
        "    theirs = sorted(attrs.astuple(e) for e in _from_importlib(group))\n"
        "    out[group] = [ours, theirs]\n"
        "print(json.dumps(out))\n")
    proc = _run(code, *third_party.values())
    assert proc.returncode == 0, proc.stderr
    for group, (ours, theirs) in json.loads(proc.stdout).items():
        assert ours == theirs, group
    plugins = {e[0]: e for e in json.loads(proc.stdout)["toolregistry.plugins"][0]}
    assert plugins["misspelt"][2] == "toolregistry-misspelt"  # the distribution's Name


# --- plugin-order -------------------------------------------------------------------------------

class Ordered:
    """An in-process plugin called ``name`` that notes when its hooks run."""

    def __init__(self, name: str, calls: list[str]) -> None:
        self.__name__ = name
        self.calls = calls

    @hookimpl
    def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
        self.calls.append(f"{self.__name__}.on_change")

    @hookimpl
    def schema_transform(self, registry: ToolRegistry, tool: Tool, schema: dict[str, Any],
                         api_format: str) -> None:
        self.calls.append(f"{self.__name__}.schema_transform")

    @hookimpl
    def pre_invoke(self, registry: ToolRegistry, tool: Tool, call: Any) -> None:
        self.calls.append(f"{self.__name__}.pre_invoke")


@pytest.mark.parametrize("order", [["marker", "stamp"], ["stamp", "marker"]])
def test_plugin_order_calls_the_named_plugins_first_named_first(order: list[str]) -> None:
    calls: list[str] = []
    plugins = [Ordered("marker", calls), Ordered("stamp", calls), Ordered("other", calls)]
    with ToolRegistry(plugins=plugins, plugin_order=order) as reg:
        reg.register(add)
        reg.get_schemas()
        reg.invoke("add", {"a": 1, "b": 2})
    for hook in ("schema_transform", "pre_invoke"):
        seen = [c.split(".")[0] for c in calls if c.endswith(f".{hook}")]
        assert seen == [*order, "other"], (hook, seen)


def test_plugin_order_from_the_file_and_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLREGISTRY_PLUGIN_ORDER", raising=False)
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry]\nplugin-order = ["marker", "stamp"]\n')
    for env, expected in ((None, ["marker", "stamp"]), ("stamp,marker", ["stamp", "marker"])):
        if env is not None:
            monkeypatch.setenv("TOOLREGISTRY_PLUGIN_ORDER", env)
        calls: list[str] = []
        plugins = [Ordered("stamp", calls), Ordered("marker", calls)]
        with ToolRegistry(plugins=plugins, config=config) as reg:
            reg.register(add)
        assert [c.split(".")[0] for c in calls] == expected


class OrderedFirst(Ordered):
    @hookimpl(tryfirst=True)
    def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
        self.calls.append(f"{self.__name__}.on_change")


def test_plugin_order_keeps_tryfirst() -> None:
    calls: list[str] = []
    plugins = [Ordered("marker", calls), OrderedFirst("stamp", calls)]
    with ToolRegistry(plugins=plugins, plugin_order=["marker", "stamp"]) as reg:
        reg.register(add)
    assert calls == ["stamp.on_change", "marker.on_change"]


def test_plugin_order_names_each_plugin_once() -> None:
    with pytest.raises(ConfigError, match="plugin-order names marker more than once"):
        ToolRegistry(plugin_order=["marker", "stamp", "marker"])


# --- no silent failures -------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["disable_plugins", "load_plugins", "plugin_order"])
def test_an_unknown_plugin_name_is_reported(option: str) -> None:
    marker = Ordered("marker", [])
    with pytest.warns(ConfigWarning) as caught:
        ToolRegistry(plugins=[marker], **{option: ["markr"]}).close()
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(f"{option.replace('_', '-')} names 'markr', which is not an "
                              "installed plugin (did you mean 'marker'?); installed: ")
    assert "marker" in message.rsplit("installed: ", 1)[1].split(", ")


def test_an_unknown_plugin_name_is_an_error_in_strict_mode() -> None:
    with pytest.raises(ConfigError, match="disable-plugins names 'nosuch', which is not an "
                                          "installed plugin"):
        ToolRegistry(plugins=[Ordered("marker", [])], disable_plugins=["nosuch"],
                     strict_plugins=True)


def test_every_command_reports_a_broken_plugin(third_party: dict[str, Path],
                                               tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.toolregistry]\n")
    for args in (["schemas"], ["plugins"], ["call", "nope"]):
        proc = _run(f"import sys; from toolregistry.cli import main; sys.exit(main({args!r}))",
                    third_party["good"], third_party["broken"], cwd=tmp_path)
        lines = proc.stderr.splitlines()
        broken = [line for line in lines if "plugin 'broken'" in line]
        assert broken == ["toolregistry: plugin 'broken' (toolregistry-broken) is left out: "
                          "import failed: RuntimeError: this plugin is broken on purpose "
                          "(see toolregistry plugins)"], (args, proc.stderr)
    # the command itself still runs: it reports the unknown tool
    assert proc.returncode == 2 and "no tool named 'nope'" in lines[-1]


def test_the_kernel_offers_its_kind_and_formats_through_the_plugin_hooks() -> None:
    from structlog.testing import capture_logs

    from toolregistry.formats import BUILTIN_FORMATS
    from toolregistry.formats.openai_chat import OpenAIChat

    class Claimer:
        """Claims the kernel's ``python`` kind and the ``openai-chat`` format."""

        __name__ = "claimer"

        @hookimpl
        def loaders(self) -> list[SourceKind]:
            return [SourceKind(name="python", load=lambda target: [])]

        @hookimpl
        def provider_formats(self) -> list[ProviderFormat]:
            return [OpenAIChat()]

    host = PluginHost(PluginSettings())
    loaders = {i.plugin_name: i.function for i in host.pm.hook.loaders.get_hookimpls()}
    assert [k.name for k in loaders["toolregistry"]()] == ["python"]
    offers = {i.plugin_name: i.function for i in host.pm.hook.provider_formats.get_hookimpls()}
    assert offers["toolregistry"]() == list(BUILTIN_FORMATS)
    assert host.provider("python") == "toolregistry"
    assert "toolregistry" not in host.records  # not a plugin of `toolregistry plugins`
    # The kernel's come first: a plugin claiming them too is a conflict, the kernel's are used.
    with capture_logs() as logs:
        host.add(Claimer())
    assert host.provider("python") == "toolregistry"
    assert host.formats.get("openai-chat") is BUILTIN_FORMATS[0]
    assert [(e["event"], e.get("kind") or e.get("format")) for e in logs
            if e["event"] == "plugin.conflict"] == [("plugin.conflict", "python"),
                                                     ("plugin.conflict", "openai-chat")]
    assert host.records["claimer"].status == "loaded"
