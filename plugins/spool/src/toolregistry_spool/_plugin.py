"""Hook implementations of the spool plugin.

* ``call_hooks`` declares that ``post_invoke`` concerns only the tools that may spool, so the
  calls of every other tool pay nothing for this plugin.
* ``post_invoke`` is a *wrapper*: it runs after every other plugin's ``post_invoke`` and sees
  the result they settled on, so spooling is always the last word on what the model gets.
* ``output_limits`` tells sources that cut long results (a loader's own size limit) to keep
  the results of the tools that may spool whole: this plugin takes them.
* ``on_change`` registers the reader tool right after the first tool that may spool is
  registered (or gets ``too_long_to_file=True`` through a metadata change), so it is in
  ``get_schemas()`` before any call can return a handle; ``post_invoke`` makes sure again
  before it hands out a handle (the reader may have been unregistered meanwhile). The
  ``register`` hook is not used: the kernel forbids registering tools from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Generator, Mapping
from typing import TYPE_CHECKING

from toolregistry.plugin import hookimpl, log

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolregistry import Tool, ToolCall, ToolRegistry, ToolResult
    from toolregistry.events import ChangeEvent
    from toolregistry.types import OutputLimits

    from ._spool import Spooler


def _spooler(registry: ToolRegistry) -> Spooler:
    """The registry's spooler (an import statement in a hook costs microseconds on every
    registration and call: the spooling module is imported on first use, once)."""
    return _get_spooler()(registry)


@functools.cache
def _get_spooler() -> Callable[[ToolRegistry], Spooler]:
    from ._spool import get_spooler

    return get_spooler


@hookimpl
def call_hooks(registry: ToolRegistry, tool: Tool) -> Collection[str]:
    """``post_invoke`` concerns only the tools that may spool (``too_long_to_file=True``, or
    unset with ``all-tools = true``): other tools' calls never reach this plugin."""
    flag = tool.metadata.too_long_to_file
    if flag is None:
        return ("post_invoke",) if _spooler(registry).settings.all_tools else ()
    return ("post_invoke",) if flag else ()


@hookimpl
def settings_model() -> type[BaseModel]:
    """``[tool.toolregistry.plugins.spool]``, validated when the configuration is loaded."""
    from ._settings import SpoolSettings

    return SpoolSettings


@hookimpl(wrapper=True)
def post_invoke(registry: ToolRegistry, tool: Tool, call: ToolCall, result: ToolResult
                ) -> Generator[None, ToolResult | None, ToolResult | None]:
    """Spool the text of a long result of an opted-in tool; keep everything else."""
    replaced = yield
    flag = tool.metadata.too_long_to_file
    if flag is False:
        return replaced
    spooler = _spooler(registry)
    if flag is None and not spooler.settings.all_tools:
        return replaced
    current = replaced if replaced is not None else result
    content = current.content
    if type(content) is str and len(content) <= spooler.short_chars:
        return replaced  # too short to be over the threshold: nothing to look at
    try:
        spooled = spooler.spool(registry, current)
    except Exception as exc:
        # Never turn a successful call into a hook error for the model: log and pass through.
        log.warning("spool.failed", tool=tool.name, call_id=call.id,
                    error=f"{type(exc).__name__}: {exc}")
        return replaced
    return spooled if spooled is not None else replaced


@hookimpl
def output_limits(registry: ToolRegistry, tool: Tool) -> OutputLimits | None:
    """The tools that may spool keep their long results whole: this plugin takes them."""
    if not _spooler(registry).opted_in(tool):
        return None
    from toolregistry.types import OutputLimits

    return OutputLimits(max_chars=None)


@hookimpl
def on_change(registry: ToolRegistry, event: ChangeEvent) -> None:
    """Register the reader tool once a tool that may spool is present; follow its renames."""
    if event.kind not in ("register", "metadata", "rename", "namespace", "enable"):
        return
    spooler = _spooler(registry)
    renamed = event.details.get("renamed")
    if renamed is not None and isinstance(renamed, Mapping):  # ABC check only when given
        spooler.renamed(renamed)
    if not spooler.settings.reader or spooler.reader_present(registry):
        return
    for name in event.names:
        tool = registry.get_tool(name)
        if tool is not None and spooler.opted_in(tool):
            spooler.ensure_reader(registry)
            return
