"""The one typed façade over every hook call: fast paths, error policy, tracing."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._log import log

if TYPE_CHECKING:
    from ._plugins import PluginHost
    from ._registry import ToolRegistry
    from .events import ChangeEvent
    from .tool import Tool
    from .types import ToolCall, ToolResult

ENV_TRACE = "TOOLREGISTRY_TRACE_HOOKS"


class Hooks:
    """The one place the kernel calls hooks: typed methods, error policy, fast paths.

    A hook nobody implements costs one attribute check. Execution errors propagate (after a
    ``hook.failed`` event naming the hook) so that a broken plugin is loud.
    """

    def __init__(self, host: PluginHost) -> None:
        self._host = host
        self._hook = host.pm.hook
        self.refresh()

    def refresh(self) -> None:
        h = self._hook
        self.has_register = bool(h.register.get_hookimpls())
        self.has_schema_transform = bool(h.schema_transform.get_hookimpls())
        self.has_pre_invoke = bool(h.pre_invoke.get_hookimpls())
        self.has_post_invoke = bool(h.post_invoke.get_hookimpls())
        self.has_on_change = bool(h.on_change.get_hookimpls())
        self.has_suggest = bool(h.suggest_tools.get_hookimpls())
        # Hooks called per tool or per call: with a single plain implementation (the usual
        # case) call it directly; pluggy's dispatch costs more than the work. Tracing keeps
        # the full path.
        self._direct_schema = self._direct("schema_transform")
        self._direct_pre = self._direct("pre_invoke")

    def _direct(self, name: str) -> Callable[..., Any] | None:
        if os.environ.get(ENV_TRACE):
            return None
        impls = getattr(self._hook, name).get_hookimpls()
        if len(impls) != 1 or impls[0].hookwrapper or impls[0].wrapper:
            return None
        impl = impls[0]
        fn = impl.function
        argnames = impl.argnames
        if argnames in (("registry", "tool", "call"), ("registry", "tool", "schema", "api_format")):
            return fn  # type: ignore[no-any-return]

        def call(**kwargs: Any) -> Any:
            return fn(**{a: kwargs[a] for a in argnames})

        return call

    @staticmethod
    def _failed(hook: str, exc: BaseException, **ctx: Any) -> None:
        log.warning("hook.failed", hook=hook, error=f"{type(exc).__name__}: {exc}", **ctx)

    def register(self, registry: ToolRegistry, tool: Tool) -> Tool:
        if not self.has_register:
            return tool
        from .errors import ToolRejected

        try:
            replacement = self._hook.register(registry=registry, tool=tool)
        except ToolRejected:
            raise
        except Exception as exc:
            self._failed("register", exc, tool=tool.name)
            raise
        return tool if replacement is None else replacement

    def schema_transform(self, registry: ToolRegistry, tool: Tool, schema: dict[str, Any],
                         api_format: str) -> None:
        if not self.has_schema_transform:
            return
        try:
            direct = self._direct_schema
            if direct is not None:
                direct(registry=registry, tool=tool, schema=schema, api_format=api_format)
            else:
                self._hook.schema_transform(registry=registry, tool=tool, schema=schema,
                                            api_format=api_format)
        except Exception as exc:
            self._failed("schema_transform", exc, tool=tool.name, api_format=api_format)
            raise

    def pre_invoke(self, registry: ToolRegistry, tool: Tool, call: ToolCall) -> None:
        if self.has_pre_invoke:
            direct = self._direct_pre
            if direct is not None:
                direct(registry=registry, tool=tool, call=call)
            else:
                self._hook.pre_invoke(registry=registry, tool=tool, call=call)

    def post_invoke(self, registry: ToolRegistry, tool: Tool, call: ToolCall,
                    result: ToolResult) -> ToolResult:
        if not self.has_post_invoke:
            return result
        replacement = self._hook.post_invoke(registry=registry, tool=tool, call=call,
                                             result=result)
        return result if replacement is None else replacement

    def on_change(self, registry: ToolRegistry, event: ChangeEvent) -> None:
        if not self.has_on_change:
            return
        try:
            self._hook.on_change(registry=registry, event=event)
        except Exception as exc:
            self._failed("on_change", exc, kind=event.kind, names=list(event.names[:5]))
            raise

    def suggest_tools(self, registry: ToolRegistry, name: str, limit: int) -> list[str] | None:
        if not self.has_suggest:
            return None
        try:
            return self._hook.suggest_tools(registry=registry, name=name, limit=limit)  # type: ignore[no-any-return]
        except Exception as exc:  # suggestions are a courtesy: never fail the call for them
            self._failed("suggest_tools", exc, name=name)
            return None
