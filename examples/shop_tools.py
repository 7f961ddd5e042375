"""The tools of the deferral examples (``deferral_<provider>.py``), and their recorded turns.

A shop's support assistant: ``get_order`` is always sent; ``refund_order``,
``track_package``, ``change_address`` and ``cancel_subscription`` are deferred, found by a
search when a conversation needs them. ``undiscovered_calls="refuse"``: a deferred tool runs
only once a search found it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolregistry import ToolMetadata, ToolRegistry

RECORDED = Path(__file__).resolve().parent / "recorded"
ORDERS = {"A7": {"item": "ceramic teapot", "status": "delivered", "total": 34.0}}


def get_order(order_id: str) -> dict[str, Any]:
    """Look up an order: its item, delivery status and total."""
    return {"order_id": order_id, **ORDERS.get(order_id, {"status": "unknown"})}


def refund_order(order_id: str, reason: str) -> str:
    """Refund an order to the customer's card.

    Args:
        order_id: The order to refund, e.g. "A7".
        reason: Why, in the customer's words.
    """
    total = ORDERS.get(order_id, {}).get("total", 0.0)
    return f"refunded {total:.2f} EUR for order {order_id} ({reason})"


def track_package(tracking_number: str) -> str:
    """Where a parcel is now, by its carrier's tracking number."""
    return f"{tracking_number}: out for delivery"


def change_address(order_id: str, address: str) -> str:
    """Change the delivery address of an order that has not shipped yet."""
    return f"order {order_id} now ships to {address}"


def cancel_subscription(customer_id: str) -> str:
    """Cancel a customer's monthly subscription box."""
    return f"subscription of {customer_id} cancelled"


def build_registry() -> ToolRegistry:
    """The shop's registry, discovery on (explicit arguments win over any
    ``[tool.toolregistry]`` table found next to where the example runs)."""
    registry = ToolRegistry("shop-demo", tool_discovery=True, think_augment=False,
                            undiscovered_calls="refuse")
    registry.register(get_order)
    for fn in (refund_order, track_package, change_address, cancel_subscription):
        registry.register(fn, metadata=ToolMetadata(defer=True))
    return registry


def recording(name: str) -> list[dict[str, Any]]:
    """The recorded responses of one example, turn by turn (``recorded/<name>.json``)."""
    responses: list[dict[str, Any]] = json.loads(
        (RECORDED / f"{name}.json").read_text(encoding="utf-8"))
    return responses
