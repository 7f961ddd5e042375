"""Type hints of functions whose annotations are strings (PEP 563), each string resolved once
per module namespace.

``typing.get_type_hints`` compiles and evaluates every annotation string anew, and a module of
thousands of tools repeats the same few (``"str"``, ``"Optional[int]"``) thousands of times.
Here the value of a string is kept per (string, module globals), together with the objects
the names it reads resolved to, and reused only while every one of those names still
resolves to the same object: a module that rebinds a name, a class defined after a first
registration, or another module at the address of a dead one's globals all resolve anew.
What cannot be reused safely goes to ``typing.get_type_hints`` every time, as before:
strings with calls (``Annotated[int, Field(gt=0)]``: a new object each time), values that
hold quoted forward references (``Optional["Node"]``, an alias of ``list["Node"]``: typing
resolves those through names the string does not show), and names that do not resolve (the
error is typing's own). Results and errors are the same as ``get_type_hints``'s.
"""

from __future__ import annotations

import ast
import builtins
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ForwardRef, Literal, get_origin

__all__ = ["resolve_hints"]

Chain = tuple[str, ...]
"""A dotted name an annotation reads: ``("int",)``, ``("typing", "Optional")``."""

_MISSING: Any = object()
_MAX_ENTRIES = 8192
_MAX_SPACES = 256
# string -> the dotted names it reads, or None when its value is not a function of them
_CHAINS: dict[str, tuple[Chain, ...] | None] = {}
_Entry = tuple[tuple[tuple[str, Any], ...], tuple[tuple[Chain, Any], ...], Any]
"""What a string resolved to: the plain names it reads with the objects they were, the
dotted names with theirs, and the value."""
# id of a module's globals -> string -> its entry
_RESOLVED: dict[int, dict[str, _Entry]] = {}
_CODE: dict[str, types.CodeType] = {}


def resolve_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``typing.get_type_hints(fn, include_extras=True)``, with annotation strings of plain
    functions (and methods) resolved from the cache while it is valid."""
    target = fn.__func__ if type(fn) is types.MethodType else fn
    if type(target) is not types.FunctionType or hasattr(target, "__wrapped__"):
        return typing.get_type_hints(fn, include_extras=True)
    annotations: Mapping[str, Any] = target.__annotations__
    globalns: dict[str, Any] = target.__globals__
    names = _builtins_of(globalns)
    cache = _RESOLVED.get(id(globalns))
    hints: dict[str, Any] = {}
    missing: list[str] = []
    for param, text in annotations.items():
        entry = cache.get(text) if cache is not None and type(text) is str else None
        if entry is None:
            missing.append(param)
            continue
        # still valid while every name resolves to the same object (inline: thousands of
        # tools, a few names each)
        for name, obj in entry[0]:
            value = globalns.get(name, _MISSING)
            if value is _MISSING:
                value = names.get(name, _MISSING)
            if value is not obj:
                missing.append(param)
                break
        else:
            if not entry[1] or all(_lookup(chain, globalns, names) is obj
                                   for chain, obj in entry[1]):
                hints[param] = entry[2]
            else:
                missing.append(param)
    if not missing:
        return hints
    hints = typing.get_type_hints(fn, include_extras=True)  # raises as it always did
    if cache is None:
        if len(_RESOLVED) >= _MAX_SPACES:
            _RESOLVED.clear()
        cache = _RESOLVED[id(globalns)] = {}
    elif len(cache) >= _MAX_ENTRIES:
        cache.clear()
    for param in missing:
        text = annotations[param]
        if type(text) is not str or param not in hints:
            continue
        chains = _chains(text)
        if chains is None:
            continue
        objects = tuple(_lookup(chain, globalns, names) for chain in chains)
        if any(obj is _MISSING for obj in objects) or not _plain_value(text, globalns):
            continue
        pairs = tuple(zip(chains, objects, strict=True))
        cache[text] = (tuple((c[0], o) for c, o in pairs if len(c) == 1),
                       tuple((c, o) for c, o in pairs if len(c) > 1), hints[param])
    return hints


def _builtins_of(globalns: Mapping[str, Any]) -> Mapping[str, Any]:
    # what eval falls back to after the globals: the module's __builtins__ (a module or its
    # dict), or the interpreter's
    found = globalns.get("__builtins__", builtins)
    return found.__dict__ if isinstance(found, types.ModuleType) else found


def _lookup(chain: Chain, globalns: Mapping[str, Any], names: Mapping[str, Any]) -> Any:
    value = globalns.get(chain[0], _MISSING)
    if value is _MISSING:
        value = names.get(chain[0], _MISSING)
    for attr in chain[1:]:
        if value is _MISSING:
            break
        try:
            value = getattr(value, attr)
        except Exception:  # what eval would raise; typing reports it on the slow path
            return _MISSING
    return value


def _chains(text: str) -> tuple[Chain, ...] | None:
    """The dotted names ``text`` reads, or ``None`` when its value is not a function of the
    objects they name (a call, a lambda, a comprehension, ... or not an expression)."""
    if text in _CHAINS:
        return _CHAINS[text]
    found: list[Chain] = []
    try:
        plain = _collect(ast.parse(text, mode="eval").body, found)
    except (SyntaxError, ValueError, RecursionError):
        plain = False
    result = tuple(dict.fromkeys(found)) if plain else None
    if len(_CHAINS) >= _MAX_ENTRIES:
        _CHAINS.clear()
    _CHAINS[text] = result
    return result


def _collect(node: ast.expr, found: list[Chain]) -> bool:
    if isinstance(node, ast.Name):
        found.append((node.id,))
        return True
    if isinstance(node, ast.Attribute):
        parts = [node.attr]
        inner = node.value
        while isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name):
            return False
        found.append((inner.id, *reversed(parts)))
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Subscript):
        return _collect(node.value, found) and _collect(node.slice, found)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_collect(e, found) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _collect(node.left, found) and _collect(node.right, found)
    if isinstance(node, ast.UnaryOp):
        return _collect(node.operand, found)
    return False


def _plain_value(text: str, globalns: dict[str, Any]) -> bool:
    """True when the value of ``text`` holds no forward reference that typing would resolve
    through names ``text`` does not show (``Optional["Node"]``, ``list["Node"]``)."""
    code = _CODE.get(text)
    if code is None:
        code = compile(text, "<annotation>", "eval")
        if len(_CODE) >= _MAX_ENTRIES:
            _CODE.clear()
        _CODE[text] = code
    try:
        value = eval(code, globalns, globalns)
    except Exception:
        return False
    return not _holds_forward_refs(value, 0)


def _holds_forward_refs(value: Any, depth: int) -> bool:
    if isinstance(value, (str, ForwardRef)):
        return True
    if depth > 32:
        return True
    if get_origin(value) is None or get_origin(value) is Literal:
        return False  # a class, or Literal's values (never resolved)
    args = getattr(value, "__args__", ())  # Annotated's metadata is not among them
    return any(_holds_forward_refs(a, depth + 1) for a in args if a is not Ellipsis)
