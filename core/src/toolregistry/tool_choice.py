"""``tool_choice``: one vocabulary (``auto``, ``none``, ``required``, a tool's name) into the
value each provider expects.

This module owns the vocabulary and the checks (a known keyword, or a registered, enabled
tool's name); the value itself comes from the format (``toolregistry.formats``):

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
bedrock-converse   {"auto":    (none:      {"any": {}}         {"tool": {"name": n}}
                   {}}         ValueError)                     (``toolConfig["toolChoice"]``)
=================  ==========  ==========  ==================  ===================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ToolNotFoundError
from .formats import BUILTIN, ChoiceMode

if TYPE_CHECKING:
    from ._registry import ToolRegistry

__all__ = ["TOOL_CHOICE_FORMATS", "tool_choice"]

TOOL_CHOICE_FORMATS: tuple[str, ...] = BUILTIN.names("tool_choice")
"""Names of the built-in formats that have a tool choice (plugins may add more)."""

_MODES: dict[str, ChoiceMode] = {"auto": "auto", "none": "none", "required": "required",
                                 "any": "required"}


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
    names the closest matches otherwise; and the registry's formats (plugins' too) are known.

    For ``gemini`` the result is the whole ``tool_config`` (``GenerateContentConfig(
    tool_config=...)``); for ``langchain`` it is what ``bind_tools(tool_choice=...)`` takes.
    """
    if not isinstance(value, str):
        raise TypeError(
            f"tool_choice: value must be 'auto', 'none', 'required' or a tool name (a str), "
            f"got {type(value).__name__}"
        )
    if registry is not None:
        table = registry.formats
    elif api_format in BUILTIN:
        table = BUILTIN
    else:  # perhaps a format an installed plugin adds
        from ._plugins import get_host

        table = get_host().formats
    fmt = table.get(api_format, "tool_choice", context="tool_choice: ")
    choice = value.strip()
    mode = _MODES.get(choice.lower())
    if mode is not None:
        return fmt.tool_choice(mode)
    if not choice:
        raise ValueError("tool_choice: empty value; use 'auto', 'none', 'required' or a "
                         "tool name")
    if registry is not None:
        _check_name(choice, registry)
    return fmt.tool_choice("tool", choice)
