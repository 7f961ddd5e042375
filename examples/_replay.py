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
