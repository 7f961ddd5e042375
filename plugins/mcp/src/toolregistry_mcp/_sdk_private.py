"""The one place that reads private attributes of the ``mcp`` SDK's ``ClientSession``.

A request whose result the SDK must not validate (a tool listing that breaks the SDK's
models, read leniently tool by tool; a 2025-11-25 task-augmented ``tools/call``, whose
``CreateTaskResult`` the SDK's ``tools/call`` result type does not admit) has no public
path: ``ClientSession.send_request`` validates every result of a method it knows. Such a
request goes out through the session's JSON-RPC dispatcher (``_dispatcher``), carrying the
session's own stamp (``_stamp``: the 2026-07-28 ``_meta`` envelope and headers, or the
handshake's version header) like every other request of the session. Everything else uses
the SDK's public API. ``tests/test_sdk_private.py`` fails when a new SDK drops or reshapes
either attribute.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SDKChanged", "send_unvalidated"]


class SDKChanged(RuntimeError):
    """The installed ``mcp`` SDK no longer has the private attribute this module uses."""


def _private(session: Any, name: str) -> Any:
    value = getattr(session, name, None)
    if value is None:
        import importlib.metadata

        raise SDKChanged(
            f"the installed mcp SDK ({importlib.metadata.version('mcp')}) has no "
            f"ClientSession.{name}, which toolregistry-mcp uses to send a request whose "
            "result the SDK would reject; install the mcp version toolregistry-mcp declares")
    return value


async def send_unvalidated(session: Any, method: str, params: dict[str, Any],
                           timeout: float | None = None, on_progress: Any = None
                           ) -> dict[str, Any]:
    """Send ``method`` on ``session`` as the session sends any request, and return the raw
    result dict (no validation by the SDK)."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {}
    _private(session, "_stamp")(data, opts)
    if on_progress is not None:
        opts["on_progress"] = on_progress
    if timeout is not None:
        opts["timeout"] = timeout
    result = await _private(session, "_dispatcher").send_raw_request(
        method, data["params"] or None, opts)
    return dict(result)
