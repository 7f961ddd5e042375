"""The ``ToolMessage.artifact`` of a registry result: plain JSON data, and back.

LangGraph keeps every message of a thread in its checkpointer (msgpack, or JSON for some
stores) and LangChain's ``messages_to_dict`` is what applications ``json.dumps``. Both take only
data they know, so the artifact is a JSON-ready dict rather than the
:class:`~toolregistry.ToolResult` object itself; :func:`from_tool_message` rebuilds the
``ToolResult`` from a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import pydantic_core

from toolregistry.types import ApprovalRequest, ToolResult

from ._content import from_langchain_content

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage

ARTIFACT_TYPE = "toolregistry.tool_result"
"""The ``type`` key that marks an artifact made by this plugin."""


def _jsonable(value: Any) -> Any:
    # The kernel's rule for values it sends to the model (docs/execution.md): JSON types as
    # they are, models / dataclasses / datetimes / decimals / enums / UUIDs / sets in their JSON
    # form, anything else as str(). Bytes (an OpenAPI binary response) stay whole, in base64.
    return pydantic_core.to_jsonable_python(value, fallback=str, bytes_mode="base64")


def result_artifact(result: ToolResult) -> dict[str, Any]:
    """The artifact for the ``ToolMessage`` answering ``result``: JSON data only, so that
    LangGraph checkpointers and ``json.dumps(messages_to_dict(...))`` store it and give it back
    equal. The content is left out: it is the message's own ``content``."""
    return {
        "type": ARTIFACT_TYPE,
        "call_id": result.call_id,
        "name": result.name,
        "is_error": result.is_error,
        "error_kind": result.error_kind,
        "value": _jsonable(result.value),
        "reason": result.reason,
        "duration": result.duration,
        "artifact": _jsonable(result.artifact),
        "metadata": _jsonable(result.metadata),
        "approval": (_jsonable(result.approval.to_dict()) if result.approval is not None
                     else None),
    }


def from_tool_message(message: ToolMessage) -> ToolResult:
    """The :class:`~toolregistry.ToolResult` a ``ToolMessage`` carries.

    For a message made by an exported registry tool or :func:`to_tool_messages` (also after a
    checkpointer or a JSON round trip) every field comes back, ``value`` and ``artifact`` in
    their JSON form, and a pending call's ``approval``. Any other ``ToolMessage`` gives a result built from the message itself:
    its content, status, id and name, with ``value`` = the content and ``artifact`` = the
    message's artifact.
    """
    content = from_langchain_content(message.content)
    data = message.artifact
    if not (isinstance(data, Mapping) and data.get("type") == ARTIFACT_TYPE):
        is_error = message.status == "error"
        return ToolResult(
            call_id=message.tool_call_id, name=message.name or "", content=content,
            is_error=is_error, error_kind="execution" if is_error else None,
            value=message.content, artifact=data,
        )
    return ToolResult(
        call_id=data.get("call_id", message.tool_call_id),
        name=data.get("name") or message.name or "",
        content=content,
        is_error=bool(data.get("is_error", message.status == "error")),
        error_kind=cast(Any, data.get("error_kind")),
        value=data.get("value"),
        reason=data.get("reason"),
        duration=float(data.get("duration") or 0.0),
        artifact=data.get("artifact"),
        metadata=dict(data.get("metadata") or {}),
        approval=_approval(data.get("approval")),
    )


def _approval(data: Any) -> ApprovalRequest | None:
    # A message stored before the approval was kept (or edited by hand) has none: no approval
    # rather than an error, as for any other field the artifact lacks.
    if not isinstance(data, Mapping):
        return None
    try:
        return ApprovalRequest.from_dict(data)
    except ValueError:
        return None
