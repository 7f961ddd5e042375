"""The tool part of a system prompt: best practices, prompt injections, deferred-tool summaries.

``render_tool_prompt(registry, context)`` returns one string an application puts at the top of
its system prompt (empty when there is nothing to say):

* a ``<tool_best_practices>`` block: for every enabled, visible (non-deferred) tool, in name
  order, its ``metadata.best_practices`` (a ``Best Practices:`` docstring section or
  ``best_practices=[...]``) and the text of its ``prompt_injection_builder(context)``;
* a ``<deferred_tools>`` block: the first-sentence summaries of deferred tools (the progressive
  disclosure of the discovery plugin), so the model knows what it can still look up.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._log import log

if TYPE_CHECKING:
    from ._registry import ToolRegistry
    from .tool import Tool

__all__ = [
    "BEST_PRACTICES_TAG",
    "DEFERRED_TOOLS_TAG",
    "render_best_practices",
    "render_deferred_summaries",
    "render_tool_prompt",
]

BEST_PRACTICES_TAG = "tool_best_practices"
DEFERRED_TOOLS_TAG = "deferred_tools"
# The discovery plugin's tool; named here (not imported) because the kernel never imports plugins.
_DISCOVER_TOOLS = "discover_tools"

_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    """Words only, lower case, single-spaced: two texts that differ only in case, punctuation,
    backticks or whitespace compare equal."""
    return " ".join(_WORD.findall(text.lower()))


def _repeats(practice: str, description: str) -> bool:
    """True when ``practice`` says nothing beyond the description (it is a run of its words)."""
    if not practice:
        return True
    return f" {practice} " in f" {description} "


def _injection(tool: Tool, context: Mapping[str, Any]) -> str | None:
    builder = tool.metadata.prompt_injection_builder
    if builder is None:
        return None
    try:
        text = builder(context)
    except Exception as exc:
        # A broken builder must not take the whole system prompt down with it.
        log.warning("prompt.builder_failed", tool=tool.name,
                    error=f"{type(exc).__name__}: {exc}",
                    note="prompt_injection_builder raised; its text is left out of the prompt")
        return None
    if inspect.isawaitable(text):
        close = getattr(text, "close", None)
        if callable(close):  # never awaited: close it so no RuntimeWarning fires later
            close()
        log.warning("prompt.builder_failed", tool=tool.name, error="returned an awaitable",
                    note="prompt_injection_builder must be a plain function returning str")
        return None
    if text is None:
        return None
    if not isinstance(text, str):
        log.warning("prompt.builder_failed", tool=tool.name,
                    error=f"returned {type(text).__name__}",
                    note="prompt_injection_builder must return a str (or None for nothing)")
        return None
    return text.strip() or None


def _visible_tools(registry: ToolRegistry, names: Iterable[str] | None) -> list[Tool]:
    if names is not None:
        wanted = set(names)
        tools = [t for t in registry.get_tools() if t.name in wanted]
    else:
        tools = registry.get_tools()
    # Name order, not registration order: the same tools give the same prompt however they
    # were loaded (concurrent MCP servers, plugins), which keeps provider prompt caches warm.
    return sorted((t for t in tools if not t.metadata.defer), key=lambda t: t.name)


def render_best_practices(registry: ToolRegistry, context: Mapping[str, Any] | None = None,
                          *, names: Iterable[str] | None = None) -> str:
    """The ``<tool_best_practices>`` block alone ("" when no tool has anything to say).

    Per tool, in name order: its best practices, then its ``prompt_injection_builder`` text.
    A practice already said (by this or an earlier tool) or only repeating the tool's
    description is dropped. A failing builder is logged (``prompt.builder_failed``) and left out.
    """
    ctx: Mapping[str, Any] = context if context is not None else {}
    seen: set[str] = set()
    sections: list[str] = []
    for tool in _visible_tools(registry, names):
        description = _norm(tool.description)
        lines: list[str] = []
        for practice in tool.metadata.best_practices:
            text = " ".join(practice.split())
            key = _norm(text)
            if key in seen or _repeats(key, description):
                continue
            seen.add(key)
            lines.append(f"- {text}")
        injected = _injection(tool, ctx)
        if injected is not None:
            key = _norm(injected)
            if key and key not in seen:
                seen.add(key)
                # One line reads like a practice; a longer text keeps its own layout.
                lines.append(injected if "\n" in injected else f"- {injected}")
        if lines:
            sections.append(f"{tool.name}:\n" + "\n".join(lines))
    if not sections:
        return ""
    body = "\n\n".join(sections)
    return f"<{BEST_PRACTICES_TAG}>\n{body}\n</{BEST_PRACTICES_TAG}>"


def render_deferred_summaries(registry: ToolRegistry) -> str:
    """The ``<deferred_tools>`` block: one line per enabled deferred tool ("" when none)."""
    summaries = sorted(registry.get_deferred_summaries(), key=lambda s: s["name"])
    if not summaries:
        return ""
    if registry.is_enabled(_DISCOVER_TOOLS):
        intro = (f"These tools are available but not in your tool list yet. Call "
                 f"{_DISCOVER_TOOLS} with a tool's name (or the capability you need) to get "
                 "its definition before calling it.")
    else:
        intro = "These tools exist but are not in your tool list yet."
    lines = []
    for s in summaries:
        summary = " ".join(str(s.get("description") or "").split())
        lines.append(f"- {s['name']}: {summary}" if summary else f"- {s['name']}")
    body = "\n".join(lines)
    return f"<{DEFERRED_TOOLS_TAG}>\n{intro}\n{body}\n</{DEFERRED_TOOLS_TAG}>"


def render_tool_prompt(registry: ToolRegistry, context: Mapping[str, Any] | None = None, *,
                       include_deferred_summaries: bool = True,
                       names: Iterable[str] | None = None) -> str:
    """The whole tool part of a system prompt: the ``<tool_best_practices>`` block and, when
    deferred tools exist, the ``<deferred_tools>`` block ("" when there is nothing).

    ``context`` is passed to every tool's ``prompt_injection_builder``. ``names`` limits the
    best practices to those tools (for example the ones given to this request).
    Deterministic: the same registry and context give the same string.
    """
    names = list(names) if names is not None else None
    blocks = [render_best_practices(registry, context, names=names)]
    if include_deferred_summaries:
        blocks.append(render_deferred_summaries(registry))
    return "\n\n".join(b for b in blocks if b)
