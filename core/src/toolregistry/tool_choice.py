"""``tool_choice``: one vocabulary (``auto``, ``none``, ``required``, a tool's name) into the
value each provider expects.

=================  ==========  ==========  ==================  ===================================
api_format         auto        none        required            a tool's name
=================  ==========  ==========  ==================  ===================================
openai-chat        "auto"      "none"      "required"          {"type": "function",
                                                                "function": {"name": n}}
openai-responses   "auto"      "none"      "required"          {"type": "function", "name": n}
anthropic          {"type":    {"type":    {"type": "any"}     {"type": "tool", "name": n}
                   "auto"}     "none"}
gemini             tool_config {"function_calling_config": {"mode": "AUTO" | "NONE" | "ANY",
                   "allowed_function_names": [n]}}  (pass it as ``tool_config=``)
langchain          "auto"      "none"      "any"               n  (for ``bind_tools(tool_choice=)``)
=================  ==========  ==========  ==================  ===================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._formats import normalise_format
from .errors import ToolNotFoundError

if TYPE_CHECKING:
    from ._registry import ToolRegistry

__all__ = ["TOOL_CHOICE_FORMATS", "tool_choice"]

TOOL_CHOICE_FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "langchain")
_MODES = {"auto": "auto", "none": "none", "required": "required", "any": "required"}
_GEMINI_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_ANTHROPIC_TYPES = {"auto": "auto", "none": "none", "required": "any"}
_LANGCHAIN = {"auto": "auto", "none": "none", "required": "any"}


def _format(api_format: str) -> str:
    fmt = api_format.strip().lower().replace("_", "-")
    if fmt in ("langchain", "lc"):
        return "langchain"
    try:
        fmt = normalise_format(api_format)
    except ValueError:
        raise ValueError(
            f"tool_choice: unknown api_format {api_format!r}; use one of "
            f"{', '.join(TOOL_CHOICE_FORMATS)}"
        ) from None
    if fmt not in TOOL_CHOICE_FORMATS:
        raise ValueError(
            f"tool_choice: the {fmt!r} format has no tool choice; use one of "
            f"{', '.join(TOOL_CHOICE_FORMATS)}"
        )
    return fmt


def _check_name(name: str, registry: ToolRegistry) -> None:
    if registry.is_enabled(name):
        return
    if name in registry:
        reason = registry.disabled_reason(name)
        why = f" ({reason})" if reason else ""
        raise ValueError(
            f"tool_choice: tool {name!r} is disabled in registry {registry.name!r}{why}, so "
            "it is not among the tools sent to the model; enable it or choose another tool"
        )
    close = registry.suggest_names(name)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ToolNotFoundError(
        f"tool_choice: no tool named {name!r} in registry {registry.name!r}{hint} "
        "(use 'auto', 'none', 'required' or a registered tool's name)"
    )


def tool_choice(value: str, api_format: str = "openai-chat", *,
                registry: ToolRegistry | None = None) -> Any:
    """The ``tool_choice`` value ``api_format`` expects for ``value``.

    ``value`` is ``"auto"`` (the model decides), ``"none"`` (no tool this turn),
    ``"required"`` (at least one tool call; ``"any"`` is accepted too) or a tool's name (that
    tool must be called). The keywords win over a tool of the same name. With ``registry``, a
    tool name must be registered and enabled: a :class:`~toolregistry.errors.ToolNotFoundError`
    names the closest matches otherwise.

    For ``gemini`` the result is the whole ``tool_config`` (``GenerateContentConfig(
    tool_config=...)``); for ``langchain`` it is what ``bind_tools(tool_choice=...)`` takes.
    """
    if not isinstance(value, str):
        raise TypeError(
            f"tool_choice: value must be 'auto', 'none', 'required' or a tool name (a str), "
            f"got {type(value).__name__}"
        )
    fmt = _format(api_format)
    choice = value.strip()
    mode = _MODES.get(choice.lower())
    if mode is None:
        if not choice:
            raise ValueError("tool_choice: empty value; use 'auto', 'none', 'required' or a "
                             "tool name")
        if registry is not None:
            _check_name(choice, registry)
        return _forced(choice, fmt)
    if fmt in ("openai-chat", "openai-responses"):
        return mode
    if fmt == "anthropic":
        return {"type": _ANTHROPIC_TYPES[mode]}
    if fmt == "gemini":
        return {"function_calling_config": {"mode": _GEMINI_MODES[mode]}}
    return _LANGCHAIN[mode]


def _forced(name: str, fmt: str) -> Any:
    if fmt == "openai-chat":
        return {"type": "function", "function": {"name": name}}
    if fmt == "openai-responses":
        return {"type": "function", "name": name}
    if fmt == "anthropic":
        return {"type": "tool", "name": name}
    if fmt == "gemini":
        return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [name]}}
    return name
