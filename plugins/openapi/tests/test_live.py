"""Calls through the registry against the real FastAPI service on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest

from toolregistry import Image, ToolRegistry, ToolTag


def _ops_in(doc: dict) -> int:
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return sum(1 for item in doc["paths"].values() for m in item if m in methods)


@pytest.fixture
def service(registry: ToolRegistry, server_url: str) -> ToolRegistry:
    registry.register_from_openapi(server_url + "/openapi.json", auth={
        "HTTPBearer": "tok-bearer", "HTTPBasic": ("ann", "s3cret"), "APIKeyHeader": "k-header",
        "APIKeyQuery": "k-query", "APIKeyCookie": "k-cookie", "OAuth2PasswordBearer": "tok-oauth",
    })
    return registry


def test_service_root_is_probed_and_every_operation_is_a_tool(registry, server_url):
    tools = registry.register_from_openapi(server_url)  # the root: /openapi.json is found
    doc = httpx.get(server_url + "/openapi.json").json()
    assert len(tools) == _ops_in(doc)
    names = {t.name for t in tools}
    assert {"getItem", "createItem", "replaceItem", "updateItem", "deleteItem"} <= names
    get_item = registry["getItem"]
    assert get_item.provenance.kind == "openapi"
    assert get_item.provenance.original_name == "getItem"
    assert get_item.provenance.plugin == "openapi"
    assert get_item.description.startswith("Get Item\n\nRead one item.")
    assert ToolTag.READ_ONLY in get_item.metadata.tags and ToolTag.NETWORK in get_item.metadata.tags
    assert get_item.metadata.read_only_hint and get_item.metadata.idempotent_hint
    delete = registry["deleteItem"].metadata
    assert delete.destructive_hint and delete.idempotent_hint and not delete.read_only_hint
    assert ToolTag.DESTRUCTIVE in delete.tags
    post = registry["createItem"].metadata
    assert not post.idempotent_hint and not post.read_only_hint
    params = get_item.parameters
    assert params["required"] == ["item_id"]
    assert set(params["properties"]) == {"item_id", "q", "tags", "x-trace", "session"}


def test_path_query_header_cookie(service):
    result = service.invoke("getItem", {"item_id": 7, "q": "a&b=c", "tags": ["x", "y z"],
                                        "x-trace": "t-1", "session": "s 1"})
    assert result.ok, result.content
    assert json.loads(result.content) == {"item_id": 7, "q": "a&b=c", "tags": ["x", "y z"],
                                          "x_trace": "t-1", "session": "s 1"}


def test_path_values_are_url_encoded(service):
    result = service.invoke("echoPath", {"value": "a b?c#d%e&f"})
    assert result.ok, result.content
    data = json.loads(result.content)
    assert data["raw_path"] == "/echo-path/a%20b%3Fc%23d%25e%26f"
    assert data["value"] == "a b?c#d%e&f"
    # a slash is encoded too (Starlette decodes it before routing, hence the 404)
    slash = service.invoke("echoPath", {"value": "a/b"})
    assert "HTTP 404" in slash.content


def test_post_put_patch_delete(service):
    created = service.invoke("createItem", {"body": {"name": "pen", "price": 1.5, "tags": ["a"]}})
    assert created.ok, created.content
    assert json.loads(created.content)["created"] == {"name": "pen", "price": 1.5, "tags": ["a"],
                                                      "note": None}
    replaced = service.invoke("replaceItem", {"item_id": 3, "body": {"name": "ink", "price": 2}})
    assert json.loads(replaced.content) == {"item_id": 3, "replaced": {
        "name": "ink", "price": 2.0, "tags": [], "note": None}}
    patched = service.invoke("updateItem", {"item_id": 3, "body": {"price": 9}})
    assert json.loads(patched.content) == {"item_id": 3, "patch": {"price": 9.0}}
    deleted = service.invoke("deleteItem", {"item_id": 3})
    assert deleted.ok and "204" in deleted.content


def test_form_and_multipart_bodies(service):
    form = service.invoke("submitForm", {"body": {"name": "ann", "count": 3, "flag": True}})
    assert form.ok, form.content
    assert json.loads(form.content) == {"name": "ann", "count": 3, "flag": True}
    schema = service["uploadFile"].parameters
    assert "body" in schema["required"]
    up = service.invoke("uploadFile", {"body": {"file": "hello file", "note": "n1"}})
    assert up.ok, up.content
    assert json.loads(up.content) == {"filename": "file", "size": 10, "text": "hello file",
                                      "note": "n1"}


@pytest.mark.parametrize(("tool", "expected"), [
    ("secureBearer", {"scheme": "Bearer", "token": "tok-bearer"}),
    ("secureBasic", {"user": "ann", "password": "s3cret"}),
    ("secureHeader", {"key": "k-header"}),
    ("secureQuery", {"key": "k-query"}),
    ("secureCookie", {"key": "k-cookie"}),
    ("secureOAuth2", {"token": "tok-oauth"}),
])
def test_each_auth_scheme(service, tool, expected):
    result = service.invoke(tool, {})
    assert result.ok, result.content
    assert json.loads(result.content) == expected


def test_single_token_and_basic_pair(registry, server_url):
    registry.register_from_openapi(server_url, auth="one-token", include=["secure*"])
    assert json.loads(registry.invoke("secureBearer", {}).content)["token"] == "one-token"
    assert json.loads(registry.invoke("secureHeader", {}).content)["key"] == "one-token"
    assert json.loads(registry.invoke("secureOAuth2", {}).content)["token"] == "one-token"
    other = ToolRegistry()
    try:
        other.register_from_openapi(server_url, auth=("bob", "pw"), include=["secureBasic"])
        assert other.list_tools() == ["secureBasic"]
        assert json.loads(other.invoke("secureBasic", {}).content) == {"user": "bob", "password": "pw"}
    finally:
        other.close()


def test_missing_auth_is_an_error_result_naming_the_scheme(registry, server_url):
    registry.register_from_openapi(server_url, include=["secureBearer", "secureHeader"])
    result = registry.invoke("secureBearer", {})
    assert result.is_error and result.error_kind == "remote"
    assert result.content.startswith("Error: HTTP 40")
    assert "HTTPBearer" in result.content and "auth=" in result.content


def test_error_statuses_have_status_and_bounded_excerpt(service):
    r404 = service.invoke("status", {"code": 404})
    assert r404.is_error and r404.error_kind == "remote"
    assert "HTTP 404 Not Found" in r404.content and "xxxxxxxxxx" in r404.content
    r500 = service.invoke("status", {"code": 503, "size": 100_000})
    assert r500.is_error and "HTTP 503" in r500.content
    assert len(r500.content) < 1300
    ok = service.invoke("status", {"code": 202})
    assert ok.ok and json.loads(ok.content) == {"code": 202}


def test_text_image_and_binary_responses(service):
    text = service.invoke("getText", {})
    assert text.ok and text.content == "plain text, ünïcode"
    image = service.invoke("getImage", {})
    assert image.ok and image.images and isinstance(image.value, Image)
    assert image.images[0].media_type == "image/png"
    binary = service.invoke("getBinary", {})
    assert binary.ok and binary.value == bytes(range(256))
    assert "256 bytes of application/octet-stream" in binary.content
    assert base64.b64encode(bytes(range(256))).decode() in binary.content


def test_invalid_arguments_are_rejected_before_any_request(service):
    missing = service.invoke("getItem", {"q": "no id"})
    assert missing.is_error and missing.error_kind == "invalid_arguments"
    extra = service.invoke("getItem", {"item_id": 1, "nope": 1})
    assert extra.is_error and extra.error_kind == "invalid_arguments"


def test_timeout_is_a_timeout_result(registry, server_url):
    registry.register_from_openapi(server_url, include=["slow"], timeout=0.3)
    result = registry.invoke("slow", {"seconds": 3})
    assert result.is_error and result.error_kind == "timeout"
    assert "timed out" in result.content


def test_execute_tool_calls_openai_format(service):
    calls = [
        {"id": f"c{i}", "type": "function",
         "function": {"name": "getItem", "arguments": json.dumps({"item_id": i})}}
        for i in range(6)
    ]
    calls.append({"id": "bad", "type": "function",
                  "function": {"name": "status", "arguments": json.dumps({"code": 418})}})
    results = service.execute_tool_calls(calls)
    assert [r.call_id for r in results] == [*(f"c{i}" for i in range(6)), "bad"]
    assert [json.loads(r.content)["item_id"] for r in results[:6]] == list(range(6))
    assert results[-1].is_error and "HTTP 418" in results[-1].content
    messages = service.build_tool_call_messages(calls, results, api_format="openai-chat")
    assert len(messages) == 1 + len(calls)


def test_async_loader_and_calls(server_url):
    async def main() -> None:
        async with ToolRegistry() as reg:
            tools = await reg.aregister_from_openapi(server_url, auth={"HTTPBearer": "a-tok"})
            assert all(t.acallable is not None for t in tools)  # async twin for ainvoke
            one = await reg.ainvoke("getItem", {"item_id": 5, "q": "z"})
            assert json.loads(one.content)["q"] == "z"
            calls = [{"name": "getItem", "arguments": {"item_id": i}, "id": str(i)} for i in range(4)]
            calls.append({"name": "secureBearer", "arguments": {}, "id": "auth"})
            results = await reg.aexecute_tool_calls(calls)
            assert [json.loads(r.content).get("item_id") for r in results[:4]] == [0, 1, 2, 3]
            assert json.loads(results[4].content)["token"] == "a-tok"
            sync_result = await asyncio.to_thread(reg.invoke, "getText", {})
            assert sync_result.ok, sync_result.content
            # tools of the sync loader on the async paths (the kernel runs them in threads)
            sync_tools = reg.register_from_openapi(server_url, namespace="s", include="getItem")
            assert not sync_tools[0].is_async and sync_tools[0].acallable is not None
            via_async = await reg.ainvoke("s-getItem", {"item_id": 9})
            assert json.loads(via_async.content)["item_id"] == 9

    asyncio.run(main())


def test_namespace_and_include_exclude(registry, server_url):
    tools = registry.register_from_openapi(server_url, namespace="svc", include=["tag:items"],
                                           exclude=["DELETE *"])
    assert sorted(t.name for t in tools) == ["svc-createItem", "svc-getItem", "svc-replaceItem",
                                             "svc-updateItem"]
    assert registry.invoke("svc-getItem", {"item_id": 1}).ok


def test_spec_servers_are_not_contacted_unless_chosen(registry, server_url):
    spec = {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.invalid/v1"}],
        "paths": {"/echo": {"get": {"operationId": "echo", "responses": {"200": {"description": "ok"}}}}},
    }
    registry.register_from_openapi(spec)
    result = registry.invoke("echo", {})
    assert result.is_error and "use_spec_servers=True" in result.content
    assert "api.example.invalid" in result.content
    # chosen: a server with variables pointing at the local service
    spec2 = dict(spec, servers=[{"url": "http://{host}:{port}", "variables": {
        "host": {"default": "127.0.0.1"}, "port": {"default": "1"}}}])
    port = server_url.rsplit(":", 1)[1]
    registry.register_from_openapi(spec2, namespace="v", use_spec_servers=True,
                                   server_variables={"port": port})
    chosen = registry.invoke("v-echo", {})
    assert chosen.ok and json.loads(chosen.content)["method"] == "GET"
    # base_url wins over everything
    registry.register_from_openapi(spec, namespace="b", base_url=server_url)
    assert registry.invoke("b-echo", {}).ok


def test_swagger2_against_the_service(registry, server_url):
    host = server_url.split("://", 1)[1]
    spec = {
        "swagger": "2.0", "info": {"title": "s2", "version": "1"},
        "host": host, "basePath": "/", "schemes": ["http"],
        "securityDefinitions": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                                "basicAuth": {"type": "basic"}},
        "paths": {
            "/echo": {
                "parameters": [{"name": "x-list", "in": "header", "type": "array",
                                "items": {"type": "string"}}],
                "get": {"operationId": "echoGet", "security": [{"key": []}],
                        "parameters": [
                            {"name": "ids", "in": "query", "type": "array", "items": {"type": "integer"},
                             "collectionFormat": "pipes"},
                            {"name": "multi", "in": "query", "type": "array",
                             "items": {"type": "string"}, "collectionFormat": "multi"}],
                        "responses": {"200": {"description": "ok"}}},
                "post": {"operationId": "echoPost", "security": [{"basicAuth": []}],
                         "consumes": ["application/x-www-form-urlencoded"],
                         "parameters": [{"name": "a", "in": "formData", "type": "string", "required": True},
                                        {"name": "b", "in": "formData", "type": "integer"}],
                         "responses": {"200": {"description": "ok"}}},
            },
            "/items/{item_id}": {"get": {"operationId": "item", "parameters": [
                {"name": "item_id", "in": "path", "required": True, "type": "integer"}],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Gone"}}}}},
        },
    }
    tools = registry.register_from_openapi(spec, use_spec_servers=True,
                                           auth={"key": "K", "basicAuth": ("u", "p")})
    assert len(tools) == 3
    got = json.loads(registry.invoke("echoGet", {"ids": [1, 2], "multi": ["a", "b"],
                                                 "x-list": ["p", "q"]}).content)
    assert got["query"] == "ids=1%7C2&multi=a&multi=b"
    assert got["headers"]["x-api-key"] == "K" and got["headers"]["x-list"] == "p,q"
    posted = json.loads(registry.invoke("echoPost", {"body": {"a": "x y", "b": 2}}).content)
    assert posted["body"] == "a=x+y&b=2"
    assert posted["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert posted["headers"]["authorization"] == "Basic " + base64.b64encode(b"u:p").decode()
    assert json.loads(registry.invoke("item", {"item_id": 4}).content)["item_id"] == 4


def test_registry_close_closes_the_clients(server_url):
    reg = ToolRegistry()
    reg.register_from_openapi(server_url, include=["getItem"])
    assert reg.invoke("getItem", {"item_id": 1}).ok
    reg.close()
    from toolregistry_openapi._loader import _SESSIONS

    assert all(s.closed for s in _SESSIONS.get(reg, []))


def test_remote_refs_only_when_allowed(registry, server_url):
    spec = {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "paths": {"/echo": {"post": {"operationId": "echoThing", "requestBody": {
            "required": True, "content": {"application/json": {"schema": {
                "$ref": server_url + "/parts/common.yaml#/Thing"}}}},
            "responses": {"200": {"description": "ok"}}}}},
    }
    from toolregistry_openapi import OpenAPIError

    with pytest.raises(OpenAPIError, match="allow_remote_refs=True"):
        registry.register_from_openapi(spec, base_url=server_url)
    tools = registry.register_from_openapi(spec, base_url=server_url, allow_remote_refs=True)
    params = tools[0].parameters
    ref = params["properties"]["body"]["$ref"]
    assert params["$defs"][ref.rsplit("/", 1)[1]]["required"] == ["name"]
    result = registry.invoke("echoThing", {"body": {"name": "n"}})
    assert json.loads(json.loads(result.content)["body"]) == {"name": "n"}
    bad = registry.invoke("echoThing", {"body": {}})
    assert bad.error_kind == "invalid_arguments"


def test_config_source_and_namespace_from_title(tmp_path, server_url):
    (tmp_path / "pyproject.toml").write_text(f"""
[[tool.toolregistry.sources]]
kind = "openapi"
spec = "{server_url}"
namespace = true
include = ["getItem", "secureBasic"]
auth = ["cfg", "pw"]
timeout = 5
""")
    reg = ToolRegistry.from_config(tmp_path / "pyproject.toml")
    try:
        assert sorted(reg.list_tools()) == ["Test_service-getItem", "Test_service-secureBasic"]
        assert json.loads(reg.invoke("Test_service-secureBasic", {}).content)["user"] == "cfg"
    finally:
        reg.close()


def test_bad_options_are_clear(registry, server_url):
    from toolregistry_openapi import OpenAPIError

    with pytest.raises(TypeError, match="bogus"):
        registry.register_from_openapi(server_url, bogus=1)
    with pytest.raises(OpenAPIError, match="auth must be"):
        registry.register_from_openapi(server_url, auth=42)
    assert len(registry) == 0
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(OpenAPIError, match="cannot fetch the OpenAPI document"):
        registry.register_from_openapi(closed)
    # a path under the service: the usual paths there, then at the origin
    assert len(registry.register_from_openapi(server_url + "/nothing-here/", include="getText")) == 1


def test_url_document_calls_its_own_origin_not_foreign_servers(registry, server_url):
    registry.register_from_openapi(server_url + "/alt/openapi.json")
    echo = registry.invoke("altEcho", {})  # the foreign server is ignored: the origin is used
    assert echo.ok, echo.content
    assert json.loads(echo.content)["method"] == "GET"
    text = registry.invoke("altText", {})  # a relative server resolves against the document
    assert text.ok and text.content == "plain text, ünïcode"


def test_response_size_limit_and_limits_table(registry, server_url):
    registry.register_from_openapi(server_url, include=["getBinary"], max_response_bytes=100,
                                   limits={"max-bytes": 10_000_000})
    result = registry.invoke("getBinary", {})
    assert result.is_error and "larger than the limit" in result.content
    from toolregistry_openapi import OpenAPIError

    with pytest.raises(OpenAPIError, match="invalid limits"):
        registry.register_from_openapi(server_url, limits={"max_bites": 1})
