"""A served registry in several processes: ``toolregistry serve --workers N``.

The supervisor (this process) reads the configuration, checks the options, binds the socket
and starts ``N`` worker processes with uvicorn's multi-process supervisor. Workers share
nothing but the configuration and the listening socket: each one builds its own registry
from the configuration (:func:`app`, the factory uvicorn imports by name in each worker,
reads where the configuration is from ``$TOOLREGISTRY_MCP_SERVE``) and serves it with the
same authentication, Host / Origin checks, TLS and scoping. Requests are spread over the
workers by the kernel (every worker accepts on the shared socket) or by a load balancer in
front. Stateless requests are complete in themselves; a request of an MCP session is sent on
to the worker that holds the session (:mod:`._affinity`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolregistry.errors import ConfigError
from toolregistry.plugin import log

if TYPE_CHECKING:
    from toolregistry import ToolRegistry

    from ._serve_config import ServeOptions

__all__ = ["WORKER_ENV", "app", "check_workers", "serve_workers", "workers_wanted"]

WORKER_ENV = "TOOLREGISTRY_MCP_SERVE"
# The secret every worker seals requestState with, when the settings name none of their own:
# made by the supervisor, so that a retry reaching another worker is accepted there.
STATE_KEY_ENV = "TOOLREGISTRY_MCP_STATE_KEY"
"""What each worker builds: ``{"config": path or null, "options": {...}}`` as JSON."""

STARTUP_FAILURE = 3  # uvicorn's exit code for a worker that cannot start: no restart


def check_workers(options: ServeOptions) -> None:
    """Refuse, before anything starts, what cannot work across worker processes."""
    n = options.workers
    if n <= 1:
        return
    if options.transport != "streamable-http":
        raise ConfigError(f"serve: workers = {n} needs transport = 'streamable-http' (stdio "
                          "has one client on one pipe: one process serves it)")
    if not options.stateless and not hasattr(socket, "AF_UNIX"):
        raise ConfigError(
            f"serve: workers = {n} with sessions needs unix sockets (the workers send a "
            "session's requests to the one holding it), which this system lacks: set "
            "stateless = true (--stateless)")
    if "event_store" in options.model_fields_set and options.event_store not in ("none", None):
        raise ConfigError(
            f"serve: event-store cannot be used with workers = {n}: resuming a stream needs "
            "the session that wrote it; stateless requests have none, and a session's stream "
            "is not resumed through another worker (remove event-store)")
    for name in ("token_verifier", "event_store"):
        value = getattr(options, name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(
                f"serve: with workers = {n}, {name} must be an import target 'module:attr' "
                f"(each worker imports it), not a {type(value).__name__} object of this process")


def workers_wanted(config: str | Path | None, options: dict[str, Any]) -> int:
    """How many processes ``options`` or the configuration's serve table ask for (invalid
    values count as one here: resolving the options reports them)."""
    value = options.get("workers")
    if value is None:
        from toolregistry import ToolRegistry

        with ToolRegistry(config=config) as bare:
            value = (bare.config.plugin_table("mcp").get("serve") or {}).get("workers", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def serve_workers(config: str | Path | None = None, **options: Any) -> None:
    """Serve the registry of ``config`` (a pyproject.toml; default: ``$TOOLREGISTRY_CONFIG``
    or the nearest one) in ``options["workers"]`` processes (or the configuration's
    ``workers``), each building the registry from the configuration; blocks until the
    supervisor is stopped (SIGINT / SIGTERM stop every worker first).

    ``options`` are :class:`~toolregistry_mcp.ServeOptions` fields over the configuration's
    ``[tool.toolregistry.plugins.mcp.serve]`` table, as JSON-like values (they reach the
    workers through the environment): objects such as a ``token_verifier`` are named by
    import target. A worker that dies is replaced; one that cannot start (a broken
    configuration) stops them all and raises :class:`~toolregistry.errors.ConfigError`.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from ._affinity import socket_folder
    from ._http import uvicorn_options

    try:
        json.dumps(options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"serve: with workers, options must be JSON-like values (they reach "
                          f"the worker processes through the environment): {exc}") from None
    path, opts = _check(config, options)
    sock = _bind(opts.host, opts.port)
    port = sock.getsockname()[1]
    shared = {"port": port, "transport": "streamable-http"}
    if opts.request_state_key_env is None:
        shared["request_state_key_env"] = STATE_KEY_ENV
    try:
        folder = None if opts.stateless else socket_folder()
    except BaseException:
        sock.close()
        raise
    spec = {"config": path, "options": {**options, **shared}, "sessions": folder}
    uv = uvicorn.Config(f"{__name__}:app", factory=True, host=opts.host, port=port,
                        workers=opts.workers, **uvicorn_options(opts))
    scheme = "https" if opts.tls_cert else "http"
    log.info("mcp.serving", transport="streamable-http", workers=opts.workers,
             url=f"{scheme}://{opts.host}:{port}{opts.path}", auth=opts.auth)
    saved_env = {name: os.environ.get(name) for name in (WORKER_ENV, STATE_KEY_ENV)}
    saved_signals = {sig: signal.getsignal(sig) for sig in _signals()}
    os.environ[WORKER_ENV] = json.dumps(spec)
    os.environ[STATE_KEY_ENV] = secrets.token_urlsafe(32)
    try:
        supervisor = Multiprocess(uv, sockets=[sock])
        supervisor.run()
    finally:
        sock.close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    failed = [p.pid for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        raise ConfigError(f"serve: worker process {failed[0]} could not start (its error is "
                          "above); every worker was stopped")


def _check(config: str | Path | None, options: dict[str, Any]) -> tuple[str | None, ServeOptions]:
    """The configuration's path and the resolved options, checked as far as possible without
    building the registry: the options, what workers cannot do, the bind, the tokens (read),
    TLS files."""
    from toolregistry import ToolRegistry

    from ._http import http_app
    from ._serve import server_for

    bare = ToolRegistry(config=config)  # the configuration only: its sources load in workers
    try:
        path = None if bare.config.path is None else str(bare.config.path)
        opts = _resolved(bare, options)
        check_workers(opts)
        if opts.transport != "streamable-http":
            raise ConfigError("serve: worker processes serve streamable HTTP only "
                              "(transport = 'streamable-http')")
        http_app(server_for(bare, opts), opts)  # bind rules, tokens, OAuth settings
    finally:
        bare.close()
    if opts.tls_cert is not None:
        import ssl

        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(opts.tls_cert, opts.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"serve: TLS certificate {opts.tls_cert!r} / key "
                              f"{opts.tls_key!r} cannot be used: {exc}") from None
    return path, opts


def _resolved(registry: ToolRegistry, options: dict[str, Any]) -> ServeOptions:
    from ._serve import _options

    rest = dict(options)
    return _options(registry, rest.pop("transport", None), rest)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket the workers share (bound here, so that a busy port is an error
    before any worker starts)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"serve: cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


def _signals() -> list[signal.Signals]:
    names = ("SIGINT", "SIGTERM", "SIGBREAK", "SIGHUP", "SIGQUIT", "SIGTTIN", "SIGTTOU",
             "SIGUSR1", "SIGUSR2", "SIGWINCH")
    return [getattr(signal, n) for n in names if hasattr(signal, n)]


def app() -> Any:
    """The ASGI application of one worker (uvicorn's factory, called in each worker): the
    registry of the configuration ``$TOOLREGISTRY_MCP_SERVE`` names, served as it says. Any
    error ends the worker with uvicorn's start-up failure code, which stops the supervisor
    rather than restarting a worker that would fail the same way."""
    from ._affinity import Affinity, private_listener, session_prefix

    try:
        spec = json.loads(os.environ[WORKER_ENV])
        folder = spec.get("sessions")
        registry, asgi, opts = _build(spec["config"], spec["options"],
                                      session_prefix() if folder else "")
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, KeyError) else \
            f"${WORKER_ENV} is not set (workers are started by toolregistry serve --workers)"
        log.error("mcp.worker_failed", pid=os.getpid(), error=text)
        print(f"toolregistry serve: worker {os.getpid()} cannot start: {text}", file=sys.stderr,
              flush=True)
        sys.exit(STARTUP_FAILURE)
    from ._heap import frozen_heap, own_process
    from ._http import uvicorn_options

    own_process()  # a worker process started to serve: its heap is the server's

    inner = asgi.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            async with inner(app), contextlib.AsyncExitStack() as stack:
                if folder:  # sessions: this worker's own socket, for the others to forward to
                    await stack.enter_async_context(
                        private_listener(asgi, folder, uvicorn_options(opts)))
                with frozen_heap():
                    yield
        finally:
            await registry.aclose()  # its MCP children, pools, connections

    asgi.router.lifespan_context = lifespan
    log.info("mcp.worker_ready", pid=os.getpid(), tools=len(registry))
    return Affinity(asgi, folder) if folder else asgi


def _build(config: str | None, options: dict[str, Any], prefix: str
           ) -> tuple[ToolRegistry, Any, ServeOptions]:
    """Build the registry and its application (in a thread of its own: the worker's event
    loop is already running, and loading sources may want a loop of its own)."""
    import concurrent.futures

    from toolregistry import ToolRegistry

    from ._http import http_app
    from ._serve import server_for

    def build() -> tuple[ToolRegistry, Any, ServeOptions]:
        registry = ToolRegistry.from_config(config)
        try:
            opts = _resolved(registry, options)
            return registry, http_app(server_for(registry, opts), opts,
                                      session_prefix=prefix), opts
        except BaseException:
            registry.close()
            raise

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mcp-worker-build") as ex:
        return ex.submit(build).result()
