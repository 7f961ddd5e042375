"""The per-tool call plan: what a call to one tool needs, worked out once and kept until the
tool, the registry's settings or the plugins change.

A plan holds the tool's validator and injected parameters, the callable each API runs, its
execution policies (retries, running alone, its concurrency group), whether it is disabled,
and the hook implementations, observers and runner that concern this tool (compiled by the hook façade, :meth:`toolregistry._hooks.Hooks.for_tool`): a hook no
implementation of which concerns the tool costs nothing on its calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolregistry._hookcalls import ToolHooks
    from toolregistry.tool import Tool

__all__ = ["CallPlan"]


class CallPlan:
    """What the executor keeps per registered tool (see the module docstring).

    ``fn`` / ``is_async`` is what the sync API runs, ``afn`` / ``ais_async`` what the async API
    runs: a tool with both a sync callable and an async twin runs each on its own path, so
    neither path pays a hop to the other kind of code. ``disabled`` is ``None`` for an enabled
    tool, else the reason given when it was disabled (possibly empty).
    """

    __slots__ = ("afn", "ais_async", "disabled", "fn", "group", "hooks", "idempotent",
                 "injected", "is_async", "read_only", "safe", "tool", "validator")

    def __init__(self, tool: Tool, disabled: str | None, hooks: ToolHooks) -> None:
        self.tool = tool
        self.disabled = disabled
        self.hooks = hooks
        self.validator = tool.validator
        self.injected = self.validator.injected_params()
        self.fn: Callable[..., Any] | None = tool.callable
        self.is_async = bool(tool.is_async)
        if tool.callable is None and tool.acallable is not None:
            self.fn, self.is_async = tool.acallable, True
        if tool.acallable is not None:
            self.afn: Callable[..., Any] | None = tool.acallable
            self.ais_async = True
        else:
            self.afn, self.ais_async = self.fn, self.is_async
        meta = tool.metadata
        self.safe = meta.is_concurrency_safe
        self.idempotent = meta.is_idempotent
        self.group = meta.concurrency_group
        self.read_only = meta.is_read_only
