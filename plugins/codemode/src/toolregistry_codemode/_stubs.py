"""Tools as typed async Python functions: JSON Schema to annotations, stubs for the type
checker, the compact listing in ``run_code``'s description, and argument binding back to the
schema's names."""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import typing
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

if TYPE_CHECKING:
    from toolregistry import Tool

__all__ = ["RESERVED", "Param", "ToolFunction", "function_for", "render_type", "stub_module"]

RESERVED = frozenset({"call_tool", "asyncio", "json", "re", "math", "datetime", "time",
                      "random", "collections", "itertools", "functools", "typing"})
"""Names a tool function never takes: the built-in ``call_tool`` and the modules programs use."""

_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 8
_NOTE_CHARS = 100
_SUMMARY_CHARS = 160
_SENTENCE_END = re.compile(r"(?<=[\w)\]'\"]\.)\s+(?=[A-Z])")
"""A full stop that ends a sentence (followed by a capital: not the one of "e.g. \"x\"")."""
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
           "null": "None"}


def identifier(name: str, taken: set[str] | frozenset[str] = frozenset(),
               avoid_builtins: bool = True) -> str:
    """A Python identifier for ``name``: other characters become ``_``; keywords, builtins
    (which would shadow the program's own), reserved and ``taken`` names get a ``_`` suffix."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    if ident[0].isdigit():
        ident = "t_" + ident
    while (keyword.iskeyword(ident) or ident in RESERVED or ident in taken
           or (avoid_builtins and ident in _BUILTINS)):
        ident += "_"
    return ident


def _literal(values: Iterable[Any]) -> str | None:
    parts: list[str] = []
    nullable = False
    for v in values:
        if v is None:
            nullable = True
        elif isinstance(v, (str, int, bool)) and not isinstance(v, float):
            parts.append(repr(v))
        else:
            return None
    if not parts:
        return "None" if nullable else None
    text = f"Literal[{', '.join(parts)}]"
    return f"{text} | None" if nullable else text


def _top_level_parts(annotation: str) -> list[str]:
    """``a | list[b | c] | None`` -> ``[a, list[b | c], None]``."""
    parts: list[str] = []
    depth = start = 0
    for i, ch in enumerate(annotation):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    parts.append(annotation[start:].strip())
    return parts


def _union(items: list[str]) -> str:
    seen: list[str] = []
    for item in items:
        for part in _top_level_parts(item):
            if part not in seen:
                seen.append(part)
    if "Any" in seen:
        return "Any"
    # None last reads naturally: str | None
    seen.sort(key=lambda p: p == "None")
    return " | ".join(seen)


def render_type(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """The Python annotation a JSON Schema describes (``Any`` where it cannot say more).

    Objects are ``dict[str, ...]`` rather than TypedDicts: a program that builds a dict in a
    variable must not be refused for it.
    """
    if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
        return "Any"
    root = root if root is not None else schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        return render_type(target, root, depth + 1) if target is not None else "Any"
    if "const" in schema:
        return _literal([schema["const"]]) or "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        lit = _literal(enum)
        if lit is not None:
            return lit
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union([render_type(o, root, depth + 1) for o in options])
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return render_type(all_of[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([render_type({**schema, "type": k}, root, depth + 1) for k in kind])
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{render_type(items, root, depth + 1) if isinstance(items, Mapping) else 'Any'}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra and not schema.get("properties"):
            return f"dict[str, {render_type(extra, root, depth + 1)}]"
        return "dict[str, Any]"
    return "Any"


class _Widen(ast.NodeTransformer):
    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "Literal":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            names: list[str] = []
            for item in items:
                value = item.value if isinstance(item, ast.Constant) else None
                name = "None" if value is None else type(value).__name__
                if name not in names:
                    names.append(name)
            return ast.parse(" | ".join(names), mode="eval").body
        self.generic_visit(node)
        return node


def widen(annotation: str) -> str:
    """``annotation`` with each ``Literal[...]`` as its values' types (``Literal['a', 'b']``
    -> ``str``): what the type checker reads, so that a program passing a ``str`` variable it
    built itself is not refused (the registry still checks the value when the call is made)."""
    if "Literal[" not in annotation:
        return annotation
    tree = _Widen().visit(ast.parse(annotation, mode="eval"))
    return _union([ast.unparse(tree)])


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_sentence(text: str, limit: int) -> str:
    """The first sentence of the first paragraph, on one line, at most ``limit`` characters."""
    first = " ".join(text.strip().split("\n\n", 1)[0].split())
    return _one_line(_SENTENCE_END.split(first, maxsplit=1)[0], limit)


def _default(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str) and len(value) <= 40:
        return repr(value)
    return "..."


@frozen
class Param:
    """One parameter: its name in programs and in the schema, annotation, default, note."""

    py: str
    key: str
    annotation: str
    default: str | None  # None: required
    note: str

    def render(self, stub: bool = False) -> str:
        """``name: type`` or ``name: type = default`` (``stub``: literals widened)."""
        head = f"{self.py}: {widen(self.annotation) if stub else self.annotation}"
        return head if self.default is None else f"{head} = {self.default}"


@frozen
class ToolFunction:
    """A registry tool as the async function programs call."""

    tool_name: str
    py: str
    params: tuple[Param, ...]
    returns: str
    summary: str
    deferred: bool
    parse_json: bool
    timeout: float | None = None
    """The tool's own timeout (``None``: the registry's default applies)."""
    takes_context: bool = False
    """Whether the tool receives a :class:`~toolregistry.ToolContext` (it reads its deadline)."""

    def signature(self, stub: bool = False) -> str:
        """``async def name(params) -> returns:`` (``stub``: for the type checker)."""
        params = ", ".join(p.render(stub) for p in self.params)
        return f"async def {self.py}({params}) -> {self.returns}:"

    def doc(self) -> str:
        """The summary and the parameters' notes, on one line."""
        notes = [f"{p.py}: {p.note.rstrip('.;')}" for p in self.params if p.note]
        text = self.summary
        if notes:
            text = (text + " " if text else "") + "; ".join(notes)
        if self.py != self.tool_name:
            text += f" (tool {self.tool_name!r})"
        text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        return text[:-1] + '\\"' if text.endswith('"') else text

    def listing(self) -> str:
        """Two lines for the description: the signature and a one-line docstring."""
        doc = self.doc()
        return f'{self.signature()}\n    """{doc}"""' if doc else f"{self.signature()}\n    ..."

    def stub(self) -> str:
        """The stub the type checker reads."""
        return f"{self.signature(stub=True)}\n    ...\n"

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments under the schema's names; ``TypeError`` like Python's for too
        many positional arguments, unknown or repeated keywords."""
        params = self.params
        if len(args) > len(params):
            raise TypeError(f"{self.py}() takes {len(params)} positional argument"
                            f"{'' if len(params) == 1 else 's'} but {len(args)} were given")
        out: dict[str, Any] = {}
        for param, value in zip(params, args):
            out[param.key] = value
        if kwargs:
            by_py = {p.py: p for p in params}
            for name, value in kwargs.items():
                named = by_py.get(name)
                if named is None:
                    known = ", ".join(p.py for p in params) or "none"
                    raise TypeError(f"{self.py}() got an unexpected keyword argument {name!r} "
                                    f"(its parameters: {known})")
                if named.key in out:
                    raise TypeError(f"{self.py}() got multiple values for argument {name!r}")
                out[named.key] = value
        return out


_cache: weakref.WeakKeyDictionary[Tool, tuple[str, ToolFunction]] = weakref.WeakKeyDictionary()


def function_for(tool: Tool, py: str, deferred: bool) -> ToolFunction:
    """``tool`` as a :class:`ToolFunction` named ``py`` (worked out once per tool object)."""
    cached = _cache.get(tool)
    if cached is not None and cached[0] == py and cached[1].deferred == deferred:
        return cached[1]
    fn = _build(tool, py, deferred)
    _cache[tool] = (py, fn)
    return fn


def _build(tool: Tool, py: str, deferred: bool) -> ToolFunction:
    schema = tool.parameters
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    required_set = set(required) if isinstance(required, list) else set()
    taken: set[str] = set()
    first: list[Param] = []
    later: list[Param] = []
    for key, prop in props.items():
        if key == "toolcall_reason":
            continue
        prop = prop if isinstance(prop, Mapping) else {}
        name = identifier(str(key), taken, avoid_builtins=False)
        taken.add(name)
        annotation = render_type(prop, schema)
        note = prop.get("description")
        note = _first_sentence(note, _NOTE_CHARS) if isinstance(note, str) else ""
        if key in required_set:
            first.append(Param(name, str(key), annotation, None, note))
            continue
        if "default" in prop:
            default = _default(prop["default"])
        else:
            nullable = annotation == "Any" or "None" in _top_level_parts(annotation)
            default = "None" if nullable else "..."
        later.append(Param(name, str(key), annotation, default, note))
    returns, parse_json = _returns(tool)
    return ToolFunction(tool.name, py, (*first, *later), returns,
                        _first_sentence(tool.description, _SUMMARY_CHARS), deferred, parse_json,
                        tool.metadata.timeout,
                        any(key is None for _, key, _ in tool.validator.injected_params()))


def _returns(tool: Tool) -> tuple[str, bool]:
    """The return annotation, and whether a text result is JSON to be parsed (a declared
    output schema)."""
    schema = tool.output_schema
    if schema:
        props = schema.get("properties")
        if (isinstance(props, Mapping) and list(props) == ["result"]
                and schema.get("required") == ["result"]):
            # MCP's wrapper for a result that is not an object: the text is the value itself,
            # JSON unless it is a string.
            inner = props["result"]
            return render_type(inner, schema), render_type(inner, schema) != "str"
        return render_type(schema), True
    fn = tool.callable
    if fn is None or tool.provenance.kind not in ("function", "class"):
        return "Any", False
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return "Any", False
    if "return" not in hints:
        return "Any", False
    ret = hints["return"]
    if ret is type(None):
        return "None", False
    simple = {str: "str", int: "int", float: "float", bool: "bool"}.get(ret)
    if simple is not None:
        return simple, False
    try:
        import pydantic

        out = pydantic.TypeAdapter(ret).json_schema(mode="serialization")
    except Exception:
        return "Any", False
    return render_type(out), False


def stub_module(functions: Iterable[ToolFunction]) -> str:
    """The stub module the type checker reads: every exposed tool and ``call_tool``."""
    lines = ["from typing import Any, Literal", "",
             "# The interpreter has it (a refused tool call raises it); the checker's builtins",
             "# do not.",
             "class PermissionError(OSError): ...", "",
             "async def call_tool(name: str, arguments: dict[str, Any] | None = None) -> Any:",
             "    ...", ""]
    lines.extend(f.stub() for f in functions)
    return "\n".join(lines)
