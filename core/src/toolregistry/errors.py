"""Exceptions raised by toolregistry. Every message names what was wrong and what to do."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "MissingPluginError",
    "PluginError",
    "ToolCallError",
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
    """A tool call failed; ``kind`` says how (see ``ToolResult.error_kind``)."""

    def __init__(self, message: str, *, kind: str = "execution") -> None:
        super().__init__(message)
        self.kind = kind


class ToolTimeoutError(ToolRegistryError, TimeoutError):
    """A tool call ran past its timeout."""


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
