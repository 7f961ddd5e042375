"""The batch side of the call pipeline: a batch's raw calls parsed in order (each bad one an
error result of its own), prepared call by call, and the batch observers told of its start and
its end.

:class:`Batching` is that part of :class:`~._pipeline.CallPipeline`; a single call's
preparation (``prepare``) and its end (``finish``) are the pipeline's own.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry._calls import CallParseError, next_batch_id, parse_call, split_passthrough
from toolregistry._results import error_result
from toolregistry.hookspecs import UNOBSERVED
from toolregistry.types import ToolCall, ToolResult

if TYPE_CHECKING:
    from toolregistry._hooks import Hooks
    from toolregistry._registry import ToolRegistry

    from ._pipeline import Prepared

__all__ = ["Batch", "Batching"]


class Batch:
    """A batch's observers, their tokens and the batch's context (see ``batch_observer``)."""

    __slots__ = ("context", "observers", "tokens")

    def __init__(self, observers: tuple[Any, ...], tokens: list[Any],
                 context: contextvars.Context) -> None:
        self.observers = observers
        self.tokens = tokens
        self.context = context


class Batching:
    """Batches through the call pipeline (see the module docstring)."""

    _registry: ToolRegistry
    _hooks: Hooks
    _hooks_version: int
    _batch_observers: tuple[Any, ...] | None
    closed: bool

    if TYPE_CHECKING:  # the pipeline's own, used here
        def invalidate(self, names: Iterable[str] | None = None) -> None: ...

        def refused(self, call: ToolCall | None, result: ToolResult) -> None: ...

        def _closed_result(self, call_id: str | None, name: str) -> ToolResult: ...

        def _prepare_one(self, call: ToolCall, context: Mapping[str, Any] | None,
                         timeout: float | None, async_path: bool, observed: bool = False
                         ) -> Prepared | ToolResult: ...

    def _parse(self, raw: Any, index: int) -> ToolCall | ToolResult:
        try:
            call = parse_call(raw, index, self._registry.formats)
        except CallParseError as exc:  # an empty id is no id
            return error_result(exc.call.id or None, exc.call.name, exc.kind, str(exc))
        except Exception as exc:  # defensive: a call object that breaks on inspection
            return error_result(None, "", "malformed_call",
                                f"tool call #{index} could not be read: "
                                f"{type(exc).__name__}: {exc}")
        if not call.id:  # missing, or empty: answered under an id of its own
            call.id = f"call_{os.urandom(6).hex()}"
            call.extra["generated_id"] = True
        return call

    def prepare_batch(self, calls: Iterable[Any], context: Mapping[str, Any] | None,
                      timeout: float | None, async_path: bool = False
                      ) -> tuple[list[Prepared | ToolResult], Batch | None]:
        """Every call of a batch parsed and prepared, in order (error results logged), and
        the batch's observers (``None`` when there are none; then ``batch_finished`` must be
        told the results)."""
        kept, _, revealed = split_passthrough(_as_list(calls), self._registry.formats)
        if revealed:  # the provider's own tool search loaded them
            self._registry.reveal_tools(revealed)
        parsed = [self._parse(raw, index) for index, raw in kept]
        batch_id = next_batch_id()
        for call in parsed:
            if isinstance(call, ToolCall):
                call.batch_id = batch_id
        observers = self.batch_observers()
        if not observers:
            return self._prepare_parsed(parsed, context, timeout, async_path, False), None
        here = contextvars.copy_context()
        calls_ = [c for c in parsed if isinstance(c, ToolCall)]
        tokens = here.run(self._hooks.batch_started, observers, calls_)
        if tokens.count(UNOBSERVED) == len(tokens):  # every observer sits the batch out
            return self._prepare_parsed(parsed, context, timeout, async_path, False), None
        items = here.run(self._prepare_parsed, parsed, context, timeout, async_path, True)
        return items, Batch(observers, tokens, here)

    def _prepare_parsed(self, parsed: list[ToolCall | ToolResult],
                        context: Mapping[str, Any] | None, timeout: float | None,
                        async_path: bool, observed: bool) -> list[Prepared | ToolResult]:
        from ._pipeline import log_result  # the pipeline imports this module

        items: list[Prepared | ToolResult] = []
        closed = self.closed or self._registry.closed
        for call in parsed:
            if isinstance(call, ToolResult):
                item: Prepared | ToolResult = call
                self.refused(None, call)
            elif closed:
                item = self._closed_result(call.id, call.name)
            else:
                item = self._prepare_one(call, context, timeout, async_path, observed)
            if isinstance(item, ToolResult):
                log_result(item)
            items.append(item)
        return items

    def batch_observers(self) -> tuple[Any, ...]:
        """The registry's batch observers (asked once, again after a setting or plugin
        change)."""
        if self._hooks_version != self._hooks.version:
            self._hooks_version = self._hooks.version
            self.invalidate()
        observers = self._batch_observers
        if observers is None:
            observers = self._batch_observers = self._hooks.batch_observer(self._registry)
        return observers

    def batch_finished(self, batch: Batch | None, results: list[ToolResult]) -> list[ToolResult]:
        """Tell the batch's observers (if any) the batch ended; returns ``results``."""
        if batch is not None:
            batch.context.copy().run(self._hooks.batch_finished, batch.observers, results,
                                     batch.tokens)
        return results


def _as_list(calls: Iterable[Any]) -> list[Any]:
    if isinstance(calls, (str, bytes, bytearray)):
        raise TypeError("execute_tool_calls needs a list of tool calls, got a "
                        f"{type(calls).__name__}: parse the model's response first")
    if isinstance(calls, (Mapping, ToolCall)) or (
            not isinstance(calls, (list, tuple)) and hasattr(calls, "model_dump")):
        return [calls]  # one call on its own (pydantic SDK objects iterate over their fields)
    try:
        return list(calls)
    except TypeError:
        return [calls]  # a single call object
