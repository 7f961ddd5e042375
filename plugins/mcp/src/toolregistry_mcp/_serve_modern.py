"""What a served registry answers at protocol revision 2026-07-28 beyond lists and calls:
``server/discover`` naming every revision it serves, cache hints from the serve settings,
sealed ``requestState``, and approvals asked of the client's user with an
``InputRequiredResult`` (multi-round-trip requests)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from toolregistry import ToolRegistry, ToolResult

    from ._serve_config import CacheHintEntry

__all__ = ["APPROVAL_INPUT", "ApprovalAsk", "cache_hints", "can_answer", "install", "is_modern",
           "served_versions"]

APPROVAL_INPUT = "toolregistry_approval"
"""The key of the elicitation that asks a client's user to approve a held call."""
_STATE_KEY = "toolregistry.approval"


def served_versions() -> list[str]:
    """Every protocol revision the server answers, newest first: the 2026-07-28 envelope's
    and those the ``initialize`` handshake negotiates."""
    from mcp_types.version import (
        HANDSHAKE_PROTOCOL_VERSIONS,
        KNOWN_PROTOCOL_VERSIONS,
        MODERN_PROTOCOL_VERSIONS,
    )

    served = set(HANDSHAKE_PROTOCOL_VERSIONS) | set(MODERN_PROTOCOL_VERSIONS)
    return [v for v in reversed(KNOWN_PROTOCOL_VERSIONS) if v in served]


def cache_hints(entries: Mapping[str, CacheHintEntry]) -> Any:
    """The SDK's ``cache_hints`` from the serve settings' ``cache-hints`` table."""
    from mcp.server.caching import CacheHint

    return {method: CacheHint(ttl_ms=entry.ttl_ms, scope=entry.cache_scope)
            for method, entry in entries.items()}


def _state_security(key_env: str | None, principal: Callable[[Any], str | None]) -> Any:
    """How ``requestState`` is sealed: under the secret of ``key_env`` (every worker and
    process sharing it accepts the others' state), else a key made now for this process."""
    from mcp.server.request_state import RequestStateSecurity

    if key_env is None:
        return RequestStateSecurity(keys=[os.urandom(32)], bind_principal=principal)
    secret = os.environ.get(key_env, "")
    if len(secret.encode()) < 32:
        raise ConfigError(f"serve: request-state-key-env = {key_env!r}: the environment "
                          "variable must hold a secret of at least 32 bytes ("
                          f"{'it is not set' if not secret else 'it is shorter'})")
    return RequestStateSecurity(keys=[secret], bind_principal=principal)


def install(server: Server[Any], *, key_env: str | None,
            principal: Callable[[Any], str | None]) -> None:
    """``server/discover`` naming :func:`served_versions`, and ``requestState`` sealed (bound
    to the request, and to the caller's token when it has one; refused when changed)."""
    import mcp_types as types
    from mcp.server.request_state import RequestStateBoundary

    async def discover(ctx: Any, params: types.RequestParams | None) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=served_versions(),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions)

    server.add_request_handler("server/discover", types.RequestParams, discover)
    server.middleware.append(RequestStateBoundary(_state_security(key_env, principal),
                                                  default_audience=server.name))


def is_modern(ctx: Any) -> bool:
    """Whether this request is of the 2026-07-28 protocol (input requests are answered with
    a retry)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def can_answer(ctx: Any) -> bool:
    """Whether this request's client can be asked for an approval: 2026-07-28, and it declared
    elicitation (form mode: an empty declaration means form)."""
    if not is_modern(ctx):
        return False
    capabilities = getattr(ctx.session, "client_capabilities", None)
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None


class ApprovalAsk:
    """A held call asked of the client's user, and the user's answer on the retry."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    @staticmethod
    def state(params: types.CallToolRequestParams) -> dict[str, Any] | None:
        """The approval this retry answers (``None``: the request is not such a retry).
        The state is the server's own: the boundary unsealed and checked it."""
        raw = params.request_state
        if not raw:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get(_STATE_KEY), str):
            return None
        return data

    @staticmethod
    def question(result: ToolResult) -> types.InputRequiredResult:
        """The ``InputRequiredResult`` asking the user to approve the held ``result``."""
        import mcp_types as types

        request = result.approval
        assert request is not None
        arguments = json.dumps(dict(request.arguments), sort_keys=True, ensure_ascii=False,
                               default=str)
        why = f" ({request.message})" if request.message else ""
        message = (f"The tool {request.tool!r} needs your approval to run{why}, with the "
                   f"arguments {arguments}. Approve it?")
        schema = {"type": "object", "properties": {"approve": {
            "type": "boolean", "title": "Approve",
            "description": f"run {request.tool!r} with these arguments"}},
            "required": ["approve"]}
        ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=message, requested_schema=schema))
        state = json.dumps({_STATE_KEY: request.id, "caller": request.caller})
        return types.InputRequiredResult(input_requests={APPROVAL_INPUT: ask},
                                         request_state=state)

    async def resume(self, state: dict[str, Any], params: types.CallToolRequestParams,
                     context: Mapping[str, Any]) -> ToolResult:
        """The held call of ``state``, decided by the user's answer (:meth:`decide`) and
        resumed: its result (still pending when the user dismissed the question; an error
        result when it was used already or is gone)."""
        approval_id = self.decide(state, params)
        try:
            [result] = await self.registry.approvals.aresume([approval_id], context=context)
        except LookupError as exc:
            from toolregistry import ToolResult

            return ToolResult(call_id=None, name=params.name, is_error=True,
                              error_kind="execution",
                              content=f"Error: {exc}; the call did not run again.")
        return result

    def decide(self, state: dict[str, Any], params: types.CallToolRequestParams) -> str:
        """Take the user's answer to the approval in ``state`` through ``registry.approvals``:
        approve on yes, deny on no; an answer left out (dismissed) decides nothing, the call
        stays held for a person. The approval id."""
        approval_id: str = state[_STATE_KEY]
        answer = (params.input_responses or {}).get(APPROVAL_INPUT)
        action = getattr(answer, "action", None)
        content = getattr(answer, "content", None) or {}
        if action == "accept" and content.get("approve") is True:
            decision, note = "approve", None
        elif action == "decline" or (action == "accept" and content.get("approve") is False):
            decision, note = "deny", "the user declined it"
        else:
            return approval_id
        by = state.get("caller") or "mcp-client"
        try:
            self.registry.approvals.decide(approval_id, decision, by=str(by), note=note)
        except LookupError as exc:  # decided already elsewhere, or gone: resume says which
            log.info("mcp.approval_undecided", approval=approval_id, error=str(exc))
        return approval_id
