"""The registry's pending approvals (``registry.approvals``): the calls its authorizing plugins
hold for a person, listed, decided and resumed through their ``approval_queue`` hooks, whichever
plugin holds them."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .types import ToolResult, approval_id_of

if TYPE_CHECKING:
    from ._hooks import Hooks
    from ._registry import ToolRegistry
    from .hookspecs import ApprovalQueue, ApprovalRecord

__all__ = ["Approvals"]

DECISIONS = ("approve", "deny")
# (``Approvals.list`` shadows the builtin inside the class)
Records = list["ApprovalRecord"]
Results = list[ToolResult]
Positions = dict[int, list[int]]
Items = list[Any]


class Approvals:
    """The calls held for a person's approval by the authorizing plugins of one registry
    (``registry.approvals``). Approval ids are the ``approval.id`` of pending results."""

    __slots__ = ("_hooks", "_registry")

    def __init__(self, registry: ToolRegistry, hooks: Hooks) -> None:
        self._registry = registry
        self._hooks = hooks

    def _queues(self) -> tuple[ApprovalQueue, ...]:
        return self._hooks.approval_queue(self._registry)

    @property
    def available(self) -> bool:
        """Whether a loaded plugin holds calls for approval here (offers a queue)."""
        return bool(self._queues())

    def list(self, status: str | None = "pending") -> Records:
        """The held calls in ``status`` (``pending`` by default; ``None``: every one kept),
        each queue's oldest first."""
        return [record for queue in self._queues() for record in queue.approvals(status)]

    def __contains__(self, approval_id: object) -> bool:
        """Whether a plugin of this registry holds an approval with this id."""
        return any(approval_id in queue for queue in self._queues())

    def _owner(self, approval_id: str, queues: Sequence[ApprovalQueue] | None = None
               ) -> ApprovalQueue:
        queues = self._queues() if queues is None else queues
        for queue in queues:
            if approval_id in queue:
                return queue
        why = "" if queues else (" (no installed plugin holds calls for approval: install "
                                 "toolregistry-policy)")
        raise LookupError(f"unknown approval id {approval_id!r} in registry "
                          f"{self._registry.name!r}{why}")

    def get(self, approval_id: str) -> ApprovalRecord:
        """The approval with this id; a ``LookupError`` when no plugin holds it."""
        return self._owner(approval_id).get(approval_id)

    def decide(self, approval_id: str, decision: str, *, by: str | None = None,
               note: str | None = None, arguments: Mapping[str, Any] | None = None
               ) -> ApprovalRecord:
        """A person's decision on a pending call: ``"approve"`` (with changed ``arguments``,
        checked against the tool's schema: ``ValueError``) or ``"deny"`` (``note`` is what
        the model reads); ``by`` says who. The call runs when resumed. A ``LookupError`` when
        the id is unknown or the call was decided already."""
        if decision not in DECISIONS:
            raise ValueError(f"decide(): decision must be 'approve' or 'deny', got "
                             f"{decision!r}")
        if arguments is not None and decision == "deny":
            raise ValueError("decide(): arguments go with 'approve' only")
        return self._owner(approval_id).decide(approval_id, decision, by=by, note=note,
                                               arguments=arguments)

    def _plan(self, items: Iterable[Any]
              ) -> tuple[Items, Positions, dict[int, ApprovalQueue]]:
        """The items, and which of them each owning queue resumes (by position); an unknown
        id is a ``LookupError`` before anything runs."""
        items = builtins.list(items)
        queues = self._queues()
        positions: Positions = {}
        owners: dict[int, ApprovalQueue] = {}
        for index, item in enumerate(items):
            approval_id = approval_id_of(item)
            if approval_id is None:
                continue
            queue = self._owner(approval_id, queues)
            owners[id(queue)] = queue
            positions.setdefault(id(queue), []).append(index)
        return items, positions, owners

    @staticmethod
    def _merged(items: Items, positions: Positions, answers: dict[int, Results]
                ) -> Results:
        out: Items = builtins.list(items)
        for key, where in positions.items():
            for index, result in zip(where, answers[key]):
                out[index] = result
        return out

    def resume(self, items: Iterable[Any], *, context: Mapping[str, Any] | None = None,
               timeout: float | None = None) -> Results:
        """Run the decided calls among ``items`` (a batch's results, approval ids,
        ``ApprovalRequest`` objects or their dicts) once each, through the plugin that holds
        them: one result per item, in order (results that are not pending come back as they
        are; an undecided call stays pending; a denied one answers with the person's
        reason). An unknown or used id is a ``LookupError``, and then nothing runs."""
        items, positions, owners = self._plan(items)
        answers = {key: owners[key].resume([items[i] for i in where], context=context,
                                           timeout=timeout)
                   for key, where in positions.items()}
        return self._merged(items, positions, answers)

    async def aresume(self, items: Iterable[Any], *, context: Mapping[str, Any] | None = None,
                      timeout: float | None = None) -> Results:
        """Async twin of :meth:`resume`."""
        items, positions, owners = self._plan(items)
        answers: dict[int, Results] = {}
        for key, where in positions.items():
            answers[key] = await owners[key].aresume([items[i] for i in where],
                                                     context=context, timeout=timeout)
        return self._merged(items, positions, answers)

