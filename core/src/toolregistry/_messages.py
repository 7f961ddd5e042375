"""Tool-call and tool-result messages, ids matched: the part that is the same for every
provider.

``build_messages(calls, results, fmt)`` pairs each call the model made with its result, checks
that they match (same count, same order, same ids), gives a call without an id the id of its
result (``execute_tool_calls`` generates one), and hands the pairs to the format's
``answer_messages`` (``toolregistry.formats``), which shapes the assistant message that echoes
the calls and the result messages the provider expects.

Calls are given as the model returned them (or as :class:`ToolCall`); a call whose arguments
were malformed is echoed as sent, so its error result can still answer it by id. A call that
is not a call at all is dropped: there is nothing the provider could match an answer to.
The provider's own server-side tool-search items among the calls get no result: they are
echoed back by the format (``echo_passthrough``), in the model's order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ._calls import CallParseError, parse_call, split_passthrough
from .formats import BUILTIN, Answer, FormatTable, as_dict
from .types import ToolCall, ToolResult

__all__ = ["build_messages"]


def _lenient(raw: Any, index: int, formats: FormatTable) -> ToolCall | None:
    if isinstance(raw, ToolCall):
        return raw
    try:
        return parse_call(raw, index, formats)
    except CallParseError as exc:
        return exc.call if exc.call.name else None


def build_messages(calls: Sequence[Any], results: Sequence[ToolResult],
                   fmt: str, formats: FormatTable | None = None
                   ) -> list[dict[str, Any]]:
    """Messages that echo the model's calls and answer them (see the module docstring).

    ``results`` are those ``execute_tool_calls`` returned for ``calls``, in the same order;
    ``fmt`` names a format of ``formats`` (default: the built-in formats).
    """
    table = BUILTIN if formats is None else formats
    kept, passthrough, _ = split_passthrough(calls, table)
    calls = [c for _, c in kept]
    results = list(results)
    if len(calls) != len(results):
        raise ValueError(f"build_tool_call_messages: {len(calls)} calls but {len(results)} "
                         "results; pass the results execute_tool_calls returned for these calls")
    answerer = table.get(fmt, "messages")
    answers: list[Answer] = []
    for i, (raw, result) in enumerate(zip(calls, results)):
        if not isinstance(result, ToolResult):
            raise TypeError(f"result #{i} is a {type(result).__name__}, not a ToolResult")
        call = _lenient(raw, i, table)
        if call is None:
            continue  # not a call at all: nothing the provider could match an answer to
        had_id = bool(call.id) and not call.extra.get("generated_id")  # "" is no id
        if had_id and result.call_id is not None and result.call_id != call.id:
            raise ValueError(f"result #{i} answers call id {result.call_id!r}, but call #{i} "
                             f"has id {call.id!r}: keep results in the order of the calls")
        if result.call_id is not None:
            call_id = result.call_id
        elif call.id:
            call_id = call.id
        else:
            call_id = f"call_{os.urandom(6).hex()}"
        echo = ToolCall(call.name, call.arguments, call_id, call.raw_arguments, call.format,
                        call.reason, dict(call.extra), call.raw)
        if not had_id:
            echo.extra["generated_id"] = True
        answers.append(Answer(echo, result, had_id))
    messages = answerer.answer_messages(answers)
    if passthrough:
        messages = answerer.echo_passthrough(messages, [as_dict(item) for _, item in passthrough])
    return messages
