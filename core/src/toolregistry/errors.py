"""Exceptions raised by toolregistry, and the one a tool raises to choose its error result.
Every message names what was wrong and what to do. Which API raises what, and what is returned
as an error result instead, is docs/errors.md.

Every error of the kernel and of the first-party plugins derives from ``ToolRegistryError``
(each also keeps the standard base it has always had, so ``except ValueError`` still works)::

    ToolRegistryError
    ├── ToolRegistrationError (ValueError)
    │   ├── ToolNameCollisionError
    │   └── ToolRejected
    ├── ToolNotFoundError (KeyError)
    ├── ToolCallError
    │   └── ToolTimeoutError (TimeoutError)
    ├── ConfigError (ValueError)
    ├── PluginError
    ├── MissingPluginError (ImportError)
    ├── CallParseError (ValueError)           toolregistry._calls, a call that cannot be read
    ├── FormatConflict (ValueError)           toolregistry.formats, a format name taken twice
    ├── ApprovalError (LookupError)           toolregistry_policy
    └── SpoolError                            toolregistry_spool

``ToolCancelled`` is a ``BaseException`` on purpose (raised inside a cancelled tool's thread).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import ValidationError

    from .types import ErrorKind

__all__ = [
    "ConfigError",
    "MissingPluginError",
    "PluginError",
    "ToolCallError",
    "ToolCancelled",
    "ToolNameCollisionError",
    "ToolNotFoundError",
    "ToolRegistrationError",
    "ToolRegistryError",
    "ToolRejected",
    "ToolTimeoutError",
]


class ToolRegistryError(Exception):
    """Base class of the registry's own errors.

    Mistakes in how an API is called (an argument of the wrong type, an unknown ``api_format``,
    results that do not belong to the calls) are the standard ``TypeError`` / ``ValueError``;
    what a model sends wrong is never raised, it becomes an error result (docs/errors.md).
    """


class ToolRegistrationError(ToolRegistryError, ValueError):
    """A tool could not be built or registered (bad signature, bad schema, bad name)."""


class ToolNameCollisionError(ToolRegistrationError):
    """A tool name is already taken; pass ``replace=True`` or a namespace."""


class ToolRejected(ToolRegistrationError):
    """Raised by a ``register`` hook implementation to refuse a tool, with a reason."""


class ToolNotFoundError(ToolRegistryError, KeyError):
    """No tool of that name is registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ToolCallError(ToolRegistryError):
    """A tool call failed; ``kind`` says how (one of ``ToolResult.error_kind``'s values: any
    other is a ``ValueError`` here, when the error is made).

    A tool may raise it to choose the error kind and the exact message the model reads
    (``raise ToolCallError("HTTP 503 from the service", kind="remote")``).
    """

    def __init__(self, message: str, *, kind: ErrorKind = "execution") -> None:
        if kind not in _error_kinds():  # it becomes ToolResult.error_kind, a closed set
            raise ValueError(f"ToolCallError kind {kind!r} is not an error kind; use one of "
                             f"{', '.join(_error_kinds())}")
        super().__init__(message)
        self.kind: ErrorKind = kind


class ToolTimeoutError(ToolCallError, TimeoutError):
    """A tool call ran past its deadline (its result has ``error_kind="timeout"``).

    The kernel raises it where a deadline passes (waiting for a worker, an exclusive tool's
    lock, an async tool); a runner that executes calls elsewhere raises it too. Without a
    message (``deadline_passed`` is true) the model reads the kernel's standard text naming
    the tool and its limit; with one, a tool reports a timeout of its own in its own words.
    """

    def __init__(self, message: str | None = None, *, kind: ErrorKind = "timeout") -> None:
        super().__init__(message or "the call ran past its deadline", kind=kind)
        self.deadline_passed = message is None


class ToolCancelled(BaseException):
    """Raised inside a sync tool's thread when its call timed out or was cancelled.

    A ``BaseException`` so that ``except Exception`` in tool code does not swallow it. Tools
    may catch it to clean up, and should then re-raise it.
    """


@functools.cache
def _error_kinds() -> tuple[str, ...]:
    from typing import get_args

    from .types import ErrorKind

    return get_args(ErrorKind)


class ConfigError(ToolRegistryError, ValueError):
    """The ``[tool.toolregistry]`` configuration (or an equivalent argument) is invalid."""

    @classmethod
    def from_validation(cls, where: str, exc: ValidationError, *, values: bool = True,
                        spelling: Callable[[str], str] | None = None) -> ConfigError:
        """One ``ConfigError`` for a pydantic ``ValidationError`` of a settings model: every
        problem as ``option: message (got value)``, prefixed by ``where`` (the table or the
        call, e.g. ``[tool.toolregistry.plugins.spool] (pyproject.toml)``). ``values=False``
        leaves the values out (options that may hold secrets); ``spelling`` turns a field
        name back into the user's spelling (``lambda n: n.replace("_", "-")`` for TOML)."""
        spell = spelling or (lambda name: name)
        problems = "; ".join(
            f"{spell('.'.join(str(p) for p in err['loc'])) or '(table)'}: {err['msg']}"
            + (f" (got {err.get('input')!r})" if values and "input" in err else "")
            for err in exc.errors())
        return cls(f"{where}: invalid option: {problems}")


class PluginError(ToolRegistryError):
    """A plugin failed to load or broke the hook contract."""


class MissingPluginError(ToolRegistryError, ImportError):
    """A feature needs a plugin that is not installed (or is blocked by configuration)."""

    def __init__(self, feature: str, plugin: str, distribution: str, *, blocked: bool = False) -> None:
        if blocked:
            msg = (
                f"{feature} needs the {plugin!r} plugin, which is blocked by configuration "
                f"(TOOLREGISTRY_DISABLE_PLUGINS / TOOLREGISTRY_LOAD_PLUGINS or "
                f"[tool.toolregistry] disable-plugins / load-plugins): unblock {plugin!r}"
            )
        else:
            msg = f"{feature} needs the {plugin!r} plugin: install {distribution}"
        super().__init__(msg, name=distribution)
        self.feature = feature
        self.plugin = plugin
        self.distribution = distribution
        self.blocked = blocked

