"""What the model reads when a call fails on Ray: the tool's own exception with the last
frames of its remote traceback, or what went wrong with Ray, in words, naming the tool."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
import re

from toolregistry.errors import ToolCallError

from ._remote import FunctionLoadError
from ._settings import RaySettings


@functools.cache
def _infrastructure() -> tuple[str, ...]:
    """Where Ray's and this plugin's own code lives (their frames are not the tool's)."""
    import ray

    return (os.path.dirname(ray.__file__) + os.sep, os.path.dirname(__file__) + os.sep)


def short_traceback(text: str, frames: int) -> str:
    """The last ``frames`` frames of a traceback's text, without Ray's own frames."""
    if frames <= 0:
        return ""
    lines = text.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    mine = [i for i in starts if not any(f'"{d}' in lines[i] for d in _infrastructure())]
    if not mine:
        return ""
    end = next((i for i, line in enumerate(lines) if i > mine[-1] and not line.startswith(" ")),
               len(lines))
    body = lines[mine[max(0, len(mine) - frames)]:end]
    return "\n".join(line for line in body if line.strip() and set(line.strip()) != {"^"})


def translate(name: str, exc: BaseException, *, idempotent: bool,
              settings: RaySettings) -> BaseException:
    """The exception the registry answers with for ``exc``, raised by a Ray task of ``name``."""
    from ray import exceptions as rx

    if isinstance(exc, (rx.TaskCancelledError, cf.CancelledError)):
        return ToolCallError(f"tool {name!r}: its Ray task was cancelled", kind="cancelled")
    if isinstance(exc, rx.RayTaskError):
        cause = exc.cause
        if isinstance(cause, FunctionLoadError):
            return ToolCallError(
                f"tool {name!r} could not be loaded on the Ray worker: {cause}. Make its module "
                "importable there (install it, or a runtime_env with py_modules / "
                "working_dir), or set ship = 'value'", kind="execution")
        if isinstance(cause, ToolCallError):
            return cause
        if isinstance(cause, rx.RayError):
            return translate(name, cause, idempotent=idempotent, settings=settings)
        text = f"tool {name!r} failed: {type(cause).__name__}: {cause}"
        # A RayTaskError that also is the cause's type reads its attributes from the cause:
        # its text is the remote traceback, after a "ray::name() (pid=N, ip=A)" line.
        remote = str(exc)
        frames = short_traceback(remote, settings.traceback_frames)
        if frames:
            where = re.search(r"\(pid=(\d+), ip=([^)\s]+)\)", remote)
            at = f" in pid {where[1]} on {where[2]}" if where else ""
            text += f"\nRemote traceback (most recent call last{at}):\n{frames}"
        return ToolCallError(text, kind="execution")
    retried = (f"after {settings.max_retries} retries" if idempotent and settings.max_retries
               else "not retried: the tool is not marked idempotent" if not idempotent
               else "not retried (max_retries = 0)")
    if isinstance(exc, rx.OutOfMemoryError):
        what = "the Ray worker running it was killed for using too much memory"
    elif isinstance(exc, rx.WorkerCrashedError):
        what = "the Ray worker process running it died"
    elif isinstance(exc, rx.NodeDiedError):
        what = "the Ray node running it died"
    elif isinstance(exc, (rx.ObjectStoreFullError, rx.OutOfDiskError)):
        return ToolCallError(
            f"tool {name!r}: its arguments or result are too large for Ray's object store "
            f"({type(exc).__name__}); return less data, or give the cluster more object "
            "store memory", kind="remote")
    elif isinstance(exc, rx.ObjectLostError):
        what = "its result was lost with the node that held it"
    elif isinstance(exc, rx.RuntimeEnvSetupError):
        return ToolCallError(f"tool {name!r}: the Ray runtime_env of its task could not be set "
                             f"up: {_first_line(exc)}", kind="remote")
    elif isinstance(exc, rx.TaskUnschedulableError):
        return ToolCallError(f"tool {name!r}: no Ray node can run its task (resources asked: "
                             f"see [tool.toolregistry.plugins.ray]): {_first_line(exc)}",
                             kind="remote")
    elif isinstance(exc, rx.RayError):
        return ToolCallError(f"tool {name!r} failed on Ray: {type(exc).__name__}: "
                             f"{_first_line(exc)}", kind="remote")
    else:
        return exc
    return ToolCallError(f"tool {name!r} did not finish: {what} ({type(exc).__name__}); "
                         f"{retried}", kind="remote")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
