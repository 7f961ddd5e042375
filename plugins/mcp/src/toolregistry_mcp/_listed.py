"""Tool definitions read back from the tools/list cache, without the SDK's types.

:class:`ListedTool` has the parts of an ``mcp_types.Tool`` that building, screening and
fingerprinting a registry tool read (``name``, ``title``, ``description``, ``input_schema``,
``output_schema``, ``annotations``, ``execution``, ``model_copy``, ``model_dump``), so that a
source whose tool list is cached registers its tools without importing the ``mcp`` SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ListedTool", "tool_json"]

# The wire names of ToolAnnotations' fields and the SDK's field names.
_ANNOTATIONS = {"title": "title", "readOnlyHint": "read_only_hint",
                "destructiveHint": "destructive_hint", "idempotentHint": "idempotent_hint",
                "openWorldHint": "open_world_hint"}
_FIELDS = {"description": "description", "title": "title", "input_schema": "inputSchema",
           "output_schema": "outputSchema"}


class _Annotations:
    """``ToolAnnotations`` as received: the five hints, by their SDK field names."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = {k: v for k, v in raw.items() if k in _ANNOTATIONS and v is not None}
        for wire, field in _ANNOTATIONS.items():
            setattr(self, field, self.raw.get(wire))

    title: str | None
    read_only_hint: bool | None
    destructive_hint: bool | None
    idempotent_hint: bool | None
    open_world_hint: bool | None

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """As the SDK dumps them with ``exclude_none``: field names, no ``None``."""
        return {_ANNOTATIONS[k]: v for k, v in self.raw.items()}

    def model_copy(self, *, update: Mapping[str, Any]) -> _Annotations:
        raw = dict(self.raw)
        wire = {field: name for name, field in _ANNOTATIONS.items()}
        raw.update({wire[k]: v for k, v in update.items()})
        return _Annotations(raw)


class _Execution:
    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.task_support = raw.get("taskSupport")


class ListedTool:
    """One cached tool definition (its JSON as the server listed it)."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        name = raw.get("name")
        schema = raw.get("inputSchema")
        if not isinstance(name, str) or "inputSchema" not in raw:
            raise ValueError("a cached tool needs a 'name' and an 'inputSchema'")
        self.raw = dict(raw)
        self.name: str = name
        self.title: str | None = raw.get("title")
        self.description: str | None = raw.get("description")
        self.input_schema: Any = schema
        self.output_schema: dict[str, Any] | None = raw.get("outputSchema")
        ann, execution = raw.get("annotations"), raw.get("execution")
        self.annotations = _Annotations(ann) if isinstance(ann, Mapping) else None
        self.execution = _Execution(execution) if isinstance(execution, Mapping) else None
        self.meta = raw.get("_meta")

    def model_copy(self, *, update: Mapping[str, Any]) -> ListedTool:
        raw = dict(self.raw)
        for key, value in update.items():
            if key == "annotations":
                raw["annotations"] = value.raw if value is not None else None
            else:
                raw[_FIELDS[key]] = value
        return ListedTool(raw)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """The definition's JSON (wire names), as the SDK dumps it ``by_alias``."""
        return {k: v for k, v in self.raw.items() if v is not None}

    def __repr__(self) -> str:
        return f"ListedTool({self.name!r})"


def tool_json(tool: Any) -> dict[str, Any]:
    """A listed tool's JSON: the SDK's model dumped as it was received, or a cached one's."""
    if isinstance(tool, ListedTool):
        return tool.model_dump()
    dumped: dict[str, Any] = tool.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped
