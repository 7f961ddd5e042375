"""Building the HTTP request of one call: server URLs (variables filled), parameters
serialised by their style (path, query, header, cookie), bodies (JSON, form, multipart, raw),
credentials applied; the result is a :class:`Prepared` request, independent of the client."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urljoin

from attrs import frozen

from toolregistry.errors import ToolCallError

from ._auth import Credentials, apply_security
from ._errors import OpenAPIError
from ._operations import Operation, ParamSpec

__all__ = ["JSON_CT", "Prepared", "prepare", "server_url"]

JSON_CT = re.compile(r"^application/(?:[\w.+-]+\+)?json\b|^[\w.+-]+/[\w.+-]*\+json\b", re.I)
_VAR_RE = re.compile(r"\{([^{}]+)\}")


# -- servers ---------------------------------------------------------------------------------

def server_url(server: Mapping[str, Any], variables: Mapping[str, str] | None,
               doc_url: str | None) -> str:
    """A server object's URL with its variables filled (user values, else defaults),
    relative URLs resolved against the document's URL."""
    url = str(server.get("url", ""))
    declared = server.get("variables") if isinstance(server.get("variables"), Mapping) else {}
    given = variables or {}

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in given:
            return str(given[name])
        spec = declared.get(name) if isinstance(declared, Mapping) else None
        if isinstance(spec, Mapping) and "default" in spec:
            return str(spec["default"])
        raise OpenAPIError(
            f"server {url!r} has the variable {{{name}}} with no default: pass "
            f"server_variables={{{name!r}: ...}} or base_url="
        )

    url = _VAR_RE.sub(fill, url)
    if not url.lower().startswith(("http://", "https://")):
        if doc_url is None:
            raise OpenAPIError(
                f"the spec's server {url!r} is relative and the document has no URL: "
                "pass base_url="
            )
        url = urljoin(doc_url, url)
    return url


# -- serialisation ----------------------------------------------------------------------------

def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _deep(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _deep(f"{prefix}[{k}]", v, out)
    elif isinstance(value, list):
        if all(not isinstance(v, (Mapping, list)) for v in value):
            out.extend((f"{prefix}[]", _scalar(v)) for v in value)
        else:
            for i, v in enumerate(value):
                _deep(f"{prefix}[{i}]", v, out)
    else:
        out.append((prefix, _scalar(value)))


_DELIMS = {"spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t"}


def _query_pairs(p: ParamSpec, value: Any, out: list[tuple[str, str]]) -> None:
    if p.kind == "json":
        out.append((p.name, json.dumps(value, ensure_ascii=False)))
    elif isinstance(value, list):
        if p.style == "form" and p.explode:
            out.extend((p.name, _scalar(v)) for v in value)
        else:
            out.append((p.name, _DELIMS.get(p.style, ",").join(_scalar(v) for v in value)))
    elif isinstance(value, Mapping):
        if p.style == "deepObject":
            _deep(p.name, value, out)
        elif p.explode:
            out.extend((str(k), _scalar(v)) for k, v in value.items())
        else:
            out.append((p.name, ",".join(f"{k},{_scalar(v)}" for k, v in value.items())))
    else:
        out.append((p.name, _scalar(value)))


def _simple(value: Any, explode: bool) -> str:
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    if isinstance(value, Mapping):
        sep = "=" if explode else ","
        return ",".join(f"{k}{sep}{_scalar(v)}" for k, v in value.items())
    return _scalar(value)


def _path_value(p: ParamSpec, value: Any) -> str:
    if p.kind == "json":
        return quote(json.dumps(value, ensure_ascii=False), safe="")
    text = _simple(value, p.explode)
    encoded = quote(text, safe=",=")
    if p.style == "label":
        return "." + encoded
    if p.style == "matrix":
        return f";{p.name}={encoded}"
    return quote(text, safe="")


def _fill_path(template: str, values: Mapping[str, str]) -> str:
    """``template`` with its ``{name}`` variables replaced by encoded values.

    A segment that the values make ``.`` or ``..`` is sent as ``%2E`` / ``%2E%2E``: left as
    it is, clients and servers remove it as a dot segment (``/files/..`` becomes ``/``), and
    the request would reach another resource than the one the arguments name."""
    path = _VAR_RE.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if "." not in path:
        return path
    segments = template.split("/")
    filled = path.split("/")
    if len(filled) != len(segments):  # a variable named with a "/": values never hold one
        return path
    for i, (segment, value) in enumerate(zip(segments, filled, strict=True)):
        if value in (".", "..") and "{" in segment:
            filled[i] = value.replace(".", "%2E")
    return "/".join(filled)


def _multipart(fields: list[tuple[str, str]], files: list[tuple[str, str, bytes, str]]
               ) -> tuple[bytes, str]:
    boundary = "toolregistry-" + secrets.token_hex(12)
    chunks: list[bytes] = []
    for name, value in fields:
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(name)}"\r\n\r\n'.encode()
            + value.encode("utf-8") + b"\r\n"
        )
    for name, filename, data, ctype in files:
        chunks.append(
            (f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(name)}"; '
             f'filename="{_q(filename)}"\r\nContent-Type: {ctype}\r\n\r\n').encode()
            + data + b"\r\n"
        )
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def _q(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")


def _file_part(name: str, value: Any) -> tuple[str, str, bytes, str]:
    if isinstance(value, Mapping):  # {"filename", "content", "content_type"}
        content = value.get("content", "")
        data = content if isinstance(content, bytes) else str(content).encode("utf-8")
        return (name, str(value.get("filename") or name), data,
                str(value.get("content_type") or "application/octet-stream"))
    raw = bytes(value) if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")
    return name, name, raw, "application/octet-stream"


@frozen
class Prepared:
    method: str
    url: str
    params: list[tuple[str, str | int | float | bool | None]]
    headers: dict[str, str]
    content: bytes | None


def prepare(op: Operation, base_url: str, args: Mapping[str, Any],
            schemes: Mapping[str, Mapping[str, Any]], creds: Credentials,
            extra_headers: Mapping[str, str]) -> Prepared:
    """The request for ``op`` with ``args`` (already validated against its schema)."""
    path_values: dict[str, str] = {}
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = dict(extra_headers)
    cookies: dict[str, str] = {}
    for p in op.params:
        if p.arg not in args or args[p.arg] is None:
            if p.location == "path":
                raise ToolCallError(
                    f"missing path parameter {p.arg!r} for {op.method} {op.path}",
                    kind="invalid_arguments",
                )
            continue
        value = args[p.arg]
        if p.location == "path":
            path_values[p.name] = _path_value(p, value)
        elif p.location == "query":
            _query_pairs(p, value, query)
        elif p.location == "header":
            headers[p.name] = json.dumps(value) if p.kind == "json" else _simple(value, p.explode)
        elif p.location == "cookie":
            cookies[p.name] = json.dumps(value) if p.kind == "json" else _simple(value, False)
    url = base_url.rstrip("/") + _fill_path(op.path, path_values)

    content: bytes | None = None
    body = op.body
    if body is not None and "body" in args and args["body"] is not None:
        value = args["body"]
        mt = body.media_type
        low = mt.lower()
        if low.startswith("application/x-www-form-urlencoded"):
            pairs: list[tuple[str, str]] = []
            if isinstance(value, Mapping):
                for k, v in value.items():
                    if isinstance(v, Mapping) or k in body.deep_fields:
                        _deep(str(k), v, pairs)
                    elif isinstance(v, list):
                        pairs.extend((str(k), _scalar(x)) for x in v)
                    else:
                        pairs.append((str(k), _scalar(v)))
            else:
                pairs.append(("body", _scalar(value)))
            content = urlencode(pairs).encode("ascii")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif low.startswith("multipart/"):
            fields: list[tuple[str, str]] = []
            files: list[tuple[str, str, bytes, str]] = []
            for k, v in (value.items() if isinstance(value, Mapping) else [("body", value)]):
                if k in body.file_fields:
                    for item in v if isinstance(v, list) else [v]:
                        files.append(_file_part(str(k), item))
                elif isinstance(v, list):
                    fields.extend((str(k), _scalar(x)) for x in v)
                else:
                    fields.append((str(k), _scalar(v)))
            content, headers["Content-Type"] = _multipart(fields, files)
        elif JSON_CT.match(low) or low == "*/*":
            content = json.dumps(value, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = mt if low != "*/*" else "application/json"
        else:
            content = (value if isinstance(value, bytes) else
                       (value if isinstance(value, str) else json.dumps(value)).encode("utf-8"))
            headers["Content-Type"] = mt
    apply_security(op, schemes, creds, headers, query, cookies)
    if cookies:
        jar = "; ".join(f"{k}={_cookie_value(v)}" for k, v in cookies.items())
        headers["Cookie"] = f"{headers['Cookie']}; {jar}" if "Cookie" in headers else jar
    return Prepared(op.method, url, list(query), headers, content)


_COOKIE_UNSAFE = re.compile(r'[;,"\\\x00-\x1f\x7f%]')


def _cookie_value(value: str) -> str:
    # values go as they are; only characters that would break the Cookie header (and %)
    # are percent-encoded
    return _COOKIE_UNSAFE.sub(lambda m: f"%{ord(m.group(0)):02X}", value)
