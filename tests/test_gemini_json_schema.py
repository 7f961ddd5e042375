"""Gemini: schemas its OpenAPI subset cannot say go out whole as ``parametersJsonSchema``.

Checked with google-genai's own types, and through the SDK's real request path: a
``generate_content`` call against an HTTP server on 127.0.0.1 that records the body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from toolregistry import ToolRegistry

from ._dialects import check


class Point(BaseModel):
    x: float
    y: float


def shapes(value: int | str, point: Point, pair: tuple[int, str], counts: dict[str, int],
           note: str | None = None) -> str:
    """Every shape the subset would bend."""
    return ""


def simple(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
    """What the subset says exactly."""
    return city


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    reg = ToolRegistry()
    reg.register(shapes)
    reg.register(simple)
    yield reg
    reg.close()


def test_inexpressible_schemas_go_out_whole(registry: ToolRegistry) -> None:
    decl = {d["name"]: d for d in registry.get_schemas("gemini")}
    assert "parameters" not in decl["shapes"]
    sent = decl["shapes"]["parametersJsonSchema"]
    assert sent == registry.get_parameters("shapes")  # nothing collapsed, dropped or inlined
    assert sent["properties"]["counts"]["additionalProperties"] == {"type": "integer"}
    assert [b["type"] for b in sent["properties"]["pair"]["prefixItems"]] == [
        "integer", "string"]
    assert "parametersJsonSchema" not in decl["simple"]
    assert decl["simple"]["parameters"]["properties"]["unit"]["enum"] == ["c", "f"]
    for definition in decl.values():
        check(definition, "gemini")


def test_read_definition_reads_either_field(registry: ToolRegistry) -> None:
    fmt = registry.formats.get("gemini")
    for definition in registry.get_schemas("gemini"):
        params = fmt.read_definition(definition).parameters
        assert params is not None and params["type"] == "object"


class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        out = json.dumps({"candidates": [{"content": {"role": "model",
                                                      "parts": [{"text": "ok"}]}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def gemini_endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (_Recorder,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", bodies
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_sdk_sends_the_json_schema_unchanged(
        registry: ToolRegistry, gemini_endpoint: tuple[str, list[dict[str, Any]]]) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    url, bodies = gemini_endpoint
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=url))
    declarations = registry.get_schemas("gemini")
    functions = [types.FunctionDeclaration.model_validate(d) for d in declarations]
    client.models.generate_content(
        model="gemini-2.5-flash", contents="Where is the point?",
        config=types.GenerateContentConfig(tools=[types.Tool(function_declarations=functions)]))
    client.close()
    (body,) = bodies
    sent = {d["name"]: d for d in body["tools"][0]["functionDeclarations"]}
    # proto JSON: the API reads the field by its proto name as by its camelCase name
    whole = sent["shapes"].get("parametersJsonSchema", sent["shapes"].get(
        "parameters_json_schema"))
    assert whole == registry.get_parameters("shapes")
    assert "parameters" not in sent["shapes"]
    assert sent["simple"]["parameters"]["properties"]["city"]["type"].lower() == "string"
