"""Tool-call and tool-result messages in each provider's shape, ids matched."""

from __future__ import annotations

import json
from typing import Any

from .types import Image, ToolCall, ToolResult


def _text_and_images(result: ToolResult) -> tuple[str, list[Image]]:
    return result.text, result.images


def _args_json(call: ToolCall) -> str:
    if isinstance(call.raw_arguments, str):
        return call.raw_arguments
    return json.dumps(call.arguments or {}, ensure_ascii=False)


def build_messages(calls: list[ToolCall], results: list[ToolResult], fmt: str
                   ) -> list[dict[str, Any]]:
    """Messages that echo the model's calls and answer them (see ``build_tool_call_messages``)."""
    if len(calls) != len(results):
        raise ValueError(f"build_tool_call_messages: {len(calls)} calls but {len(results)} "
                         "results; pass the results execute_tool_calls returned for these calls")
    for i, (call, result) in enumerate(zip(calls, results)):
        if call.id is None and result.call_id is not None:
            call.id = result.call_id
        if result.call_id is not None and call.id is not None and result.call_id != call.id:
            raise ValueError(f"result #{i} answers call id {result.call_id!r}, but call #{i} "
                             f"has id {call.id!r}: keep results in the order of the calls")
    builder = _BUILDERS.get(fmt)
    if builder is None:
        raise ValueError(f"api_format {fmt!r} has no chat messages; use openai-chat, "
                         "openai-responses, anthropic or gemini")
    return builder(calls, results)


def _openai_chat(calls: list[ToolCall], results: list[ToolResult]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": _args_json(c)}}
            for c in calls
        ],
    }]
    image_parts: list[dict[str, Any]] = []
    for call, result in zip(calls, results):
        text, images = _text_and_images(result)
        if images and not text:
            text = f"[{len(images)} image(s) follow in the next user message]"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if images:
            image_parts.append({"type": "text",
                                "text": f"Images returned by {call.name} (call {call.id}):"})
            image_parts.extend({"type": "image_url", "image_url": {"url": img.as_url()}}
                               for img in images)
    if image_parts:  # tool messages carry text only: images follow as a user message
        messages.append({"role": "user", "content": image_parts})
    return messages


def _openai_responses(calls: list[ToolCall], results: list[ToolResult]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": _args_json(c)}
        for c in calls
    ]
    for call, result in zip(calls, results):
        text, images = _text_and_images(result)
        output: Any = text
        if images:
            output = ([{"type": "input_text", "text": text}] if text else []) + [
                {"type": "input_image", "image_url": img.as_url()} for img in images]
        items.append({"type": "function_call_output", "call_id": call.id, "output": output})
    return items


def _anthropic_image(img: Image) -> dict[str, Any]:
    data = img.base64() if img.url is None or img.url.startswith("data:") else None
    if data is not None:
        return {"type": "image",
                "source": {"type": "base64", "media_type": img.media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": img.url}}


def _anthropic(calls: list[ToolCall], results: list[ToolResult]) -> list[dict[str, Any]]:
    assistant = {"role": "assistant", "content": [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}}
        for c in calls
    ]}
    blocks = []
    for call, result in zip(calls, results):
        text, images = _text_and_images(result)
        content: Any = text
        if images:
            content = ([{"type": "text", "text": text}] if text else []) + [
                _anthropic_image(img) for img in images]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": content}
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    return [assistant, {"role": "user", "content": blocks}]


def _gemini(calls: list[ToolCall], results: list[ToolResult]) -> list[dict[str, Any]]:
    model_parts = []
    for c in calls:
        fc: dict[str, Any] = {"name": c.name, "args": c.arguments or {}}
        if c.id is not None and not c.extra.get("generated_id"):
            fc["id"] = c.id
        model_parts.append({"function_call": fc})
    user_parts: list[dict[str, Any]] = []
    for call, result in zip(calls, results):
        text, images = _text_and_images(result)
        payload: dict[str, Any] = {"error": text} if result.is_error else {"output": _maybe_json(
            text, result)}
        fr: dict[str, Any] = {"name": call.name, "response": payload}
        if call.id is not None and not call.extra.get("generated_id"):
            fr["id"] = call.id
        user_parts.append({"function_response": fr})
        for img in images:
            data = img.read_bytes()
            if data is not None:
                user_parts.append({"inline_data": {"mime_type": img.media_type, "data": data}})
            else:
                user_parts.append({"file_data": {"mime_type": img.media_type,
                                                 "file_uri": img.url}})
    return [{"role": "model", "parts": model_parts}, {"role": "user", "parts": user_parts}]


def _maybe_json(text: str, result: ToolResult) -> Any:
    if isinstance(result.value, (dict, list)) and text and text[0] in "[{":
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
