"""Path parameters reach the server as the arguments name them: a value of ``.`` or ``..``
is not a dot segment (a recording server on 127.0.0.1 sees the raw request line)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolregistry import ToolRegistry

if TYPE_CHECKING:
    from .conftest import RecordingServer


def _spec() -> dict[str, Any]:
    def get(op_id: str, style: str = "simple") -> dict[str, Any]:
        return {"get": {"operationId": op_id, "parameters": [
            {"name": "name", "in": "path", "required": True, "style": style,
             "schema": {"type": "string"}}], "responses": {}}}

    return {"openapi": "3.0.3", "info": {"title": "files", "version": "1"}, "paths": {
        "/api/v1/files/{name}": get("readFile"),
        "/api/v1/labels/{name}": get("readLabel", "label"),
        "/api/v1/pairs/{name}.json": get("readPair"),
    }}


CASES = [
    ("readFile", "..", "/api/v1/files/%2E%2E"),
    ("readFile", ".", "/api/v1/files/%2E"),
    ("readFile", "...", "/api/v1/files/..."),
    ("readFile", "a/..", "/api/v1/files/a%2F.."),
    ("readFile", ".hidden", "/api/v1/files/.hidden"),
    ("readLabel", ".", "/api/v1/labels/%2E%2E"),  # the label prefix and the value: ".."
    ("readLabel", "..", "/api/v1/labels/..."),
    ("readLabel", "", "/api/v1/labels/%2E"),
    ("readPair", ".", "/api/v1/pairs/..json"),  # not the whole segment: left as it is
]


def test_dot_segments_are_encoded_sync_and_async(
        http_server: Callable[..., RecordingServer]) -> None:
    server = http_server()
    with ToolRegistry() as registry:
        registry.register_from_openapi(_spec(), base_url=server.url)
        for tool, value, expected in CASES:
            result = registry.invoke(tool, {"name": value})
            assert not result.is_error, result
            assert result.value == {"method": "GET", "path": expected}, (tool, value)

        async def all_async() -> list[Any]:
            return [await registry.ainvoke(tool, {"name": value}) for tool, value, _ in CASES]

        for (tool, value, expected), result in zip(CASES, asyncio.run(all_async()), strict=True):
            assert result.value == {"method": "GET", "path": expected}, (tool, value, "async")
    assert server.paths() == [expected for _t, _v, expected in CASES] * 2
