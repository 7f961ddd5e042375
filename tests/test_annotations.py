"""Annotation strings (PEP 563 modules) are resolved once per (string, module) and give the same
schemas as the same functions written without ``from __future__ import annotations``; the
cache follows changes of the module's names."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import Tool, ToolRegistry
from toolregistry._annotations import resolve_hints
from toolregistry._schema import _pydantic_schema, inspect_function
from toolregistry.errors import ToolRegistrationError
from toolregistry.formats import API_FORMATS

SOURCE = '''
import collections.abc as cabc
import dataclasses
import enum
import typing
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolregistry import Injected, ToolContext


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Outer:
    class Inner(BaseModel):
        x: int
        note: Optional[str] = None


class Movie(TypedDict):
    title: str
    year: int


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Tree(BaseModel):
    value: int
    children: list["Tree"] = []


Count = Annotated[int, Field(ge=0, description="How many")]
MaybeTrees = Optional[list["Tree"]]


def f_prims(a: str, b: int, c: float, d: bool = False) -> str:
    """Primitives.

    Args:
        a: A text.
        b: A number.
    """
    return a


def f_optional(a: Optional[int] = None, b: Optional[str] = None, c: typing.Optional[float] = 1.5
               ) -> None:
    return None


def f_pep604(a: list[int] | None = None, b: int | str = 1, c: None | float = None,
             d: list[str] | None = None) -> int | None:
    return None


def f_union(a: Union[int, str], b: typing.Optional[typing.List[int]] = None) -> str:
    return ""


def f_literal(mode: Literal["fast", "exact"] = "fast", level: Literal[1, 2, 3] = 1,
              one: Literal["only"] = "only", flag: Literal[True] = True) -> str:
    return mode


def f_annotated(n: Annotated[int, Field(gt=0, description="positive")],
                tag: Annotated[str, "metadata"] = "x", count: Count = 0) -> int:
    return n


def f_nested(inner: Outer.Inner, items: Optional[list[Outer.Inner]] = None) -> int:
    return inner.x


def f_models(color: Color, movie: Movie, point: Point, tree: Tree) -> str:
    return ""


def f_containers(m: dict[str, list[int]], t: tuple[int, ...], s: cabc.Sequence[str],
                 anything: Any = None, mapping: typing.Dict[str, float] = {}) -> None:
    return None


def f_injected(q: str, ctx: ToolContext, db: Annotated[dict, Injected("db")] = None) -> str:
    return q


def f_forward(node: "Tree", maybe: Optional[{q}Tree{q}] = None, trees: MaybeTrees = None) -> int:
    return node.value


def f_no_annotations(a, b=2):
    return a


def f_positional(a: int, /, b: str = "x", *, c: Literal["k"] = "k") -> str:
    return b
'''

# Functions annotated with a class the module defines after them: fine under PEP 563 when
# registered after the import; the plain twin quotes the names instead.
LATER = '''
def f_later(x: {q}Later{q}, xs: {q}list[Later] | None{q} = None) -> int:
    return 0


class Later(BaseModel):
    name: str
'''

_names = itertools.count()


def _module(tmp_path: Path, source: str, *, pep563: bool) -> types.ModuleType:
    name = f"annotations_case_{next(_names)}"
    path = tmp_path / f"{name}.py"
    path.write_text(("from __future__ import annotations\n" if pep563 else "") + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[tuple[types.ModuleType, types.ModuleType]]:
    # Optional["Tree"] quoted only in the PEP 563 module: typing shares one ForwardRef object
    # between equal Optional["Tree"]s and keeps the first module's class in it (CPython 3.11,
    # with or without this cache), which would mix the two modules' Tree classes up
    future = _module(tmp_path, SOURCE.replace("{q}", '"') + LATER.format(q=""), pep563=True)
    plain = _module(tmp_path, SOURCE.replace("{q}", "") + LATER.format(q='"'), pep563=False)
    yield future, plain
    for m in (future, plain):
        sys.modules.pop(m.__name__, None)


def _functions(module: types.ModuleType) -> dict[str, Callable[..., Any]]:
    return {k: v for k, v in vars(module).items() if k.startswith("f_")}


def _schemas(fns: dict[str, Callable[..., Any]]) -> dict[str, Any]:
    with ToolRegistry() as registry:
        for fn in fns.values():
            registry.register(fn)
        out = {fmt: registry.get_schemas(api_format=fmt) for fmt in API_FORMATS}
        out["injected"] = {n: registry[n].signature.injected for n in fns}  # type: ignore[union-attr]
        return out


def test_pep563_schemas_are_those_of_the_plain_module(
        modules: tuple[types.ModuleType, types.ModuleType]) -> None:
    future, plain = modules
    future_fns, plain_fns = _functions(future), _functions(plain)
    assert list(future_fns) == list(plain_fns) and len(future_fns) == 14
    expected = _schemas(plain_fns)
    # twice: the second registration reads every string from the cache
    assert _schemas(future_fns) == expected
    assert _schemas(future_fns) == expected
    for fn in future_fns.values():  # repr: a Field(...) is a new object at each evaluation
        assert repr(resolve_hints(fn)) == repr(typing.get_type_hints(fn, include_extras=True))


def test_the_fast_path_still_writes_what_pydantic_writes(
        modules: tuple[types.ModuleType, types.ModuleType]) -> None:
    future, _plain = modules
    checked = 0
    for _ in range(2):
        for name, fn in _functions(future).items():
            sig = inspect_function(fn, name, {})
            assert sig.parameters == _pydantic_schema(name, list(sig.params)), name
            checked += 1
    assert checked == 28


def _define(module: types.ModuleType, source: str) -> Callable[..., Any]:
    """Define a function in ``module``'s namespace (as if the module had it), return it."""
    exec(compile("from __future__ import annotations\n" + source, module.__file__ or "<m>",
                 "exec"), vars(module))
    return vars(module)[source.split("def ", 1)[1].split("(", 1)[0]]


def _type_of(fn: Callable[..., Any], param: str) -> Any:
    return Tool.from_function(fn).parameters["properties"][param]


def test_a_rebound_name_is_resolved_anew(tmp_path: Path) -> None:
    module = _module(tmp_path, "Kind = int\n", pep563=True)
    first = _define(module, "def first(x: Kind, y: list[Kind]) -> None: pass")
    assert _type_of(first, "x") == {"type": "integer"}
    module.Kind = str  # type: ignore[attr-defined]
    second = _define(module, "def second(x: Kind, y: list[Kind]) -> None: pass")
    assert _type_of(second, "x") == {"type": "string"}
    assert _type_of(second, "y") == {"type": "array", "items": {"type": "string"}}
    assert _type_of(first, "x") == {"type": "string"}  # as get_type_hints says today
    # a builtin shadowed by a module global
    module.int = str  # type: ignore[attr-defined]
    shadowed = _define(module, "def shadowed(x: int) -> None: pass")
    assert _type_of(shadowed, "x") == {"type": "string"}


def test_a_rebound_attribute_is_resolved_anew(tmp_path: Path) -> None:
    module = _module(tmp_path, "import types\nns = types.SimpleNamespace(T=int)\n", pep563=True)
    first = _define(module, "def first(x: ns.T) -> None: pass")
    assert _type_of(first, "x") == {"type": "integer"}
    module.ns.T = float
    second = _define(module, "def second(x: ns.T) -> None: pass")
    assert _type_of(second, "x") == {"type": "number"}


def test_the_same_string_in_two_modules(tmp_path: Path) -> None:
    ints = _module(tmp_path, "Kind = int\n", pep563=True)
    strs = _module(tmp_path, "Kind = str\n", pep563=True)
    for _ in range(2):
        assert _type_of(_define(ints, "def f(x: Kind) -> None: pass"), "x") == {"type": "integer"}
        assert _type_of(_define(strs, "def f(x: Kind) -> None: pass"), "x") == {"type": "string"}


def test_a_class_defined_after_a_failed_registration(tmp_path: Path) -> None:
    module = _module(tmp_path, "from pydantic import BaseModel\n", pep563=True)
    early = _define(module, "def early(x: Later) -> None: pass")
    with pytest.raises(ToolRegistrationError, match="cannot resolve the type hints") as caught:
        Tool.from_function(early)
    with pytest.raises(NameError) as direct:
        typing.get_type_hints(early, include_extras=True)
    assert str(direct.value) in str(caught.value)  # typing's own error
    exec("class Later(BaseModel):\n    name: str\n", vars(module))
    assert _type_of(early, "x") == {"$ref": "#/$defs/Later"}


def test_quoted_forward_references_follow_their_names(tmp_path: Path) -> None:
    # an alias of list["Node"] holds a reference typing resolves through a name the
    # annotation string ("Nodes") does not show: rebinding that name must show
    module = _module(tmp_path, "from typing import Optional\nNode = int\nNodes = list['Node']\n",
                     pep563=True)
    first = _define(module, "def first(a: Optional['Node'], b: Nodes) -> None: pass")
    assert _type_of(first, "b") == {"type": "array", "items": {"type": "integer"}}
    module.Node = str  # type: ignore[attr-defined]
    second = _define(module, "def second(a: Optional['Node'], b: Nodes) -> None: pass")
    assert _type_of(second, "b") == {"type": "array", "items": {"type": "string"}}
    # typing keeps what the first evaluation of the shared ForwardRef('Node') in
    # Optional['Node'] found (CPython 3.11): whatever it says, the same here
    assert repr(resolve_hints(second)) == repr(typing.get_type_hints(second, include_extras=True))


def test_calls_in_annotations_are_evaluated_each_time(tmp_path: Path) -> None:
    module = _module(tmp_path, "from typing import Annotated\nfrom pydantic import Field\n"
                     "LIMIT = 3\n", pep563=True)
    source = "def f(n: Annotated[int, Field(le=LIMIT)]) -> None: pass"
    assert _type_of(_define(module, source), "n") == {"type": "integer", "maximum": 3}
    module.LIMIT = 5  # type: ignore[attr-defined]
    assert _type_of(_define(module, source), "n") == {"type": "integer", "maximum": 5}


def test_factory_functions_and_methods(tmp_path: Path) -> None:
    module = _module(tmp_path, '''
from typing import Literal, Optional


def make_tool(unit: str):
    def convert(value: float, to: Literal["c", "f"] = "c", note: Optional[str] = None) -> str:
        return f"{value}{unit}"
    return convert


def make_local_type():
    class Local:
        pass

    def uses_local(x: Local) -> None:
        pass
    return uses_local


class Calculator:
    def add(self, a: int, b: Optional[int] = None) -> int:
        return a + (b or 0)
''', pep563=True)
    # names of the module: fine, from any factory call
    for unit in ("C", "F"):
        tool = Tool.from_function(module.make_tool(unit))
        assert tool.parameters["properties"]["to"] == {
            "enum": ["c", "f"], "type": "string", "default": "c"}
    # a factory's own local: annotation strings cannot see it, as get_type_hints cannot
    uses_local = module.make_local_type()
    with pytest.raises(NameError) as direct:
        typing.get_type_hints(uses_local, include_extras=True)
    for _ in range(2):
        with pytest.raises(ToolRegistrationError, match=str(direct.value)):
            Tool.from_function(uses_local)
    with ToolRegistry() as registry:
        registry.register_from_class(module.Calculator(), namespace="calc")
        assert registry.get_parameters("calc-add")["properties"]["b"] == {
            "anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
        assert registry.invoke("calc-add", {"a": 2, "b": 3}).text == "5"


def test_each_string_is_resolved_once_per_module(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    source = "from typing import Literal, Optional\n" + "".join(
        f"def f{i}(a: str, b: Optional[int] = None, c: Literal['x', 'y'] = 'x', "
        f"d: list[str] | None = None) -> str:\n    return a\n" for i in range(50))
    module = _module(tmp_path, source, pep563=True)
    resolved: list[Any] = []
    real = typing.get_type_hints

    def counting(obj: Any, *args: Any, **kwargs: Any) -> Any:
        resolved.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(typing, "get_type_hints", counting)
    with ToolRegistry() as registry:
        for i in range(50):
            registry.register(getattr(module, f"f{i}"))
        assert registry.get_parameters("f49") == registry.get_parameters("f0")
    assert resolved == [module.f0]  # the 49 others read every string from the cache
