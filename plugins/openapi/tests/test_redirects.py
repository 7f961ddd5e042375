"""Documents and references read over HTTP follow redirects only within the origin the user
chose (two servers on two ports of 127.0.0.1 are two origins), unless remote references are
allowed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from toolregistry import ToolRegistry
from toolregistry_openapi import OpenAPIError, tools_from_openapi
from toolregistry_openapi._document import Origin, RedirectPolicy

if TYPE_CHECKING:
    from .conftest import RecordingServer

JSON = {"content-type": "application/json"}
Start = Callable[..., "RecordingServer"]


def _doc(schema_ref: str) -> bytes:
    return json.dumps({
        "openapi": "3.0.3", "info": {"title": "pets", "version": "1"},
        "paths": {"/pets": {"post": {"operationId": "addPet", "requestBody": {"content": {
            "application/json": {"schema": {"$ref": schema_ref}}}}, "responses": {}}}},
    }).encode()


SECRET = json.dumps({"type": "object", "properties": {"leak": {"const": "internal-only"}}}).encode()
PET = json.dumps({"type": "object", "properties": {"name": {"type": "string"}}}).encode()


def _redirect(to: str, status: int = 302) -> tuple[int, dict[str, str], bytes]:
    return status, {"location": to}, b""


def test_a_reference_redirected_to_another_origin_is_not_followed(http_server: Start) -> None:
    internal = http_server({"/secret.json": (200, JSON, SECRET)})
    public = http_server({
        "/openapi.json": (200, JSON, _doc("schemas/pet.json")),
        "/schemas/pet.json": _redirect(f"{internal.url}/secret.json"),
    })
    with pytest.raises(OpenAPIError, match=(
            rf"POST /pets \(addPet\): {public.url}/schemas/pet.json redirects to "
            rf"{internal.url}/secret.json, another origin: not followed.*"
            r"allow_remote_refs=True")):
        tools_from_openapi(f"{public.url}/openapi.json")
    assert internal.seen == []  # never contacted
    # allowed explicitly: followed, and its content is the schema
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(f"{public.url}/openapi.json",
                                                 allow_remote_refs=True)
        assert tool.parameters["$defs"]["pet"]["properties"]["leak"]["const"] == "internal-only"
    assert internal.paths() == ["/secret.json"]


def test_a_document_redirected_to_another_origin_is_not_followed(http_server: Start) -> None:
    other = http_server({"/openapi.json": (200, JSON, _doc("#/components/x"))})
    first = http_server({"/openapi.json": _redirect(f"{other.url}/openapi.json", 301),
                         "/api/openapi.json": _redirect(f"{other.url}/openapi.json", 307)})
    with pytest.raises(OpenAPIError, match=rf"{first.url}/openapi.json redirects to "
                       rf"{other.url}/openapi.json, another origin"):
        tools_from_openapi(f"{first.url}/openapi.json")
    # probing a service root: the redirecting candidates are reported, not followed
    with pytest.raises(OpenAPIError, match=r"no OpenAPI document at .*/openapi.json \(.*another "
                       r"origin.*\).*/api/openapi.json \(.*another origin"):
        tools_from_openapi(first.url)
    assert other.seen == []
    with pytest.raises(OpenAPIError, match="nothing at '/components/x'"):  # it was read
        tools_from_openapi(f"{first.url}/openapi.json", allow_remote_refs=True)
    assert other.paths() == ["/openapi.json"]


def test_redirects_within_the_origin_are_followed(http_server: Start) -> None:
    server = http_server({
        "/old/openapi.json": _redirect("/openapi.json", 308),
        "/openapi.json": (200, JSON, _doc("schemas/moved.json")),
        "/schemas/moved.json": _redirect("/schemas/pet.json", 307),
        "/schemas/pet.json": (200, JSON, PET),
    })
    with ToolRegistry() as registry:
        (tool,) = registry.register_from_openapi(f"{server.url}/old/openapi.json")
        assert tool.parameters["$defs"]["moved"]["properties"]["name"] == {"type": "string"}
    assert server.paths() == ["/old/openapi.json", "/openapi.json", "/schemas/moved.json",
                              "/schemas/pet.json"]
    # a loop ends with an error, not a hang
    loop = http_server({"/a": _redirect("/b"), "/b": _redirect("/a")})
    with pytest.raises(OpenAPIError, match="redirects more than 10 times"):
        tools_from_openapi(f"{loop.url}/a")


def test_redirect_policy_origins() -> None:
    policy = RedirectPolicy(Origin.of("http://Example.com/openapi.json"))
    assert policy.refusal("u", "http://example.com:80/other") is None
    assert policy.refusal("u", "https://example.com/openapi.json") is None  # https upgrade
    assert policy.refusal("u", "https://example.com:8443/x") is not None
    assert policy.refusal("u", "http://example.com:8080/x") is not None
    assert policy.refusal("u", "http://internal.example.com/x") is not None
    assert policy.refusal("u", "http://127.0.0.1/x") is not None
    secure = RedirectPolicy(Origin.of("https://example.com"))
    assert secure.refusal("u", "http://example.com/x") is not None  # no downgrade
    assert RedirectPolicy(None).refusal("u", "http://example.com") is not None
    assert RedirectPolicy(None, anywhere=True).refusal("u", "http://example.com") is None
