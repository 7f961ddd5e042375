"""A stand-in for a provider client in the examples: recorded responses, no network.

``Replay`` is called exactly like the SDK method it replaces (``client.chat.completions.create``,
``client.responses.create``, ``client.messages.create``, ``client.models.generate_content``).
Each call

1. checks the request against the SDK's own request type (pydantic validation of the SDK's
   TypedDicts / models), so a malformed tool schema, tool choice or message fails here as it
   would at the provider;
2. checks that every tool call of the previous response is answered by id;
3. returns the next recorded response, parsed into the SDK's response type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter


def plain(obj: Any) -> Any:
    """SDK objects (pydantic models) as the dicts they serialise to; lazy iterables drained
    (pydantic validates ``Iterable[...]`` fields lazily: draining makes it check them)."""
    if isinstance(obj, BaseModel):
        return plain(obj.model_dump(exclude_none=True, by_alias=False))
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) or type(obj).__name__ == "ValidatorIterator":
        return [plain(v) for v in obj]
    return obj


def typed_dict_validator(request_type: Any) -> Callable[[dict[str, Any]], None]:
    """Validate a request against an SDK request TypedDict (openai, anthropic)."""
    adapter: TypeAdapter[Any] = TypeAdapter(request_type)

    def validate(request: dict[str, Any]) -> None:
        plain(adapter.validate_python(plain(request)))

    return validate


class Replay:
    """Answers calls with recorded responses after checking each request."""

    def __init__(
        self,
        recorded: list[dict[str, Any]],
        *,
        parse: Callable[[dict[str, Any]], Any],
        validate: Callable[[dict[str, Any]], None],
        asked: Callable[[Any], list[str]],
        answered: Callable[[dict[str, Any]], list[str]],
    ) -> None:
        self._recorded = list(recorded)
        self._parse = parse
        self._validate = validate
        self._asked = asked
        self._answered = answered
        self._pending: list[str] = []
        self.requests: list[dict[str, Any]] = []

    def __call__(self, **request: Any) -> Any:
        if not self._recorded:
            raise RuntimeError("the recording has no response left: the loop ran too long")
        self._validate(request)
        missing = set(self._pending) - set(self._answered(request))
        if missing:
            raise RuntimeError(f"tool calls {sorted(missing)} were not answered in the request")
        self.requests.append(request)
        response = self._parse(self._recorded.pop(0))
        self._pending = self._asked(response)
        return response


# What each provider's request answers: the ids (Gemini: names) of the tool calls whose
# results it carries, for ``Replay(answered=...)``.

def answered_anthropic(request: dict[str, Any]) -> list[str]:
    """``tool_use_id`` of the ``tool_result`` blocks of the last message."""
    last = request["messages"][-1]
    blocks = last["content"] if isinstance(last.get("content"), list) else []
    return [b["tool_use_id"] for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def answered_responses(request: dict[str, Any]) -> list[str]:
    """``call_id`` of the ``function_call_output`` input items (OpenAI Responses)."""
    return [i["call_id"] for i in request["input"]
            if isinstance(i, dict) and i.get("type") == "function_call_output"]


def answered_chat(request: dict[str, Any]) -> list[str]:
    """``tool_call_id`` of the ``tool`` messages (OpenAI Chat Completions)."""
    return [m["tool_call_id"] for m in request["messages"]
            if isinstance(m, dict) and m.get("role") == "tool"]


def validate_gemini(request: dict[str, Any]) -> None:
    """A ``generate_content`` request through google-genai's pydantic types."""
    from google.genai import types

    types.GenerateContentConfig.model_validate(request["config"])
    for content in request["contents"]:
        types.Content.model_validate(content)


def answered_gemini(request: dict[str, Any]) -> list[str]:
    """Names of the ``function_response`` parts of the last content (Gemini)."""
    from google.genai import types

    last = types.Content.model_validate(request["contents"][-1])
    return [p.function_response.name or "" for p in last.parts or [] if p.function_response]
