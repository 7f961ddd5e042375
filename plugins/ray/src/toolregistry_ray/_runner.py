"""The runners the ``dispatch`` hook hands out: one per Ray-selected tool, sharing the
registry's :class:`RayBackend` (its settings, its hold on the Ray connection, the shipped
functions). A call becomes one Ray task; its outcome comes back through a
``concurrent.futures.Future``; a passed deadline cancels the task."""

from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import hashlib
import threading
from collections.abc import Callable
from typing import Any

from toolregistry.errors import ToolCallError, ToolRejected
from toolregistry.plugin import log
from toolregistry.types import Job, ToolContext

from . import _remote
from ._carry import carried_variables, snapshot
from ._cluster import CONNECTION, import_ray
from ._errors import translate
from ._settings import RaySettings, TaskOptions
from ._ship import Payload, dumps, payload

CONNECTED_KINDS = frozenset({"mcp", "openapi"})
"""Provenance kinds whose tools call through a connection (a session, an HTTP client) held
by this process: their functions close over it and cannot run elsewhere."""

Tool = Any  # toolregistry.Tool (kept loose: attrs class, only read here)


class RayFuture(cf.Future[Any]):
    """A call's future, with the Ray task it became (``ref``, once submitted)."""

    def __init__(self) -> None:
        super().__init__()
        self.ref: Any = None


def ray_choice(tool: Tool) -> bool | dict[str, Any] | None:
    """The tool's own word: ``metadata.extra["ray"]`` (``True``, ``False`` or options)."""
    extra = tool.metadata.extra
    choice = extra.get("ray") if extra else None
    if choice is None or isinstance(choice, (bool, dict)):
        return choice
    raise ToolRejected(f"tool {tool.name!r}: metadata extra['ray'] must be True, False or a "
                       f"dict of Ray task options, not {type(choice).__name__}")


class RayBackend:
    """One registry's use of Ray."""

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self.carried = carried_variables(settings.carry)
        self._lock = threading.Lock()
        self._connected = False
        self._closed = False
        self._remote: Any = None

    # -- selection ---------------------------------------------------------------------
    def selects(self, tool: Tool) -> bool:
        """Whether ``tool``'s calls run on Ray."""
        choice = ray_choice(tool)
        if choice is not None:
            return choice is not False
        s = self.settings
        if not (s.tools or s.namespaces or s.tags):
            return False
        if any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in s.tools):
            return True
        if tool.namespace is not None and tool.namespace in s.namespaces:
            return True
        meta = tool.metadata
        return any(t in meta.custom_tags or t in {str(x) for x in meta.tags} for t in s.tags)

    def task_options(self, tool: Tool) -> dict[str, Any]:
        """The tool's Ray task options: the plugin's, an override's, the tool's own."""
        options = TaskOptions.model_validate(self.settings.model_dump(
            include=set(TaskOptions.model_fields))).ray_options()
        for pattern, override in self.settings.overrides.items():
            if fnmatch.fnmatchcase(tool.name, pattern):
                options.update(override.ray_options())
                break
        choice = ray_choice(tool)
        if isinstance(choice, dict):
            try:
                options.update(TaskOptions.model_validate(choice).ray_options())
            except ValueError as exc:
                raise ToolRejected(f"tool {tool.name!r}: metadata extra['ray']: {exc}") from None
        return options

    def check(self, tool: Tool) -> None:
        """Refuse (at registration) a selected tool that cannot run on Ray."""
        fn = tool.callable if tool.callable is not None else tool.acallable
        if fn is None or tool.provenance.kind in CONNECTED_KINDS:
            raise ToolRejected(f"tool {tool.name!r} cannot run on Ray: tools of MCP, OpenAPI "
                               "and similar sources run where their connection is, and its "
                               "connection lives in this process; leave it out of "
                               "[tool.toolregistry.plugins.ray]")
        self.task_options(tool)
        import_ray(f"running tool {tool.name!r} on Ray")
        try:
            payload(fn, self.settings.ship)
        except Exception as exc:
            text = str(exc)
            hint = ("register the context variables it reads with toolregistry_ray.carry() "
                    "before registering it" if "ContextVar" in text or "context variable" in text
                    else "keep what it closes over picklable (no locks, open files, connections)")
            raise ToolRejected(
                f"tool {tool.name!r} cannot run on Ray: its function cannot be shipped to the "
                f"workers ({type(exc).__name__}: {exc}); {hint}, or leave it out of "
                "[tool.toolregistry.plugins.ray]") from None

    # -- connection --------------------------------------------------------------------
    def connect(self) -> None:
        """Hold the process's Ray connection (starting a local Ray when there is none)."""
        with self._lock:
            if self._connected:
                return
            if self._closed:
                raise ToolCallError("the registry is closed", kind="cancelled")
            CONNECTION.acquire(self.settings)
            self._connected = True

    def close(self) -> None:
        """Let go of Ray (the last registry to let go of a Ray this plugin started stops it)."""
        with self._lock:
            self._closed = True
            connected, self._connected = self._connected, False
        if connected:
            CONNECTION.release()

    def remote(self) -> Any:
        """The remote function every tool task runs (:func:`_remote.run`)."""
        if self._remote is None:
            ray = import_ray("running tools on Ray")
            self._remote = ray.remote(_remote.run)
        return self._remote

    def runner(self, tool: Tool) -> ToolRunner:
        return ToolRunner(self, tool, self.task_options(tool))


class ToolRunner:
    """The :class:`~toolregistry.plugin.Runner` of one tool (made when its plan compiles)."""

    def __init__(self, backend: RayBackend, tool: Tool, options: dict[str, Any]) -> None:
        self.backend = backend
        self.name: str = tool.name
        self.options = options
        self.idempotent: bool = tool.metadata.is_idempotent
        self._lock = threading.Lock()
        self._shipped: dict[int, tuple[Callable[..., Any], str, Any]] = {}
        self._remotes: dict[tuple[Any, ...], Any] = {}

    def submit(self, job: Job) -> cf.Future[Any]:
        future = RayFuture()
        # Here, in (a copy of) the call's context: what of it goes to the worker.
        carried = snapshot(self.backend.carried)
        if self.backend._connected:
            self._start(job, future, carried)
        else:  # ray.init takes seconds: never on the caller's thread
            threading.Thread(target=self._start, args=(job, future, carried), daemon=True,
                             name=f"ray-start-{self.name}").start()
        return future

    def cancel(self, job: Job, future: cf.Future[Any]) -> None:
        ref = getattr(future, "ref", None)
        if ref is None:
            return  # not started yet: _start sees the cancelled future and never starts it
        import ray

        force = self.backend.settings.force_cancel
        ray.cancel(ref, force=force, recursive=True)
        log.debug("ray.cancelled", tool=self.name, call_id=job.call.id, force=force)

    # -- inside ------------------------------------------------------------------------
    def _start(self, job: Job, future: RayFuture, carried: _remote.Carried | None) -> None:
        try:
            if future.cancelled():
                return
            self.backend.connect()
            key, ref = self._ship(job.fn)
            remote = self._remote_for(job)
            args, kwargs = _portable(job)
            try:
                task = remote.remote(key, ref, job.is_async, args, kwargs, carried)
            except Exception as exc:
                raise _unpicklable_argument(job, exc, carried) from None
            future.ref = task
            if future.cancelled():
                self.cancel(job, future)
                return
            task.future().add_done_callback(
                lambda done: _settle(future, done, job, self.idempotent,
                                     self.backend.settings))
        except BaseException as exc:
            _set(future, None, exc if isinstance(exc, Exception) else ToolCallError(
                f"tool {self.name!r} could not start on Ray: {type(exc).__name__}", kind="remote"))

    def _ship(self, fn: Callable[..., Any]) -> tuple[str, Any]:
        """The key and object reference of ``fn``'s payload (put in the object store once)."""
        found = self._shipped.get(id(fn))
        if found is not None and found[0] is fn:
            return found[1], found[2]
        with self._lock:
            found = self._shipped.get(id(fn))
            if found is not None and found[0] is fn:
                return found[1], found[2]
            import ray

            try:
                data: Payload = payload(fn, self.backend.settings.ship)
            except Exception as exc:
                raise ToolCallError(
                    f"tool {self.name!r} cannot run on Ray: its function cannot be shipped to "
                    f"the workers ({type(exc).__name__}: {exc})", kind="execution") from None
            digest = hashlib.blake2b(data if isinstance(data, bytes) else
                                     "\0".join(data).encode(), digest_size=12).hexdigest()
            key = f"{self.name}:{digest}"
            ref = ray.put(data)
            self._shipped[id(fn)] = (fn, key, ref)
            return key, ref

    def _remote_for(self, job: Job) -> Any:
        retry = job.retry
        kind = (self.idempotent, None if retry is None else retry.retry_on)
        remote = self._remotes.get(kind)
        if remote is None:
            settings = self.backend.settings
            remote = self.backend.remote().options(
                name=f"tool:{self.name}",
                max_retries=settings.max_retries if self.idempotent else 0,
                retry_exceptions=list(retry.retry_on) if self.idempotent and retry else False,
                **self.options)
            self._remotes[kind] = remote
        return remote


def _portable(job: Job) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with its ``ToolContext`` replaced by what rebuilds one remotely."""
    def port(value: Any) -> Any:
        if isinstance(value, ToolContext):
            return _remote.ContextSpec(job.tool.name, job.call.id, job.call.arguments,
                                       value.values, job.remaining())
        return value

    return (tuple(port(a) for a in job.args),
            {k: port(v) for k, v in job.kwargs.items()})


def _unpicklable_argument(job: Job, exc: Exception, carried: _remote.Carried | None
                         ) -> ToolCallError:
    """Name the argument (or carried context variable) Ray could not serialize (or say what
    failed)."""
    args, kwargs = _portable(job)
    named = [*((f"argument {i}", a) for i, a in enumerate(args)), *kwargs.items(),
             *((f"the value of the carried context variable {path!r}", value)
               for path, value in (carried.values if carried is not None else ()))]
    for name, value in named:
        try:
            dumps(value)
        except Exception as inner:
            return ToolCallError(
                f"tool {job.tool.name!r} cannot run on Ray: {name} cannot be sent to the "
                f"workers ({type(inner).__name__}: {inner})", kind="execution")
    return ToolCallError(f"tool {job.tool.name!r} could not be submitted to Ray: "
                         f"{type(exc).__name__}: {exc}", kind="remote")


def _set(future: RayFuture, value: Any, error: BaseException | None) -> None:
    if future.done():
        return  # cancelled (the caller was already answered)
    try:
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
    except cf.InvalidStateError:
        pass


def _settle(future: RayFuture, done: cf.Future[Any], job: Job, idempotent: bool,
            settings: RaySettings) -> None:
    if future.done():
        return
    try:
        value = done.result()
    except BaseException as exc:
        _set(future, None, translate(job.tool.name, exc, idempotent=idempotent,
                                     settings=settings))
    else:
        _set(future, value, None)
