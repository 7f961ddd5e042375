"""Tool-call and tool-result messages in each provider's shape, ids matched.

``build_messages(calls, results, fmt)`` returns what goes into the conversation after the
model's turn: the assistant message that echoes the calls, then the result messages.

================  =========================================  ===================================
format            results                                    images
================  =========================================  ===================================
openai-chat       one ``role: tool`` message per call         a ``role: user`` message after the
                  (``tool_call_id``); errors start "Error:"   tool messages (tool messages carry
                                                              text only)
openai-responses  ``function_call_output`` items (call_id)    ``input_image`` parts in ``output``
anthropic         one user message of ``tool_result``         ``image`` blocks inside the
                  blocks (``tool_use_id``, ``is_error``)      ``tool_result`` content
gemini            one user content of ``function_response``   ``inline_data`` parts (bytes) after
                  parts (``id`` echoed when the model sent    the responses; remote URLs as
                  one; ``response.error`` for errors)         ``file_data``
================  =========================================  ===================================

Calls are given as the model returned them (or as :class:`ToolCall`); a call whose arguments
were malformed is echoed as sent, so its error result can still answer it by id. Calls without
an id take the id of their result (``execute_tool_calls`` generates one); Gemini calls that had
no id get none echoed (Gemini then matches by order and name).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from ._calls import CallParseError, parse_call
from .types import Image, ToolCall, ToolResult

__all__ = ["build_messages"]


def _lenient(raw: Any, index: int) -> ToolCall | None:
    if isinstance(raw, ToolCall):
        return raw
    try:
        return parse_call(raw, index)
    except CallParseError as exc:
        return exc.call if exc.call.name else None


def _args_json(call: ToolCall) -> str:
    if isinstance(call.raw_arguments, str):
        return call.raw_arguments
    try:
        return json.dumps(call.arguments or {}, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return "{}"


def build_messages(calls: Sequence[Any], results: Sequence[ToolResult], fmt: str
                   ) -> list[dict[str, Any]]:
    """Messages that echo the model's calls and answer them (see the module docstring).

    ``results`` are those ``execute_tool_calls`` returned for ``calls``, in the same order.
    """
    calls = list(calls)
    results = list(results)
    if len(calls) != len(results):
        raise ValueError(f"build_tool_call_messages: {len(calls)} calls but {len(results)} "
                         "results; pass the results execute_tool_calls returned for these calls")
    builder = _BUILDERS.get(fmt)
    if builder is None:
        raise ValueError(f"api_format {fmt!r} has no chat messages; use openai-chat, "
                         "openai-responses, anthropic or gemini")
    pairs: list[tuple[ToolCall, ToolResult, bool]] = []
    for i, (raw, result) in enumerate(zip(calls, results)):
        if not isinstance(result, ToolResult):
            raise TypeError(f"result #{i} is a {type(result).__name__}, not a ToolResult")
        call = _lenient(raw, i)
        if call is None:
            continue  # not a call at all: nothing the provider could match an answer to
        had_id = call.id is not None and not call.extra.get("generated_id")
        if call.id is not None and result.call_id is not None and result.call_id != call.id \
                and had_id:
            raise ValueError(f"result #{i} answers call id {result.call_id!r}, but call #{i} "
                             f"has id {call.id!r}: keep results in the order of the calls")
        if result.call_id is not None:
            call_id = result.call_id
        elif call.id is not None:
            call_id = call.id
        else:
            call_id = f"call_{os.urandom(6).hex()}"
        echo = ToolCall(call.name, call.arguments, call_id, call.raw_arguments, call.format,
                        call.reason, dict(call.extra), call.raw)
        if not had_id:
            echo.extra["generated_id"] = True
        pairs.append((echo, result, had_id))
    return builder(pairs)


Pairs = list[tuple[ToolCall, ToolResult, bool]]


def _openai_chat(pairs: Pairs) -> list[dict[str, Any]]:
    if not pairs:
        return []
    messages: list[dict[str, Any]] = [{
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": _args_json(c)}}
            for c, _, _ in pairs
        ],
    }]
    image_parts: list[dict[str, Any]] = []
    for call, result, _ in pairs:
        text, images = result.text, result.images
        if images:
            note = f"[{len(images)} image(s) follow in the next user message]"
            text = f"{text}\n{note}" if text else note
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if images:
            image_parts.append({"type": "text",
                                "text": f"Images returned by {call.name} (call {call.id}):"})
            image_parts.extend(_openai_image(img) for img in images)
    if image_parts:  # tool messages carry text only: images follow as a user message
        messages.append({"role": "user", "content": image_parts})
    return messages


def _openai_image(img: Image) -> dict[str, Any]:
    part: dict[str, Any] = {"url": img.as_url()}
    if img.detail:
        part["detail"] = img.detail
    return {"type": "image_url", "image_url": part}


def _openai_responses(pairs: Pairs) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": _args_json(c)}
        for c, _, _ in pairs
    ]
    for call, result, _ in pairs:
        text, images = result.text, result.images
        output: Any = text
        if images:
            output = ([{"type": "input_text", "text": text}] if text else []) + [
                {"type": "input_image", "image_url": img.as_url(),
                 "detail": img.detail or "auto"} for img in images]
        items.append({"type": "function_call_output", "call_id": call.id, "output": output})
    return items


def _anthropic_image(img: Image) -> dict[str, Any]:
    if img.url is not None and not img.url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": img.url}}
    return {"type": "image",
            "source": {"type": "base64", "media_type": img.media_type, "data": img.base64()}}


def _anthropic(pairs: Pairs) -> list[dict[str, Any]]:
    if not pairs:
        return []
    assistant = {"role": "assistant", "content": [
        {"type": "tool_use", "id": c.id, "name": c.name,
         "input": c.arguments if c.arguments is not None else {}}
        for c, _, _ in pairs
    ]}
    blocks = []
    for call, result, _ in pairs:
        text, images = result.text, result.images
        content: Any = text
        if images:
            content = ([{"type": "text", "text": text}] if text else []) + [
                _anthropic_image(img) for img in images]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": content}
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    return [assistant, {"role": "user", "content": blocks}]


def _gemini(pairs: Pairs) -> list[dict[str, Any]]:
    if not pairs:
        return []
    model_parts = []
    for c, _, had_id in pairs:
        fc: dict[str, Any] = {"name": c.name,
                              "args": c.arguments if c.arguments is not None else {}}
        if had_id:
            fc["id"] = c.id
        part: dict[str, Any] = {"function_call": fc}
        signature = c.extra.get("thought_signature")
        if signature is not None:
            part["thought_signature"] = signature
        model_parts.append(part)
    user_parts: list[dict[str, Any]] = []
    images_after: list[dict[str, Any]] = []
    for call, result, had_id in pairs:
        text, images = result.text, result.images
        payload: dict[str, Any] = (
            {"error": text} if result.is_error else {"output": _maybe_json(text, result)})
        fr: dict[str, Any] = {"name": call.name, "response": payload}
        if had_id:
            fr["id"] = call.id
        user_parts.append({"function_response": fr})
        for img in images:
            data = img.read_bytes()
            if data is not None:
                images_after.append({"inline_data": {"mime_type": img.media_type,
                                                     "data": data}})
            else:
                images_after.append({"file_data": {"mime_type": img.media_type,
                                                   "file_uri": img.url}})
    return [{"role": "model", "parts": model_parts},
            {"role": "user", "parts": user_parts + images_after}]


def _maybe_json(text: str, result: ToolResult) -> Any:
    """Structured output stays structured for Gemini (``response`` is a JSON object)."""
    if isinstance(result.content, str) and text[:1] in ("{", "[") and not isinstance(
            result.value, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


_BUILDERS = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
