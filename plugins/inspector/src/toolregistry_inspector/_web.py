"""The inspector's web app (Starlette): HTML rendered on the server with Jinja2, a little
plain JavaScript for the live log, every asset packaged. ``create_app(registry)``.

Security, on every request: the token, ``Host`` and ``Origin`` checks of ``_guard``. Actions
(POST) also need the page's CSRF token and are refused in read-only mode.

The browser's session lives in the path (``/s/<session>/tools``), never in a cookie: a
browser sends a host's cookies to every port of it, so any other local server the same browser
visits would receive a cookie, and could replay it. The session value is derived from the
token (the token itself is never the session), and pages are served with
``Referrer-Policy: same-origin``, so the path does not leave the origin either.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from . import _views
from ._guard import Guard
from ._log import format_entry, get_log
from ._pages import LivePages
from ._reads import durations, get_entry, read_log

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from toolregistry import ToolRegistry


PAGE_SIZE = 100
TEXT_PAGE_CHARS = 4000
LOG_PAGE = 200
STATS_CALLS = 100_000
LIVE_INTERVAL = 0.5
"""Seconds between two looks at the log and the registry for an open page's event stream."""
FOLLOW = 500
"""The most calls an event stream (or ``/api/log``) sends per look: the next ones after the
last it sent, in order."""
STREAM_SECONDS = 300.0
"""How long one event stream lasts (the browser reconnects, from the last call it got)."""
MAX_FORM_BYTES = 1 << 20


def _within(request: Request, path: str) -> str:
    """``path`` of the app, under the root (the session) the request came in on."""
    return str(request.scope.get("root_path", "")) + path


class _Extensions:
    """The other plugins the UI works with, when they are loaded in the registry (the
    inspector never needs them): held calls through the kernel's ``registry.approvals`` and
    discovery through the kernel's ``toolregistry.tool_discovery``. Reviewed changes go
    through the registry (``pending_changes``, ``accept_change``, ``keep_change``)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._discovery: Any = None
        self._discovery_version = -1

    def loaded(self, name: str) -> bool:
        record = self.registry.plugins.records.get(name)
        return record is not None and record.status == "loaded"

    def approvals(self) -> Any:
        """The registry's pending approvals (the kernel's ``registry.approvals``); ``None``
        when no loaded plugin holds calls for approval."""
        approvals = self.registry.approvals
        return approvals if approvals.available else None

    def discovery(self, version: int) -> Any:
        if not self.loaded("discovery"):
            return None
        if self._discovery is None or self._discovery_version != version:
            from toolregistry.tool_discovery import ToolDiscoveryTool

            self._discovery = ToolDiscoveryTool(self.registry)
            self._discovery_version = version
        return self._discovery


def create_app(registry: ToolRegistry, *, token: str | None = None, read_only: bool = False,
               allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
               token_counter: Callable[[str], int] | None = None) -> Starlette:
    """The inspector's ASGI app over ``registry`` (serve it with any ASGI server, or use
    :func:`serve`). ``token``: the secret every request must carry (default: a random one,
    ``app.state.token``). ``read_only``: no calls, approvals or changes from the UI."""
    import jinja2
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.responses import (
        HTMLResponse,
        JSONResponse,
        RedirectResponse,
        StreamingResponse,
    )
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ValueError("the inspector's token must be a string of at least 8 characters")
    secret = token or secrets.token_urlsafe(24)
    count = token_counter or _views.estimate_tokens
    env = jinja2.Environment(loader=jinja2.PackageLoader("toolregistry_inspector", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = lambda t: time.strftime("%H:%M:%S", time.localtime(t)) + \
        f".{int(math.modf(t)[0] * 1000):03d}"
    env.filters["ms"] = lambda s: f"{s * 1000:.1f}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False,
                                                        default=repr)
    env.filters["short_json"] = lambda v: json.dumps(v, ensure_ascii=False, default=repr)
    ext = _Extensions(registry)
    state: dict[str, Any] = {"calls": 0}
    plugin_state = registry.plugin_state("inspector")  # "changes": counted by on_change

    def render(request: Request, template: str, status: int = 200, **ctx: Any) -> Response:
        html = env.get_template(template).render(
            request=request, csrf=request.scope["state"]["csrf"], read_only=read_only,
            base=request.scope.get("root_path", ""),
            registry=registry, page=template.split(".", maxsplit=1)[0],
            **ctx)
        return HTMLResponse(html, status_code=status, headers={
            "cache-control": "no-store", "x-frame-options": "DENY",
            "content-security-policy": "default-src 'self'; img-src 'self' data:; "
                                       "media-src 'self' data:; frame-ancestors 'none'",
            "referrer-policy": "same-origin"})

    async def form_of(request: Request) -> dict[str, str]:
        # The UI's forms are urlencoded (no uploads): parsed here, with a size limit.
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise _Refused(413, f"a form of more than {MAX_FORM_BYTES} bytes is refused")
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise _Refused(415, "actions take an application/x-www-form-urlencoded form")
        values = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(values.get("csrf", "").encode(),
                                   request.scope["state"]["csrf"].encode()):
            raise _Refused(403, "the form's CSRF token is missing or wrong: reload the page")
        if read_only:
            raise _Refused(403, "this inspector is read-only (toolregistry inspect --read-only)")
        return values

    async def home(request: Request) -> Response:
        return RedirectResponse(_within(request, "/tools"), status_code=303)

    async def tools(request: Request) -> Response:
        q = request.query_params
        try:
            page = max(int(q.get("page", "1")), 1)
        except ValueError:
            page = 1
        selected = _views.select_tools(registry, q=q.get("q", ""),
                                       namespace=q.get("namespace", ""),
                                       kind=q.get("kind", ""), flag=q.get("flag", ""))
        pages = max(math.ceil(len(selected) / PAGE_SIZE), 1)
        page = min(page, pages)
        rows = [_views.tool_row(registry, t)
                for t in selected[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]]
        everything = registry.get_tools(include_disabled=True)
        namespaces = sorted({t.namespace or "" for t in everything} - {""})
        kinds = sorted({t.provenance.kind for t in everything})
        query = {k: v for k, v in q.items() if k != "page" and v}
        return render(request, "tools.html", rows=rows, total=len(selected),
                      all_tools=len(everything), page_no=page, pages=pages,
                      namespaces=namespaces, kinds=kinds, query=query,
                      qs=lambda n: urlencode({**query, "page": n}))

    async def tool_page(request: Request, result: Any = None, status: int = 200,
                        **extra: Any) -> Response:
        name = request.path_params["name"]
        tool = registry.get_tool(name)
        if tool is None:
            return render(request, "missing.html", status=404, name=name)
        views = await run_in_threadpool(_views.tool_formats, registry, name, count)
        return render(request, "tool.html", status=status, tool=tool,
                      row=_views.tool_row(registry, tool), formats=views,
                      fields=_views.form_fields(tool.parameters),
                      api_formats=registry.formats.names("messages"),
                      recent=await _recent(name), newest=await _newest(), result=result,
                      tags=sorted(str(getattr(t, "value", t)) for t in tool.metadata.tags)
                      + sorted(tool.metadata.custom_tags),
                      disabled_reason=registry.disabled_reason(name), **extra)

    async def _recent(name: str) -> list[Any]:
        log = get_log(registry)
        if log is None:
            return []
        return list(reversed(await _read(log, tool=name, limit=10)))

    async def _newest() -> int:
        """The newest call's ``seq`` as a page is made: its event stream starts after it, so
        a call that ends before the stream connects is not missed."""
        log = get_log(registry)
        newest = await _read(log, limit=1) if log is not None else []
        return newest[-1].seq if newest else 0

    async def _read(log: Any, **filters: Any) -> list[Any]:
        try:
            return await run_in_threadpool(lambda: read_log(log, **filters))
        except (FileNotFoundError, ValueError) as exc:
            raise _Refused(503, f"the execution log cannot be read: {exc}") from None

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        tool = registry.get_tool(name)
        if tool is None:
            return render(request, "missing.html", status=404, name=name)
        values = await form_of(request)
        api_format = values.get("api_format") or "openai-chat"
        raw = values.get("arguments_json", "").strip()
        try:
            if raw:
                arguments = json.loads(raw)
                if not isinstance(arguments, dict):
                    raise ValueError("the arguments must be a JSON object")
            else:
                arguments = _views.read_form(_views.form_fields(tool.parameters), values)
        except ValueError as exc:
            return await tool_page(request, status=400, form_error=str(exc), form=values)
        state["calls"] += 1
        call_id = f"inspector-{state['calls']}"
        result = await pages.run_call(name, arguments, call_id)
        if result is None:
            return await tool_page(request, status=200, form=values,
                                   form_error=f"call {call_id} was cancelled in the inspector")
        log = get_log(registry)
        if log is not None:
            await run_in_threadpool(log.flush)  # the call is in the file the page reads
        call = {"id": call_id, "name": name, "arguments": arguments}
        try:
            messages: Any = registry.build_tool_call_messages([call], [result],
                                                              api_format=api_format)
        except Exception as exc:
            messages = f"{type(exc).__name__}: {exc}"
        return await tool_page(request, result={
            "call_id": call_id, "arguments": arguments, "outcome": result.outcome,
            "text": result.text, "duration": result.duration, "api_format": api_format,
            "images": [_image_url(image) for image in result.images],
            "messages": messages, "metadata": result.metadata}, form=values)

    async def formats(request: Request) -> Response:
        include_deferred = request.query_params.get("deferred", "1") != "0"
        names = registry.formats.names("schemas")
        chosen = request.query_params.get("format") or names[0]
        if chosen not in names:
            chosen = names[0]
        totals = await run_in_threadpool(_views.format_totals, registry, count,
                                         include_deferred)
        biggest = await run_in_threadpool(_views.largest, registry, chosen, count, 50,
                                          include_deferred)
        return render(request, "formats.html", totals=totals, biggest=biggest, chosen=chosen,
                      names=names, include_deferred=include_deferred,
                      estimated=token_counter is None)

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        try:
            k = min(max(int(request.query_params.get("k", "10")), 1), 100)
        except ValueError:
            k = 10
        finder = ext.discovery(plugin_state.get("changes", 0))
        hits: list[dict[str, Any]] = []
        error = None
        if finder is None:
            error = ("discovery search needs the discovery plugin: "
                     "pip install toolregistry-discovery")
        elif q:
            hits = await run_in_threadpool(finder.discover, q, k, True)
        return render(request, "search.html", q=q, k=k, hits=hits, error=error)

    def _log_filters(request: Request) -> dict[str, Any]:
        q = request.query_params
        return {"tool": q.get("tool") or None, "outcome": q.get("outcome") or None}

    def _window(request: Request) -> dict[str, float]:
        """``since`` / ``until`` of the query (durations back from now: ``10m``, ``2h``)."""
        from ._cli import ago

        q = request.query_params
        return {key: ago(q[key], key) for key in ("since", "until") if q.get(key)}

    async def log_page(request: Request) -> Response:
        log = get_log(registry)
        q = request.query_params
        filters = _log_filters(request)
        error = None
        try:
            window = _window(request)
            before = int(q["before"]) if q.get("before") else None
        except ValueError as exc:
            error, window, before = str(exc), {}, None
        rows = await _read(log, limit=LOG_PAGE + 1, before=before, **filters, **window) \
            if log else []
        entries = list(reversed(rows[-LOG_PAGE:]))
        kept = {k: v for k, v in q.items() if k != "before" and v}
        older = (f"{_within(request, '/log')}?"
                 f"{urlencode({**kept, 'before': entries[-1].seq})}"
                 if len(rows) > LOG_PAGE else None)
        return render(request, "log.html", status=400 if error else 200, entries=entries,
                      log_on=log is not None,
                      db=None if log is None else (log.db or log.store),
                      since=None if log is None else log.since,
                      filters={k: q.get(k, "") for k in ("tool", "outcome", "since", "until")},
                      last=max((e.seq for e in entries), default=0), error=error,
                      live=before is None and "until" not in window, older=older,
                      newest=f"{_within(request, '/log')}?{urlencode(kept)}")

    async def stats_page(request: Request) -> Response:
        log = get_log(registry)
        error = None
        try:
            window = _window(request)
        except ValueError as exc:
            error, window = str(exc), {}
        try:
            calls = await run_in_threadpool(functools.partial(
                durations, log, limit=STATS_CALLS, **window)) if log else []
        except ValueError as exc:
            raise _Refused(503, f"the execution log cannot be read: {exc}") from None
        return render(request, "stats.html", status=400 if error else 200,
                      rows=_views.latency_table(calls), error=error, log_on=log is not None,
                      counted=len(calls), limit=STATS_CALLS,
                      since=request.query_params.get("since", ""))

    async def log_api(request: Request) -> Response:
        log = get_log(registry)
        if log is None:
            return JSONResponse({"error": "the execution log is off"}, status_code=404)
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            return JSONResponse({"error": "after must be an integer"}, status_code=400)
        try:
            entries = await run_in_threadpool(lambda: read_log(
                log, after=after, limit=FOLLOW, oldest=True, **_log_filters(request)))
        except (FileNotFoundError, ValueError) as exc:
            return JSONResponse({"error": f"the execution log cannot be read: {exc}"},
                                status_code=503)
        return JSONResponse({"entries": [{**e.to_dict(), "line": format_entry(e)}
                                         for e in entries]},
                            headers={"cache-control": "no-store"})

    async def call_page(request: Request) -> Response:
        log = get_log(registry)
        seq = request.path_params["seq"]
        try:
            entry = None if log is None else await run_in_threadpool(get_entry, log, seq)
        except (FileNotFoundError, ValueError) as exc:
            raise _Refused(503, f"the execution log cannot be read: {exc}") from None
        if entry is None:
            raise _Refused(404, f"no call {seq} in the execution log (it may be too old)")
        parts = entry.result or []
        text = "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
        pages = max(math.ceil(len(text) / TEXT_PAGE_CHARS), 1)
        try:
            page = min(max(int(request.query_params.get("page", "1")), 1), pages)
        except ValueError:
            page = 1
        return render(request, "call.html", entry=entry, raw=_raw(entry.to_dict()),
                      text=text[(page - 1) * TEXT_PAGE_CHARS: page * TEXT_PAGE_CHARS],
                      text_page=page, text_pages=pages)

    def _page_state() -> tuple[Any, ...]:
        """What the tools, approvals and changes pages show changes with this."""
        queue = ext.approvals()
        held = () if queue is None else tuple(a.id for a in queue.list())
        return plugin_state.get("changes", 0), held

    async def events(request: Request) -> Response:
        """Server-sent events for an open page: ``call`` (a logged call, as JSON, newer than
        ``after`` or the ``Last-Event-ID`` the browser sends back) and ``page`` (the tools,
        the reviewed changes or the held calls changed)."""
        log = get_log(registry)
        filters = _log_filters(request)
        start = request.headers.get("last-event-id") or request.query_params.get("after")
        try:
            last = int(start) if start else None
        except ValueError:
            return JSONResponse({"error": "after must be an integer"}, status_code=400)
        closing: threading.Event = request.app.state.closing

        async def stream() -> Any:
            nonlocal last
            yield "retry: 2000\n\n"
            if log is not None and last is None:
                newest = await _read(log, limit=1)
                last = newest[-1].seq if newest else 0
            seen = await run_in_threadpool(_page_state)
            # unknown: the first look always says what runs, so a page made before its
            # stream connected learns of the calls that ended meanwhile
            running = ""
            ends = time.monotonic() + STREAM_SECONDS
            while time.monotonic() < ends and not closing.is_set():
                batch: list[Any] = []
                if log is not None:
                    try:
                        batch = await run_in_threadpool(functools.partial(
                            read_log, log, after=last, limit=FOLLOW, oldest=True, **filters))
                    except (FileNotFoundError, ValueError):
                        batch = []
                    for e in batch:
                        data = json.dumps({**e.to_dict(), "result": None}, default=repr)
                        yield f"event: call\nid: {e.seq}\ndata: {data}\n\n"
                        last = e.seq
                event, running = await run_in_threadpool(pages.running_event, running)
                if event is not None:
                    yield event
                now = await run_in_threadpool(_page_state)
                if now != seen:
                    seen = now
                    yield "event: page\ndata: {}\n\n"
                if len(batch) < FOLLOW:  # else more calls are waiting: read on at once
                    await asyncio.sleep(LIVE_INTERVAL)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={
            "cache-control": "no-store", "x-accel-buffering": "no"})

    async def approvals(request: Request, status: int = 200, **extra: Any) -> Response:
        queue = ext.approvals()
        pending = [] if queue is None else queue.list()
        return render(request, "approvals.html", status=status, has_queue=queue is not None,
                      pending=pending, **extra)

    async def decide(request: Request) -> Response:
        values = await form_of(request)
        queue = ext.approvals()
        if queue is None:
            raise _Refused(404, "approvals need a plugin that holds calls for approval: pip "
                                "install toolregistry-policy")
        approval_id = request.path_params["id"]
        action = request.path_params["action"]
        if action not in ("approve", "deny"):
            raise _Refused(404, f"no action {action!r}: approve or deny")
        try:
            if action == "approve":
                edited = values.get("arguments", "").strip()
                arguments = json.loads(edited) if edited else None
                if arguments is not None and not isinstance(arguments, dict):
                    raise ValueError("the edited arguments must be a JSON object")
                await run_in_threadpool(lambda: queue.decide(
                    approval_id, "approve", by="inspector", arguments=arguments))
            else:
                await run_in_threadpool(lambda: queue.decide(
                    approval_id, "deny", by="inspector",
                    note=values.get("reason") or "denied in the inspector"))
        except (LookupError, ValueError, TypeError) as exc:
            return await approvals(request, status=400, error=f"{approval_id}: {exc}")
        return RedirectResponse(_within(request, "/approvals"), status_code=303)

    async def changes(request: Request, status: int = 200, **extra: Any) -> Response:
        found = await run_in_threadpool(_views.pending_changes, registry)
        return render(request, "changes.html", status=status, changes=found, **extra)

    async def review(request: Request) -> Response:
        values = await form_of(request)
        name = request.path_params["name"]
        action = request.path_params["action"]
        if action not in ("accept", "keep"):
            raise _Refused(404, f"no action {action!r}: accept or keep")
        decide = registry.accept_change if action == "accept" else registry.keep_change
        try:
            await run_in_threadpool(decide, name, values.get("hash", ""))
        except Exception as exc:
            return await changes(request, status=400,
                                 error=f"{name}: {type(exc).__name__}: {exc}")
        return RedirectResponse(_within(request, "/changes"), status_code=303)

    pages = LivePages(registry, render, _read, form_of, _Refused)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _Refused)
        return render(request, "error.html", status=exc.status, message=exc.message)

    import importlib.resources

    static = StaticFiles(directory=str(importlib.resources.files("toolregistry_inspector")
                                       / "static"))
    routes = [
        Route("/", home),
        Route("/tools", tools),
        Route("/tools/{name:path}/call", call_tool, methods=["POST"]),
        Route("/tools/{name:path}", tool_page),
        Route("/formats", formats),
        Route("/search", search),
        Route("/log", log_page),
        Route("/stats", stats_page),
        Route("/api/log", log_api),
        Route("/api/events", events),
        Route("/calls/{seq:int}", call_page),
        Route("/approvals", approvals),
        Route("/approvals/{id}/{action:str}", decide, methods=["POST"]),
        Route("/changes", changes),
        Route("/changes/{name:path}/{action:str}", review, methods=["POST"]),
        *pages.routes(),
        Mount("/static", app=static, name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={_Refused: refused}, middleware=[
        Middleware(Guard, token=secret, allowed_hosts=tuple(allowed_hosts),
                   allowed_origins=tuple(allowed_origins))])
    app.state.token = secret
    app.state.closing = threading.Event()  # set on shutdown: the event streams end
    app.state.read_only = read_only
    return app


def _image_url(image: Any) -> dict[str, Any]:
    """An image of a result for an ``<img>``: its URL, or why it cannot be shown."""
    try:
        return {"url": image.as_url(), "media_type": image.media_type}
    except OSError as exc:
        return {"url": None, "media_type": image.media_type, "error": str(exc)}


def _raw(value: Any) -> Any:
    """``value`` for the raw JSON view: ``data:`` URLs shortened to their size."""
    if isinstance(value, dict):
        return {k: _raw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_raw(v) for v in value]
    if isinstance(value, str) and value.startswith("data:") and len(value) > 200:
        return f"{value[:40]}… ({len(value)} chars)"
    return value


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
