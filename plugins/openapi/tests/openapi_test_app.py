"""The FastAPI service the tests call: it publishes its own OpenAPI document."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import (
    Cookie,
    Depends,
    FastAPI,
    File,
    Form,
    Header,
    HTTPException,
    Query,
    Request,
    Response,
    UploadFile,
)
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import (
    APIKeyCookie,
    APIKeyHeader,
    APIKeyQuery,
    HTTPAuthorizationCredentials,
    HTTPBasic,
    HTTPBasicCredentials,
    HTTPBearer,
    OAuth2PasswordBearer,
)
from pydantic import BaseModel

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

app = FastAPI(title="Test service", version="1.0")

bearer = HTTPBearer(auto_error=True)
basic = HTTPBasic(auto_error=True)
key_header = APIKeyHeader(name="X-API-Key")
key_query = APIKeyQuery(name="api_key")
key_cookie = APIKeyCookie(name="sid")
oauth2 = OAuth2PasswordBearer(tokenUrl="token", scopes={"read": "read things"})


class Item(BaseModel):
    name: str
    price: float
    tags: list[str] = []
    note: str | None = None


class ItemPatch(BaseModel):
    name: str | None = None
    price: float | None = None


@app.get("/items/{item_id}", operation_id="getItem", tags=["items"])
def get_item(
    item_id: int,
    q: str | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
    x_trace: Annotated[str | None, Header()] = None,
    session: Annotated[str | None, Cookie()] = None,
) -> dict[str, object]:
    """Read one item.

    Echoes every parameter back.
    """
    return {"item_id": item_id, "q": q, "tags": tags, "x_trace": x_trace, "session": session}


@app.post("/items", operation_id="createItem", status_code=201, tags=["items"])
def create_item(item: Item) -> dict[str, object]:
    """Create an item."""
    return {"created": item.model_dump()}


@app.put("/items/{item_id}", operation_id="replaceItem", tags=["items"])
def replace_item(item_id: int, item: Item) -> dict[str, object]:
    return {"item_id": item_id, "replaced": item.model_dump()}


@app.patch("/items/{item_id}", operation_id="updateItem", tags=["items"])
def update_item(item_id: int, patch: ItemPatch) -> dict[str, object]:
    return {"item_id": item_id, "patch": patch.model_dump(exclude_none=True)}


@app.delete("/items/{item_id}", operation_id="deleteItem", status_code=204, tags=["items"])
def delete_item(item_id: int) -> Response:
    return Response(status_code=204)


@app.get("/echo-path/{value}", operation_id="echoPath")
def echo_path(value: str, request: Request) -> dict[str, str]:
    return {"value": value, "raw_path": request.scope["raw_path"].decode("ascii")}


@app.post("/form", operation_id="submitForm")
def submit_form(name: Annotated[str, Form()], count: Annotated[int, Form()] = 1,
                flag: Annotated[bool, Form()] = False) -> dict[str, object]:
    return {"name": name, "count": count, "flag": flag}


@app.post("/upload", operation_id="uploadFile")
async def upload(file: Annotated[UploadFile, File()], note: Annotated[str, Form()] = "") -> dict[str, object]:
    data = await file.read()
    return {"filename": file.filename, "size": len(data), "text": data.decode("utf-8", "replace"),
            "note": note}


@app.get("/secure/bearer", operation_id="secureBearer")
def secure_bearer(cred: Annotated[HTTPAuthorizationCredentials, Depends(bearer)]) -> dict[str, str]:
    return {"scheme": cred.scheme, "token": cred.credentials}


@app.get("/secure/basic", operation_id="secureBasic")
def secure_basic(cred: Annotated[HTTPBasicCredentials, Depends(basic)]) -> dict[str, str]:
    return {"user": cred.username, "password": cred.password}


@app.get("/secure/header", operation_id="secureHeader")
def secure_header(key: Annotated[str, Depends(key_header)]) -> dict[str, str]:
    return {"key": key}


@app.get("/secure/query", operation_id="secureQuery")
def secure_query(key: Annotated[str, Depends(key_query)]) -> dict[str, str]:
    return {"key": key}


@app.get("/secure/cookie", operation_id="secureCookie")
def secure_cookie(key: Annotated[str, Depends(key_cookie)]) -> dict[str, str]:
    return {"key": key}


@app.get("/secure/oauth2", operation_id="secureOAuth2")
def secure_oauth2(token: Annotated[str, Depends(oauth2)]) -> dict[str, str]:
    return {"token": token}


@app.get("/status/{code}", operation_id="status")
def status(code: int, size: int = 10) -> Response:
    if code < 400:
        return JSONResponse({"code": code}, status_code=code)
    raise HTTPException(status_code=code, detail="x" * size)


@app.get("/text", operation_id="getText", response_class=PlainTextResponse)
def text() -> str:
    return "plain text, ünïcode"


@app.get("/image", operation_id="getImage")
def image() -> Response:
    return Response(PNG, media_type="image/png")


@app.get("/binary", operation_id="getBinary")
def binary() -> Response:
    return Response(bytes(range(256)), media_type="application/octet-stream")


@app.get("/slow", operation_id="slow")
async def slow(seconds: float = 2.0) -> dict[str, float]:
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@app.get("/parts/common.yaml", include_in_schema=False)
def common_part() -> PlainTextResponse:
    """A document part for same-origin / allowed remote $ref tests."""
    return PlainTextResponse(
        "Thing:\n  type: object\n  properties:\n    name: {type: string}\n  required: [name]\n",
        media_type="application/yaml",
    )


@app.api_route("/echo", methods=["GET", "POST"], operation_id="echo", include_in_schema=False)
async def echo(request: Request) -> dict[str, object]:
    """Echo the raw request (for hand-written specs that point here)."""
    body = await request.body()
    return {
        "method": request.method,
        "query": str(request.url.query),
        "headers": {k: v for k, v in request.headers.items() if k.lower() in (
            "authorization", "x-api-key", "cookie", "content-type", "x-extra", "x-list")},
        "body": body.decode("utf-8", "replace"),
    }


@app.get("/alt/openapi.json", include_in_schema=False)
def alt_document() -> dict[str, object]:
    """A document that names a foreign server and a relative one."""
    ok = {"200": {"description": "ok"}}
    return {
        "openapi": "3.0.3", "info": {"title": "alt", "version": "1"},
        "servers": [{"url": "https://api.example.invalid/v1"}],
        "paths": {
            "/echo": {"get": {"operationId": "altEcho", "responses": ok}},
            "/text": {"get": {"operationId": "altText", "responses": ok,
                              "servers": [{"url": "/"}]}},
        },
    }
