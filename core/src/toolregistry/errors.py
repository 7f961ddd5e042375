"""Exceptions raised by toolregistry. Every message names what was wrong and what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    """Base class of every error raised by toolregistry."""


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
    """A tool call failed; ``kind`` says how (one of ``ToolResult.error_kind``'s values).

    A tool may raise it to choose the error kind and the exact message the model reads
    (``raise ToolCallError("HTTP 503 from the service", kind="remote")``).
    """

    def __init__(self, message: str, *, kind: ErrorKind = "execution") -> None:
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


class ConfigError(ToolRegistryError, ValueError):
    """The ``[tool.toolregistry]`` configuration (or an equivalent argument) is invalid."""


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

