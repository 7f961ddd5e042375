"""``load_openapi`` / ``aload_openapi``: a document in, registered tools out."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attrs import frozen

from toolregistry.plugin import log, operation
from toolregistry.tool import Provenance, Tool, ToolMetadata, ToolTag

from ._auth import Credentials
from ._document import (
    DEFAULT_LIMITS,
    PROBE_PATHS,
    Limits,
    Origin,
    RedirectPolicy,
    Resolver,
    ResolverOptions,
    decode_text,
    is_url,
    parse_text,
)
from ._errors import OpenAPIError
from ._http import AsyncOperationCaller, HttpSession, OperationCaller
from ._jsonschema import SchemaConverter
from ._operations import Operation, SpecInfo, extract, spec_version
from ._request import server_url

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

__all__ = [
    "Document",
    "aload_openapi",
    "build_tools",
    "load_openapi",
    "read_document",
    "tools_from_openapi",
]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 20 * 1024 * 1024
_SESSIONS: weakref.WeakKeyDictionary[Any, list[HttpSession]] = weakref.WeakKeyDictionary()


@frozen
class Document:
    """A parsed document and where it came from (``url`` / ``path``; both ``None`` for a dict)."""

    root: Mapping[str, Any]
    url: str | None
    path: str | None
    label: str

    @property
    def uri(self) -> str | None:
        return self.url or self.path


# -- reading ---------------------------------------------------------------------------------

_MAX_REDIRECTS = 10


def _fetch_bytes(client: Any, url: str, limits: Limits, redirects: RedirectPolicy
                 ) -> tuple[int, bytes, str]:
    """(status, body, final URL) of ``GET url``; redirects are followed here, hop by hop,
    each target checked against ``redirects`` before it is requested."""
    request = client.build_request("GET", url)
    for _hop in range(_MAX_REDIRECTS + 1):
        resp = client.send(request, stream=True, follow_redirects=False)
        try:
            if resp.next_request is not None:
                refusal = redirects.refusal(url, str(resp.next_request.url))
                if refusal is not None:
                    raise OpenAPIError(refusal)
                request = resp.next_request
                continue
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > limits.max_bytes:
                    raise OpenAPIError(
                        f"{url} is larger than {limits.max_bytes} bytes: raise "
                        "limits=Limits(max_bytes=...) if you trust it"
                    )
                chunks.append(chunk)
            return resp.status_code, b"".join(chunks), str(resp.url)
        finally:
            resp.close()
    raise OpenAPIError(f"{url} redirects more than {_MAX_REDIRECTS} times: not followed")


def _looks_like_spec(doc: Any) -> bool:
    return isinstance(doc, Mapping) and ("openapi" in doc or "swagger" in doc)


def _fetch_document(url: str, *, timeout: float, headers: Mapping[str, str], limits: Limits,
                    verify: Any, allow_remote_refs: bool = False
                    ) -> tuple[Mapping[str, Any], str, Any]:
    """The document at ``url``, or at the usual paths under it when ``url`` is a service root.

    Returns the document, its final URL and the open client (for same-origin ``$ref``).
    Redirects stay on ``url``'s origin unless ``allow_remote_refs``.
    """
    import httpx

    client = httpx.Client(timeout=timeout, headers=dict(headers), follow_redirects=False,
                          verify=verify)
    redirects = RedirectPolicy(Origin.of(url), anywhere=allow_remote_refs)
    tried: list[str] = []
    try:
        candidates = [url]
        base = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        for prefix in dict.fromkeys([base, origin]):
            candidates.extend(prefix + p for p in PROBE_PATHS)
        for candidate in dict.fromkeys(candidates):
            try:
                status, data, final = _fetch_bytes(client, candidate, limits, redirects)
            except httpx.HTTPError as exc:
                if candidate == url:
                    raise OpenAPIError(
                        f"cannot fetch the OpenAPI document {url}: {type(exc).__name__}: {exc}"
                    ) from None
                tried.append(f"{candidate} ({type(exc).__name__})")
                continue
            except OpenAPIError as exc:
                if candidate == url:
                    raise
                tried.append(f"{candidate} ({exc})")
                continue
            if not 200 <= status < 300:
                tried.append(f"{candidate} (HTTP {status})")
                continue
            try:
                doc = parse_text(decode_text(data, candidate), candidate, limits)
            except OpenAPIError as exc:
                if candidate == url and data.lstrip()[:1] in (b"{", b"o", b"s"):
                    raise  # it was meant to be a document: report why it is not one
                tried.append(f"{candidate} (not a document: {str(exc)[:60]})")
                continue
            if _looks_like_spec(doc):
                log.info("openapi.fetched", url=final, probed=len(tried))
                return doc, final, client
            tried.append(f"{candidate} (no 'openapi' or 'swagger' field)")
        raise OpenAPIError(
            f"no OpenAPI document at {url} nor at the usual paths under it; tried: "
            f"{'; '.join(tried[:12])}: pass the document's own URL"
        )
    except BaseException:
        client.close()
        raise


def read_document(spec: Any, *, timeout: float = DEFAULT_TIMEOUT,
                  headers: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS,
                  verify: Any = True, allow_remote_refs: bool = False) -> tuple[Document, Any]:
    """Read ``spec`` (dict, path or http(s) URL); returns the document and an open HTTP
    client for URL documents (``None`` otherwise; the caller closes it). A URL's redirects
    stay on its origin unless ``allow_remote_refs``."""
    if isinstance(spec, Mapping):
        if not _looks_like_spec(spec):
            spec_version(spec, "the spec dict")  # raises with the keys it found
        title = spec.get("info", {}).get("title") if isinstance(spec.get("info"), Mapping) else None
        return Document(spec, None, None, f"dict spec {title!r}" if title else "dict spec"), None
    if isinstance(spec, str) and is_url(spec):
        root, final, client = _fetch_document(spec, timeout=timeout, headers=headers or {},
                                              limits=limits, verify=verify,
                                              allow_remote_refs=allow_remote_refs)
        return Document(root, final, None, final), client
    if isinstance(spec, (str, Path)):
        path = Path(spec).expanduser()
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise OpenAPIError(
                f"cannot read the OpenAPI document {str(spec)!r}: {exc.strerror or exc} "
                "(give a file path, an http(s) URL or a dict)"
            ) from None
        if size > limits.max_bytes:
            raise OpenAPIError(
                f"{path} is larger than {limits.max_bytes} bytes: raise "
                "limits=Limits(max_bytes=...) if you trust it"
            )
        where = str(path)
        root = parse_text(decode_text(path.read_bytes(), where), where, limits)
        if not isinstance(root, Mapping):
            raise OpenAPIError(f"{where} is not an OpenAPI document (not a mapping)")
        return Document(root, None, str(path.resolve()), where), None
    raise OpenAPIError(
        f"spec must be a file path, an http(s) URL or a dict, got {type(spec).__name__}"
    )


# -- base URL policy -------------------------------------------------------------------------

def _base_for(op: Operation, info: SpecInfo, doc: Document, *, base_url: str | None,
              use_spec_servers: bool, server_variables: Mapping[str, str] | None
              ) -> tuple[str | None, str | None]:
    """(base URL, why there is none). The spec's servers are used only when chosen."""
    if base_url:
        return base_url, None
    servers = op.servers or info.servers
    if use_spec_servers:
        if not servers:
            if doc.url is not None:
                return _origin_of(doc.url), None
            return None, "the spec names no servers: pass base_url="
        try:
            return server_url(servers[0], server_variables, doc.url), None
        except OpenAPIError as exc:
            return None, str(exc)
    if doc.url is not None:
        origin = _origin_of(doc.url)
        for server in servers:
            try:
                url = server_url(server, server_variables, doc.url)
            except OpenAPIError:
                continue
            if _origin_of(url) == origin:  # relative, or the host the user chose
                return url, None
        return origin, None
    named = ", ".join(str(s.get("url")) for s in servers[:3]) or "none"
    return None, (
        "no base URL: the spec was not loaded from a URL and its servers "
        f"({named}) are not contacted unless you choose them: pass base_url=... or "
        "use_spec_servers=True when registering"
    )


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# -- tools -----------------------------------------------------------------------------------

_READ_ONLY = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


def _metadata(op: Operation, defer: bool) -> ToolMetadata:
    tags = {ToolTag.NETWORK}
    if op.method in _READ_ONLY:
        tags.add(ToolTag.READ_ONLY)
    if op.method in _IDEMPOTENT:
        tags.add(ToolTag.IDEMPOTENT)
    if op.method == "DELETE":
        tags.add(ToolTag.DESTRUCTIVE)
    return ToolMetadata(
        tags=frozenset(tags),
        custom_tags=frozenset(op.tags),
        read_only_hint=op.method in _READ_ONLY,
        destructive_hint=op.method == "DELETE",
        idempotent_hint=op.method in _IDEMPOTENT,
        open_world_hint=True,
        defer=defer,
        extra={"openapi": {"method": op.method, "path": op.path,
                           "operation_id": op.operation_id}},
    )


@frozen
class _Built:
    tools: list[Tool]
    session: HttpSession
    info: SpecInfo


def tools_from_openapi(
    spec: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    limits: Limits | Mapping[str, int] | None = None,
    verify: Any = True,
    **options: Any,
) -> tuple[list[Tool], HttpSession, SpecInfo]:
    """Build (not register) one tool per operation of ``spec``; see :func:`load_openapi`.

    Returns the tools, the HTTP session their callables share (close it when done) and the
    document's facts.
    """
    if isinstance(limits, Mapping):  # a TOML table in [[tool.toolregistry.sources]]
        table = {str(k).replace("-", "_"): v for k, v in limits.items()}
        try:
            limits = Limits(**table)
        except TypeError as exc:
            raise OpenAPIError(f"invalid limits {table!r}: {exc}") from None
    lim = limits or DEFAULT_LIMITS
    unknown = sorted(set(options) - _BUILD_OPTIONS)
    if unknown:  # before any file or network access
        raise TypeError(
            f"register_from_openapi() got unknown option(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(sorted(_ALL_OPTIONS))}"
        )
    doc, client = read_document(spec, timeout=timeout, headers=headers, limits=lim, verify=verify,
                                allow_remote_refs=bool(options.get("allow_remote_refs")))
    try:
        return build_tools(doc, client=client, timeout=timeout, headers=headers, limits=lim,
                           verify=verify, **options)
    finally:
        if client is not None:
            client.close()


def build_tools(
    doc: Document,
    *,
    client: Any = None,
    base_url: str | None = None,
    auth: Any = None,
    headers: Mapping[str, str] | None = None,
    namespace: str | None = None,
    include: Sequence[str] | str | None = None,
    exclude: Sequence[str] | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    use_spec_servers: bool = False,
    server_variables: Mapping[str, str] | None = None,
    allow_remote_refs: bool = False,
    strict: bool = True,
    limits: Limits | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    verify: Any = True,
    defer: bool = False,
    is_async: bool = False,
) -> tuple[list[Tool], HttpSession, SpecInfo]:
    """The tools of a document already read (the conversion half of
    :func:`tools_from_openapi`); ``client`` fetches same-origin references of a URL document.
    Every tool gets a sync callable and an async twin; ``is_async`` is kept for callers of
    the older signature and changes nothing."""
    lim = limits or DEFAULT_LIMITS
    if isinstance(include, str):
        include = [include]
    if isinstance(exclude, str):
        exclude = [exclude]
    started = time.perf_counter()
    fetch = None
    if client is not None or allow_remote_refs:
        redirects = RedirectPolicy(Origin.of(doc.url) if doc.url else None,
                                   anywhere=allow_remote_refs)
        fetch = _make_fetch(client, timeout, headers or {}, lim, verify, redirects)
    version = spec_version(doc.root, doc.label)
    resolver = Resolver(doc.root, doc.uri, ResolverOptions(
        allow_remote_refs=allow_remote_refs, limits=lim, fetch=fetch))
    converter = SchemaConverter(resolver, version, lim)
    skipped: list[str] = []

    def on_skip(method: str, path: str, error: str) -> None:
        skipped.append(f"{method} {path}")
        log.warning("openapi.operation_skipped", spec=doc.label, method=method, path=path,
                    error=error)

    info, operations = extract(doc.root, resolver, converter, where=doc.label,
                               include=include, exclude=exclude, strict=strict,
                               on_skip=on_skip)
    if converter.truncated:
        log.warning("openapi.schema_truncated", spec=doc.label, count=converter.truncated,
                    max_depth=lim.max_schema_depth)
    creds = Credentials.from_option(auth)
    session = HttpSession(label=doc.label, timeout=timeout, creds=creds,
                          schemes=info.security_schemes, headers=dict(headers or {}),
                          max_response_bytes=max_response_bytes, verify=verify)
    # Every tool gets both twins: the sync API calls through httpx.Client, the async API
    # awaits httpx.AsyncClient (one client per event loop); ``is_async`` only says which
    # loader built it.
    del is_async
    tools: list[Tool] = []
    for op in operations:
        base, why = _base_for(op, info, doc, base_url=base_url, use_spec_servers=use_spec_servers,
                              server_variables=server_variables)
        meta = _metadata(op, defer)
        tools.append(Tool(
            name=op.name,
            description=op.description,
            parameters=op.parameters,
            callable=OperationCaller(op, session, base, why),
            acallable=AsyncOperationCaller(op, session, base, why),
            is_async=False,  # known: spares the kernel an inspect per tool
            metadata=meta,
            namespace=namespace,
            provenance=Provenance(
                kind="openapi",
                detail=f"{doc.label} {op.method} {op.path}",
                original_name=op.operation_id or f"{op.method} {op.path}",
                plugin="openapi",
            ),
        ))
    log.info("openapi.loaded", spec=doc.label, version=info.version, operations=len(tools),
             skipped=len(skipped), seconds=round(time.perf_counter() - started, 3))
    return tools, session, info


def _make_fetch(client: Any, timeout: float, headers: Mapping[str, str], limits: Limits,
                verify: Any, redirects: RedirectPolicy) -> Any:
    def fetch(url: str) -> bytes:
        import httpx

        own = client is None or client.is_closed
        c = httpx.Client(timeout=timeout, headers=dict(headers), follow_redirects=False,
                         verify=verify) if own else client
        try:
            status, data, _ = _fetch_bytes(c, url, limits, redirects)
        except httpx.HTTPError as exc:
            raise OpenAPIError(f"cannot fetch the referenced document {url}: {exc}") from None
        finally:
            if own:
                c.close()
        if not 200 <= status < 300:
            raise OpenAPIError(f"cannot fetch the referenced document {url}: HTTP {status}")
        return data

    return fetch


def _remember(registry: Any, session: HttpSession) -> None:
    try:
        sessions = _SESSIONS.setdefault(registry, [])
    except TypeError:  # not weak-referenceable: rely on the closer only
        sessions = []
    sessions.append(session)
    add_closer = getattr(registry, "add_closer", None)
    if callable(add_closer):
        add_closer(session.close)
    else:  # an older kernel: close when the registry is garbage-collected
        weakref.finalize(registry, session.close)


_BUILD_OPTIONS = frozenset(
    {"base_url", "auth", "include", "exclude", "use_spec_servers", "server_variables",
     "allow_remote_refs", "strict", "max_response_bytes", "defer", "is_async", "namespace"}
)

_ALL_OPTIONS = _BUILD_OPTIONS | {"timeout", "headers", "limits", "verify", "replace"}


def _namespace(namespace: str | bool | None, info: SpecInfo) -> str | None:
    if namespace is True:  # the document's title, e.g. "Swagger Petstore" -> Swagger_Petstore
        from toolregistry.plugin import normalize_name

        return normalize_name(info.title)
    return namespace or None


def load_openapi(registry: ToolRegistry, spec: Any, *, namespace: str | bool | None = None,
                 replace: bool = False, **options: Any) -> list[Tool]:
    """Register one tool per operation of the OpenAPI document ``spec`` in ``registry``.

    ``spec``: a file path, an http(s) URL (the document, or a service root where the usual
    paths such as ``/openapi.json`` are tried) or a dict. Options: ``base_url``, ``auth``
    (token, (user, password), {scheme name: credential} or httpx.Auth), ``headers``,
    ``namespace`` (``True``: the document's title), ``include`` / ``exclude`` (glob patterns
    on the tool name, operationId, ``"METHOD /path"`` or ``"tag:<tag>"``), ``timeout``,
    ``use_spec_servers``,
    ``server_variables``, ``allow_remote_refs``, ``strict``, ``limits``,
    ``max_response_bytes``, ``verify``, ``defer``, ``replace``. See docs/openapi.md.
    """
    with operation(registry, "openapi.load", _load_attributes(spec)) as attrs:
        tools, session, info = tools_from_openapi(spec, **options)
        attrs["toolregistry.tools"] = len(tools)
    return _register(registry, tools, session, _namespace(namespace, info), replace)


def _load_attributes(spec: Any) -> dict[str, Any]:
    """What an ``openapi.load`` operation (fetching and converting) says about the document:
    its URL without credentials or query, a file name, or ``dict``."""
    if isinstance(spec, Mapping):
        return {"openapi.spec": "dict"}
    text = str(spec)
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        port = f":{parts.port}" if parts.port else ""
        return {"openapi.spec": f"{parts.scheme}://{parts.hostname}{port}{parts.path}",
                "server.address": parts.hostname or ""}
    return {"openapi.spec": Path(text).name}


async def aload_openapi(registry: ToolRegistry, spec: Any, *,
                        namespace: str | bool | None = None,
                        replace: bool = False, **options: Any) -> list[Tool]:
    """Async twin of :func:`load_openapi`: reading and conversion run in a worker thread, off
    the event loop (the tools are the same: a sync callable and an async twin)."""
    with operation(registry, "openapi.load", _load_attributes(spec)) as attrs:
        tools, session, info = await asyncio.to_thread(tools_from_openapi, spec, **options)
        attrs["toolregistry.tools"] = len(tools)
    return _register(registry, tools, session, _namespace(namespace, info), replace)


def _register(registry: ToolRegistry, tools: list[Tool], session: HttpSession,
              namespace: str | None, replace: bool) -> list[Tool]:
    """Register all of a document's tools, or none (its HTTP session closed on failure)."""
    try:
        registered = registry.register_tools(tools, namespace=namespace, replace=replace)
    except BaseException:
        session.close()
        raise
    _remember(registry, session)
    return registered


def close(registry: Any) -> None:
    """Close the HTTP clients of every document loaded into ``registry`` (also done by
    ``registry.close()``)."""
    for session in _SESSIONS.pop(registry, []):
        session.close()


async def aclose(registry: Any) -> None:
    """Async twin of :func:`close`."""
    for session in _SESSIONS.pop(registry, []):
        await session.aclose()
